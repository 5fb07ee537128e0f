package core

import (
	"fmt"
	"slices"
)

// The host tier (HiCache) keeps copies of device KV in host memory. Under
// write-through a node is copied once its hit count reaches the
// threshold, ancestors first (a backed-up node always has a backed-up
// parent); under write-back a node is copied only when it is evicted from
// the device. An evicted node whose copy is on the host stays in the tree
// ("host-only"): matches see it (MatchResult.HostHitLen) and a load-back
// brings it back. The tree decides; the host copies bytes and reports the
// host slots it used:
//
//	BackupKV action → BackupSpec → copy → CommitBackup
//	  write-through: MarkWriteThroughPending … FinishWriteThrough (ack)
//	  write-back eviction: … Demote (or DropSubtreeNoHost if the host is full)
//	host-only match → LoadBackPlan → copy → CommitLoadBack … FinishLoadBack
//	host full → EvictHost

// NodeSlots names slots that belong to one node.
type NodeSlots struct {
	Node  NodeID
	Slots []int32
}

// BackupSpec is what to copy from the device to the host for one node.
type BackupSpec struct {
	Node NodeID
	// Full is the node's device Full slots, or nil when already on the
	// host.
	Full []int32
	// SWA lists the SWA data in the window ending at the node that has no
	// host copy yet, root first, each named by its device Full slots (the
	// host translates them).
	SWA []NodeSlots
	// Mamba is the node's device state slot to copy, or -1.
	Mamba int32
}

// Empty reports whether there is nothing to copy.
func (s BackupSpec) Empty() bool { return s.Full == nil && len(s.SWA) == 0 && s.Mamba < 0 }

// BackupCommit reports the host slots a backup used, shaped like its spec.
type BackupCommit struct {
	Full  []int32   // one host slot per BackupSpec.Full slot
	SWA   [][]int32 // host SWA slots per BackupSpec.SWA entry
	Mamba int32     // host state slot, or -1
}

// hostNode resolves a handle for a host-tier operation.
func (t *Tree) hostNode(id NodeID) (int32, error) {
	return t.featureNode(id, t.cfg.hostTier, "the tree has no host tier")
}

// featureNode resolves a non-root handle for an operation of an optional
// feature, refusing it (with off as the reason) when the feature is off.
func (t *Tree) featureNode(id NodeID, on bool, off string) (int32, error) {
	if err := t.checkUsable(); err != nil {
		return nilIdx, err
	}
	if !on {
		return nilIdx, fmt.Errorf("%w: %s", ErrInvalidArgument, off)
	}
	i, err := t.resolve(id)
	if err != nil {
		return nilIdx, err
	}
	if i == rootIdx {
		return nilIdx, fmt.Errorf("%w: the root holds no data", ErrInvalidArgument)
	}
	return i, nil
}

// nodesOf resolves every handle with one.
func nodesOf(nodes []NodeID, one func(NodeID) (int32, error)) ([]int32, error) {
	idx := make([]int32, len(nodes))
	for k, id := range nodes {
		i, err := one(id)
		if err != nil {
			return nil, err
		}
		idx[k] = i
	}
	return idx, nil
}

// BackupSpec returns what backing node up to the host would copy.
// Errors: ErrBroken, ErrInvalidArgument (no host tier, the root, a node
// with no device data), ErrStaleNode.
func (t *Tree) BackupSpec(node NodeID) (BackupSpec, error) {
	i, err := t.hostNode(node)
	if err != nil {
		return BackupSpec{Mamba: -1}, err
	}
	return t.backupSpec(i)
}

