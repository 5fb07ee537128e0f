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
	// Host marks a host-tier lock (HostLock), released with HostUnlock.
	Host bool
}

// liveReceipt is the tree's copy of an unreleased receipt: the release
// must present exactly this receipt (node, skip set and stamps included).
type liveReceipt struct {
	idx int32
	r   Receipt
	// swaReleased is set once UnlockSWA dropped the SWA segment (and the
	// Mamba lock) early; the final Unlock must then pass skipSWA.
	swaReleased bool
	// hostSpan is, for a host receipt holding the Full host lock, the
	// anchor's key length in atoms when the lock was taken. A split
	// copies the lock to the new prefix, so the lock covers the anchor and
	// the ancestors above it that together make up that many atoms.
	hostSpan int
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
	if skip.Has(SWA) && t.cfg.set.Has(Mamba) && !skip.Has(Mamba) {
		// SWA eviction would have to drop a Mamba state it cannot touch.
		return Receipt{}, fmt.Errorf("%w: skipping the swa lock requires skipping mamba too", ErrInvalidArgument)
	}
	t.receiptSerial++
	// The components fill the receipt through a pointer; the tree's own
	// scratch receipt keeps it off the heap (a lock per request).
	r := &t.lockReceipt
	*r = Receipt{Node: node, Serial: t.receiptSerial, Skipped: skip}
	if i == rootIdx {
		// Locking the root protects nothing; the receipt still pairs.
		t.receipts.add(i, r)
		return *r, nil
	}
	for _, c := range t.comps {
		if !skip.Has(c.kind()) {
			c.acquire(t, i, r)
		}
	}
	t.refreshLeaf(i)
	t.receipts.add(i, r)
	return *r, nil
}

// Unlock releases the lock a receipt proves. skipSWA must be set exactly
// when UnlockSWA already released the receipt's SWA part early (it is
// ignored by trees without SWA).
// Errors: ErrBroken, ErrStaleNode, ErrReceipt (the receipt was taken on
// another node, was already released, is not from this tree, or skipSWA
// does not match an early release).
func (t *Tree) Unlock(node NodeID, receipt Receipt, skipSWA bool) error {
	// As in Lock: the components read the receipt through a pointer.
	t.lockReceipt = receipt
	r := &t.lockReceipt
	i, live, err := t.liveReceipt(node, *r)
	if err != nil {
		return err
	}
	if r.Host {
		return fmt.Errorf("%w: receipt %d is a host lock; release it with HostUnlock", ErrReceipt, r.Serial)
	}
	hasSWA := t.cfg.set.Has(SWA)
	if hasSWA && skipSWA != live.swaReleased {
		if skipSWA {
			return fmt.Errorf("%w: receipt %d: skipSWA set, but its SWA lock was not released early (UnlockSWA)", ErrReceipt, r.Serial)
		}
		return fmt.Errorf("%w: receipt %d: its SWA lock was released early; unlock with skipSWA", ErrReceipt, r.Serial)
	}
	if i == rootIdx {
		t.receipts.remove(r.Serial)
		return nil
	}
	// Components at or below SWA's priority went with the early release.
	skip := r.Skipped
	if hasSWA && live.swaReleased {
		skip = skip.With(SWA).With(Mamba)
	}
	for k := len(t.comps) - 1; k >= 0; k-- {
		c := t.comps[k]
		if !skip.Has(c.kind()) && !c.canRelease(t, i, r) {
			return t.fail("receipt %d: %s lock count already zero on the path of %v", r.Serial, c.kind(), node)
		}
	}
	for k := len(t.comps) - 1; k >= 0; k-- {
		if c := t.comps[k]; !skip.Has(c.kind()) {
			c.release(t, i, r)
		}
	}
	t.receipts.remove(r.Serial)
	t.refreshLeaf(i)
	return nil
}

// UnlockSWA releases the SWA part of a lock early (and the Mamba part,
// which ranks below it), keeping Full locked: a request whose sequence
// has moved a whole window past its cached prefix no longer reads that
// prefix's SWA KV. Release the rest later with Unlock(..., skipSWA=true).
// A node left as an evictable device leaf loses its SWA value at once;
// the frees are returned.
// Errors: ErrBroken, ErrStaleNode, ErrInvalidArgument (no SWA
// component), ErrReceipt (as Unlock, or the SWA part was skipped or
// already released).
func (t *Tree) UnlockSWA(node NodeID, r Receipt) ([]Action, error) {
	if !t.cfg.set.Has(SWA) {
		return nil, fmt.Errorf("%w: the tree has no swa component", ErrInvalidArgument)
	}
	i, live, err := t.liveReceipt(node, r)
	if err != nil {
		return nil, err
	}
	if r.Host {
		return nil, fmt.Errorf("%w: receipt %d is a host lock", ErrReceipt, r.Serial)
	}
	if live.swaReleased {
		return nil, fmt.Errorf("%w: receipt %d: SWA lock already released early", ErrReceipt, r.Serial)
	}
	if r.Skipped.Has(SWA) {
		return nil, fmt.Errorf("%w: receipt %d did not take the SWA lock", ErrReceipt, r.Serial)
	}
	mamba := t.byKind[Mamba] != nil && !r.Skipped.Has(Mamba)
	if i != rootIdx {
		if !t.byKind[SWA].canRelease(t, i, &r) || (mamba && !t.byKind[Mamba].canRelease(t, i, &r)) {
			return nil, t.fail("receipt %d: swa/mamba lock count already zero on the path of %v", r.Serial, node)
		}
	}
	live.swaReleased = true
	if i == rootIdx {
		return nil, nil
	}
	t.arena = t.arena[:0]
	var acts []Action
	t.swaRelease(i, &r, &acts)
	if mamba {
		t.byKind[Mamba].release(t, i, &r)
	}
	t.refreshLeaf(i)
	return acts, nil
}

// liveReceipt resolves node and checks that r is the live receipt issued
// for it. The record stays the tree's: valid until a receipt is added or
// removed.
func (t *Tree) liveReceipt(node NodeID, r Receipt) (int32, *liveReceipt, error) {
	if err := t.checkUsable(); err != nil {
		return nilIdx, nil, err
	}
	i, err := t.resolve(node)
	if err != nil {
		return nilIdx, nil, err
	}
	if r.Node != node {
		return nilIdx, nil, fmt.Errorf("%w: receipt %d was taken on %v, released on %v", ErrReceipt, r.Serial, r.Node, node)
	}
	live := t.receipts.get(r.Serial)
	if live == nil {
		return nilIdx, nil, fmt.Errorf("%w: receipt %d is not live (already released, or issued before a reset or by another tree)", ErrReceipt, r.Serial)
	}
	if live.idx != i || live.r != r {
		return nilIdx, nil, fmt.Errorf("%w: receipt %d does not match the one issued (%+v)", ErrReceipt, r.Serial, live.r)
	}
	return i, live, nil
}

// LiveReceiptCount returns the number of unreleased receipts.
func (t *Tree) LiveReceiptCount() int { return t.receipts.len() }

// LiveReceipts returns the serials of unreleased receipts in order.
func (t *Tree) LiveReceipts() []uint64 {
	out := make([]uint64, 0, t.receipts.len())
	for k := range t.receipts.recs {
		out = append(out, t.receipts.recs[k].r.Serial)
	}
	slices.Sort(out)
	return out
}
