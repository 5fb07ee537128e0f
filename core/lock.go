package core

import (
	"fmt"
	"slices"
)

// Receipt is the proof of a lock. The release must present the same node
// and the receipt itself; each receipt releases once.
type Receipt struct {
	// Node is the node the lock was taken on.
	Node NodeID
	// Serial identifies the receipt within its tree (never reused, not
	// even across Reset).
	Serial uint64
	// Delta is the Full atoms this lock moved from evictable to protected.
	Delta int
	// SWAUUID is the SWA lock-window boundary stamp (0: reached the root).
	SWAUUID int64
	// SWAHostUUID is the host-side SWA boundary stamp (0: none).
	SWAHostUUID int64
	// Skipped lists the components the lock left untaken.
	Skipped ComponentSet
}

// liveReceipt is the tree's copy of an unreleased receipt: the release
// must present exactly this receipt (node, skip set and stamps included).
type liveReceipt struct {
	idx int32
	r   Receipt
}

// Lock protects node and its path to the root from eviction for every
// component not in skip (Full cannot be skipped). It returns the receipt
// that Unlock needs.
// Errors: ErrBroken, ErrStaleNode, ErrInvalidArgument (skip contains Full
// or a component the tree does not have).
func (t *Tree) Lock(node NodeID, skip ComponentSet) (Receipt, error) {
	if err := t.checkUsable(); err != nil {
		return Receipt{}, err
	}
	i, err := t.resolve(node)
	if err != nil {
		return Receipt{}, err
	}
	if skip.Has(Full) {
		return Receipt{}, fmt.Errorf("%w: the full component lock cannot be skipped", ErrInvalidArgument)
	}
	if skip&^t.cfg.set != 0 {
		return Receipt{}, fmt.Errorf("%w: skip set %s names components the tree lacks (%s)", ErrInvalidArgument, skip, t.cfg.set)
	}
	t.receiptSerial++
	r := Receipt{Node: node, Serial: t.receiptSerial, Skipped: skip}
	if i == rootIdx {
		// Locking the root protects nothing; the receipt still pairs.
		t.receipts[r.Serial] = liveReceipt{i, r}
		return r, nil
	}
	for _, c := range t.comps {
		if !skip.Has(c.kind()) {
			c.acquire(t, i, &r)
		}
	}
	t.refreshLeaf(i)
	t.receipts[r.Serial] = liveReceipt{i, r}
	return r, nil
}

// Unlock releases the lock a receipt proves. skipSWA leaves the SWA part
// (and the components below it) alone after an early SWA release.
// Errors: ErrBroken, ErrStaleNode, ErrReceipt (the receipt was taken on
// another node, was already released, or is not from this tree).
func (t *Tree) Unlock(node NodeID, r Receipt, skipSWA bool) error {
	if err := t.checkUsable(); err != nil {
		return err
	}
	i, err := t.resolve(node)
	if err != nil {
		return err
	}
	if r.Node != node {
		return fmt.Errorf("%w: receipt %d was taken on %v, released on %v", ErrReceipt, r.Serial, r.Node, node)
	}
	live, ok := t.receipts[r.Serial]
	if !ok {
		return fmt.Errorf("%w: receipt %d is not live (already released, or issued before a reset or by another tree)", ErrReceipt, r.Serial)
	}
	if live.idx != i || live.r != r {
		return fmt.Errorf("%w: receipt %d does not match the one issued (%+v)", ErrReceipt, r.Serial, live.r)
	}
	if i == rootIdx {
		delete(t.receipts, r.Serial)
		return nil
	}
	for k := len(t.comps) - 1; k >= 0; k-- {
		c := t.comps[k]
		if r.Skipped.Has(c.kind()) || (skipSWA && c.kind() != Full) {
			continue
		}
		if !c.canRelease(t, i, &r) {
			return t.fail("receipt %d: %s lock count already zero on the path of %v", r.Serial, c.kind(), node)
		}
	}
	for k := len(t.comps) - 1; k >= 0; k-- {
		c := t.comps[k]
		if r.Skipped.Has(c.kind()) || (skipSWA && c.kind() != Full) {
			continue
		}
		c.release(t, i, &r)
	}
	delete(t.receipts, r.Serial)
	t.refreshLeaf(i)
	return nil
}

// LiveReceiptCount returns the number of unreleased receipts.
func (t *Tree) LiveReceiptCount() int { return len(t.receipts) }

// LiveReceipts returns the serials of unreleased receipts in order.
func (t *Tree) LiveReceipts() []uint64 {
	out := make([]uint64, 0, len(t.receipts))
	for s := range t.receipts {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}