func (t *Tree) backupSpec(i int32) (BackupSpec, error) {
	n := &t.nodes[i]
	s := BackupSpec{Node: t.handle(i), Mamba: -1}
	if n.dev[Full] == nil {
		return s, fmt.Errorf("%w: %v has no device data to back up", ErrInvalidArgument, s.Node)
	}
	if n.host[Full] == nil {
		s.Full = n.dev[Full]
	}
	if t.byKind[SWA] != nil {
		var run []NodeSlots
		seen := 0
		for j := i; j != rootIdx && seen < t.cfg.window; j = t.nodes[j].parent {
			m := &t.nodes[j]
			if m.dev[SWA] != nil && m.host[SWA] == nil {
				run = append(run, NodeSlots{t.handle(j), m.dev[SWA]})
			}
			seen += t.keyAtoms(m)
		}
		slices.Reverse(run)
		s.SWA = run
	}
	if v := n.dev[Mamba]; v != nil && n.host[Mamba] == nil {
		s.Mamba = v[0]
	}
	return s, nil
}

// CommitBackup records the host copies of a backup whose spec
// BackupSpec(node) returned (the tree must not have changed in between).
// Under write-through the node's parent must already be backed up.
// Errors: ErrBroken, ErrStaleNode, ErrInvalidArgument (shape differs from
// the spec, a negative slot, an ancestor not backed up).
func (t *Tree) CommitBackup(node NodeID, c BackupCommit) error {
	i, err := t.hostNode(node)
	if err != nil {
		return err
	}
	s, err := t.backupSpec(i)
	if err != nil {
		return err
	}
	if err := sameShape("full", s.Full, c.Full); err != nil {
		return err
	}
	if len(c.SWA) != len(s.SWA) {
		return fmt.Errorf("%w: %d SWA host runs for %d in the spec", ErrInvalidArgument, len(c.SWA), len(s.SWA))
	}
	for k := range s.SWA {
		if err := sameShape("swa", s.SWA[k].Slots, c.SWA[k]); err != nil {
			return err
		}
	}
	if (s.Mamba >= 0) != (c.Mamba >= 0) {
		return fmt.Errorf("%w: mamba host slot %d for spec slot %d", ErrInvalidArgument, c.Mamba, s.Mamba)
	}
	n := &t.nodes[i]
	if c.Full != nil && !t.cfg.writeBack && n.parent != rootIdx && !t.nodes[n.parent].backuped() {
		return fmt.Errorf("%w: %v: back up its ancestors first (write-through)", ErrInvalidArgument, node)
	}
	if c.Full != nil {
		n.host[Full] = slices.Clone(c.Full)
		t.hostUsed[Full] += len(c.Full)
		t.addCoexist(i)
		if t.cfg.writeBack {
			// Write-back copies have no acknowledgement step: they are
			// stored once committed (write-through reports at its ack).
			t.recordStored(i, MediumCPU, "")
		}
	}
	for k, e := range s.SWA {
		j, _ := t.resolve(e.Node)
		t.nodes[j].host[SWA] = slices.Clone(c.SWA[k])
		t.hostUsed[SWA] += len(c.SWA[k])
	}
	if c.Mamba >= 0 {
		n.host[Mamba] = t.oneSlot(c.Mamba)
		t.hostUsed[Mamba]++
	}
	return nil
}

func sameShape(what string, spec, host []int32) error {
	if (spec == nil) != (host == nil) || len(spec) != len(host) {
		return fmt.Errorf("%w: %d %s host slots for %d in the spec", ErrInvalidArgument, len(host), what, len(spec))
	}
	for k, s := range host {
		if s < 0 {
			return fmt.Errorf("%w: %s host slot %d at %d is negative", ErrInvalidArgument, what, s, k)
		}
	}
	return nil
}

// addCoexist lists node i as holding Full on both tiers (write-back
// reclaims such host copies first).
// Only write-back uses the list. Entries of freed or changed nodes are
// dropped lazily; the list is compacted when it outgrows the arena.
func (t *Tree) addCoexist(i int32) {
	n := &t.nodes[i]
	if !t.cfg.writeBack || n.coexist || !t.coexisting(i) {
		return
	}
	n.coexist = true
	t.coexist = append(t.coexist, t.ref(i))
	if len(t.coexist) >= 2*len(t.nodes)+64 {
		kept := t.coexist[:0]
		for _, r := range t.coexist {
			if !t.valid(r) {
				continue
			}
			if t.coexisting(r.idx) {
				kept = append(kept, r)
			} else {
				t.nodes[r.idx].coexist = false
			}
		}
		t.coexist = kept
	}
}

// coexisting reports whether node i holds settled Full data on both tiers.
func (t *Tree) coexisting(i int32) bool {
	n := &t.nodes[i]
	return n.dev[Full] != nil && n.host[Full] != nil && n.wtPending == 0
}

// MarkWriteThroughPending marks backed-up nodes as being written to the
// host under ack (> 0) and returns them ancestors first. A node split
// while pending yields an ActionReplaceWriteThroughOnSplit.
// Errors: ErrBroken, ErrStaleNode, ErrInvalidArgument (ack ≤ 0, a node
// not backed up or already pending).
func (t *Tree) MarkWriteThroughPending(nodes []NodeID, ack int64) ([]NodeID, error) {
	if ack <= 0 {
		return nil, fmt.Errorf("%w: write-through ack %d must be positive", ErrInvalidArgument, ack)
	}
	idx, err := nodesOf(nodes, t.hostNode)
	if err != nil {
		return nil, err
	}
	if t.cfg.writeBack {
		return nil, fmt.Errorf("%w: write-back backups are complete when committed; there is nothing to mark pending", ErrInvalidArgument)
	}
	for k, i := range idx {
		if n := &t.nodes[i]; !n.backuped() || n.wtPending != 0 {
			return nil, fmt.Errorf("%w: %v is not backed up or already pending", ErrInvalidArgument, nodes[k])
		}
	}
	for _, i := range idx {
		t.nodes[i].wtPending = ack
	}
	slices.SortStableFunc(idx, func(a, b int32) int { return t.depth(a) - t.depth(b) })
	out := make([]NodeID, len(idx))
	for k, i := range idx {
		out[k] = t.handle(i)
	}
	return out, nil
}

// FinishWriteThrough acknowledges a write-through: it clears the pending
// marks of ack and records BlockStored(CPU) events for the nodes.
// Errors: ErrBroken, ErrStaleNode, ErrInvalidArgument (ack ≤ 0, which
// MarkWriteThroughPending never issues; a node not pending under ack).
func (t *Tree) FinishWriteThrough(nodes []NodeID, ack int64) error {
	if ack <= 0 {
		// 0 is the "not pending" mark: it would match every idle node.
		return fmt.Errorf("%w: write-through ack %d must be positive", ErrInvalidArgument, ack)
	}
	idx, err := nodesOf(nodes, t.hostNode)
	if err != nil {
		return err
	}
	for k, i := range idx {
		if t.nodes[i].wtPending != ack {
			return fmt.Errorf("%w: %v is not pending under ack %d", ErrInvalidArgument, nodes[k], ack)
		}
	}
	for _, i := range idx {
		t.nodes[i].wtPending = 0
		t.addCoexist(i)
		t.recordStored(i, MediumCPU, "")
	}
	return nil
}

func (t *Tree) depth(i int32) int {
	d := 0
	for ; i != rootIdx; i = t.nodes[i].parent {
		d++
	}
	return d
}

// Demote frees a backed-up evictable device leaf's device data and keeps
// its host copy, so it stays matchable from the host. A node pinned by a
// load-back is left alone (no actions).
// Errors: ErrBroken, ErrStaleNode, ErrInvalidArgument (not an evictable
// device leaf, or not backed up).
func (t *Tree) Demote(node NodeID) ([]Action, error) {
	i, err := t.hostNode(node)
	if err != nil {
		return nil, err
	}
	n := &t.nodes[i]
	if n.pin != nilIdx {
		return nil, nil
	}
	if n.dpos < 0 || !n.backuped() {
		return nil, fmt.Errorf("%w: %v is not a backed-up evictable device leaf", ErrInvalidArgument, node)
	}
	t.arena = t.arena[:0]
	return t.demote(i, nil)
}

func (t *Tree) demote(i int32, acts []Action) ([]Action, error) {
	t.recordRemoved(i, MediumGPU)
	acts, err := t.cascade(i, Full, layerDevice, acts)
	if err != nil {
		return acts, err
	}
	t.refreshLeaf(i)
	t.refreshLeaf(t.nodes[i].parent)
	return acts, nil
}

// evictDeviceLeaf evicts D-leaf i: a backed-up leaf is demoted, an
// unbacked one under write-back yields a BackupKV for the host (which
// then demotes or drops it) without changing the tree, and any other is
// deleted.
func (t *Tree) evictDeviceLeaf(i int32, acts []Action) ([]Action, error) {
	if t.cfg.hostTier {
		if t.nodes[i].backuped() {
			return t.demote(i, acts)
		}
		if t.cfg.writeBack {
			return append(acts, Action{Kind: ActionBackupKV, Node: t.handle(i), Nodes: []NodeID{t.handle(i)}}), nil
		}
	}
	acts, _ = t.deleteDeviceLeaf(i, acts)
	return acts, nil
}

// DropSubtreeNoHost deletes an unbacked evictable device leaf together
// with its host-only descendants, for a write-back eviction whose backup
// failed (the host is full). It declines (false, no change) when the
// leaf is host-locked or a descendant is locked on either tier.
// Errors: ErrBroken, ErrStaleNode, ErrInvalidArgument (not an unbacked,
// non-pending evictable device leaf).
func (t *Tree) DropSubtreeNoHost(node NodeID) (bool, []Action, error) {
	i, err := t.hostNode(node)
	if err != nil {
		return false, nil, err
	}
	n := &t.nodes[i]
	if n.hostLocked() && n.dev[Full] != nil {
		return false, nil, nil // (a host lock also keeps it out of the D-leaf set)
	}
	if n.dpos < 0 || n.backuped() || n.wtPending != 0 {
		return false, nil, fmt.Errorf("%w: %v is not an unbacked evictable device leaf", ErrInvalidArgument, node)
	}
	var desc []int32
	stack := append([]int32(nil), n.children...)
	for len(stack) > 0 {
		j := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		m := &t.nodes[j]
		if m.devLocked() || m.hostLocked() || m.wtPending != 0 || m.dev[Full] != nil {
			return false, nil, nil
		}
		desc = append(desc, j)
		stack = append(stack, m.children...)
	}
	t.arena = t.arena[:0]
	var acts []Action
	// Children come after their parents in desc: delete from the end.
	for k := len(desc) - 1; k >= 0; k-- {
		j := desc[k]
		t.recordRemoved(j, MediumCPU)
		acts, _ = t.releaseAll(j, acts)
		t.removeLeaf(j)
	}
	t.refreshLeaf(i)
	acts, _ = t.deleteDeviceLeaf(i, acts)
	return true, acts, nil
}

// HostLock protects node's host copies from host eviction: Full on the
// node itself (when it has a host copy, or always under write-back), SWA
// over the window above it, Mamba on the node. Load-backs and storage
// reads hold it while they copy. The Full lock keeps covering every part
// of the node's copy when a match or insert later splits the node: the
// new prefix gets the lock too, and HostUnlock releases both.
// Errors: ErrBroken, ErrStaleNode, ErrInvalidArgument (no host tier).
func (t *Tree) HostLock(node NodeID) (Receipt, error) {
	if err := t.checkUsable(); err != nil {
		return Receipt{}, err
	}
	if !t.cfg.hostTier {
		return Receipt{}, fmt.Errorf("%w: the tree has no host tier", ErrInvalidArgument)
	}
	i, err := t.resolve(node)
	if err != nil {
		return Receipt{}, err
	}
	t.receiptSerial++
	r := Receipt{Node: node, Serial: t.receiptSerial, Host: true}
	span := 0
	if i != rootIdx {
		n := &t.nodes[i]
		if n.host[Full] != nil || t.cfg.writeBack {
			n.hostLock[Full]++
			span = t.keyAtoms(n)
		} else {
			r.Skipped = r.Skipped.With(Full)
		}
		if t.byKind[SWA] != nil {
			covered := 0
			for j := i; j != rootIdx && covered < t.cfg.window; j = t.nodes[j].parent {
				m := &t.nodes[j]
				m.hostLock[SWA]++
				t.lruRemove(j, tierHost, SWA)
				covered += t.keyAtoms(m)
				if covered >= t.cfg.window {
					if m.swaHostUUID == 0 {
						t.swaUUIDs++
						m.swaHostUUID = t.swaUUIDs
					}
					r.SWAHostUUID = m.swaHostUUID
				}
				t.refreshLeaf(j)
			}
		}
		if t.byKind[Mamba] != nil {
			n.hostLock[Mamba]++
			t.lruRemove(i, tierHost, Mamba)
		}
		t.refreshLeaf(i)
	}
	t.receipts.add(i, &r).hostSpan = span
	return r, nil
}

// hostFullSpan calls f on the nodes a Full host lock of span atoms taken
// on anchor i covers: i, and then (after splits of the copy) the
// ancestors above it, until span atoms are covered. It reports whether
// the walk covered exactly span atoms.
func (t *Tree) hostFullSpan(i int32, span int, f func(j int32)) bool {
	covered := 0
	for j := i; j != rootIdx && covered < span; j = t.nodes[j].parent {
		f(j)
		covered += t.keyAtoms(&t.nodes[j])
	}
	return covered == span
}

// HostUnlock releases a HostLock receipt.
// Errors: ErrBroken, ErrStaleNode, ErrReceipt.
func (t *Tree) HostUnlock(node NodeID, r Receipt) error {
	i, live, err := t.liveReceipt(node, r)
	if err != nil {
		return err
	}
	if !live.r.Host {
		return fmt.Errorf("%w: receipt %d is a device lock; release it with Unlock", ErrReceipt, r.Serial)
	}
	if i != rootIdx {
		ok := true
		n := &t.nodes[i]
		if !r.Skipped.Has(Full) && !t.hostFullSpan(i, live.hostSpan, func(j int32) {
			if t.nodes[j].hostLock[Full] == 0 {
				ok = false
			}
		}) {
			ok = false
		}
		if t.byKind[Mamba] != nil && n.hostLock[Mamba] == 0 {
			ok = false
		}
		if t.byKind[SWA] != nil && !t.swaSegment(i, r.SWAHostUUID, true, func(j int32) {
			if t.nodes[j].hostLock[SWA] == 0 {
				ok = false
			}
		}) {
			ok = false
		}
		if !ok {
			return t.fail("host receipt %d: a host lock count is already zero on %v", r.Serial, node)
		}
		if t.byKind[Mamba] != nil {
			t.hostUnlockOne(i, Mamba)
		}
		if t.byKind[SWA] != nil {
			t.swaSegment(i, r.SWAHostUUID, true, func(j int32) { t.hostUnlockOne(j, SWA) })
		}
		if !r.Skipped.Has(Full) {
			t.hostFullSpan(i, live.hostSpan, func(j int32) { t.hostUnlockOne(j, Full) })
		}
	}
	t.receipts.remove(r.Serial)
	return nil
}

// hostUnlockOne drops one host lock of c on node i; a host-only value
// left unlocked rejoins the host list.
func (t *Tree) hostUnlockOne(i int32, c Component) {
	n := &t.nodes[i]
	n.hostLock[c]--
	if c != Full && n.hostLock[c] == 0 && n.host[c] != nil && n.dev[c] == nil {
		t.lruFront(i, tierHost, c)
	}
	t.refreshLeaf(i)
}
