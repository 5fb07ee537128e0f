package core

import (
	"fmt"
	"slices"
)

// LoadBackPlan is what bringing a host-only prefix back to the device
// copies. The host holds HostLock and Lock on the anchor from before the
// plan until after FinishLoadBack.
type LoadBackPlan struct {
	Anchor NodeID
	// Full lists the evicted nodes from the first one below a device node
	// down to the anchor (ancestors first) with their Full host slots.
	Full []NodeSlots
	// SWA lists the nodes in the window ending at the anchor whose SWA
	// data is on the host only (root first) with their SWA host slots.
	SWA []NodeSlots
	// Mamba is the anchor's host state slot to restore, or -1.
	Mamba int32
	// Pinned reports that another load-back holds part of the path: the
	// plan is empty and the caller retries later.
	Pinned bool
}

// Atoms returns the Full atoms the plan loads.
func (p LoadBackPlan) Atoms() int {
	n := 0
	for _, e := range p.Full {
		n += len(e.Slots)
	}
	return n
}

// Empty reports whether there is nothing to load.
func (p LoadBackPlan) Empty() bool { return len(p.Full) == 0 && len(p.SWA) == 0 && p.Mamba < 0 }

// LoadBackCommit reports the device slots a load-back filled, shaped like
// its plan.
type LoadBackCommit struct {
	Full  [][]int32 // device Full slots per LoadBackPlan.Full entry
	SWA   [][]int32 // device SWA slots per LoadBackPlan.SWA entry
	Mamba int32     // device state slot, or -1
}

// LoadBackPlan returns what loading anchor's prefix back to the device
// would copy.
// Errors: ErrBroken, ErrStaleNode, ErrInvalidArgument (no host tier, the
// root, a window node with SWA data on neither tier).
func (t *Tree) LoadBackPlan(anchor NodeID) (LoadBackPlan, error) {
	i, err := t.hostNode(anchor)
	if err != nil {
		return LoadBackPlan{Mamba: -1}, err
	}
	return t.loadBackPlan(i)
}

func (t *Tree) loadBackPlan(i int32) (LoadBackPlan, error) {
	p := LoadBackPlan{Anchor: t.handle(i), Mamba: -1}
	foreign := func(j int32) bool { return t.nodes[j].pin != nilIdx && t.nodes[j].pin != i }
	for j := i; j != rootIdx && t.nodes[j].dev[Full] == nil; j = t.nodes[j].parent {
		if foreign(j) {
			return LoadBackPlan{Anchor: p.Anchor, Mamba: -1, Pinned: true}, nil
		}
		p.Full = append(p.Full, NodeSlots{t.handle(j), t.nodes[j].host[Full]})
	}
	slices.Reverse(p.Full)
	if t.byKind[SWA] != nil {
		seen := 0
		for j := i; j != rootIdx && seen < t.cfg.window; j = t.nodes[j].parent {
			n := &t.nodes[j]
			switch {
			case n.dev[SWA] != nil:
			case n.host[SWA] != nil:
				if foreign(j) {
					return LoadBackPlan{Anchor: p.Anchor, Mamba: -1, Pinned: true}, nil
				}
				p.SWA = append(p.SWA, NodeSlots{t.handle(j), n.host[SWA]})
			default:
				return LoadBackPlan{Mamba: -1}, fmt.Errorf("%w: %v in the SWA window of %v has SWA data on neither tier", ErrInvalidArgument, t.handle(j), p.Anchor)
			}
			seen += t.keyAtoms(n)
		}
		slices.Reverse(p.SWA)
	}
	if n := &t.nodes[i]; n.dev[Mamba] == nil && n.host[Mamba] != nil {
		p.Mamba = n.host[Mamba][0]
	}
	return p, nil
}

// CommitLoadBack records the device copies of a load-back whose plan
// LoadBackPlan(anchor) returned (the tree must not have changed in
// between). Under write-back the loaded nodes are pinned to the anchor
// until FinishLoadBack. The returned actions ask the host to map the
// loaded SWA slots under their nodes' Full slots.
// Errors: ErrBroken, ErrStaleNode, ErrInvalidArgument (shape differs from
// the plan, a negative slot, a pinned plan).
func (t *Tree) CommitLoadBack(anchor NodeID, c LoadBackCommit) ([]Action, error) {
	i, err := t.hostNode(anchor)
	if err != nil {
		return nil, err
	}
	p, err := t.loadBackPlan(i)
	if err != nil {
		return nil, err
	}
	if p.Pinned {
		return nil, fmt.Errorf("%w: %v: another load-back pins part of the path", ErrInvalidArgument, anchor)
	}
	if len(c.Full) != len(p.Full) || len(c.SWA) != len(p.SWA) {
		return nil, fmt.Errorf("%w: %d full and %d SWA runs for a plan of %d and %d", ErrInvalidArgument, len(c.Full), len(c.SWA), len(p.Full), len(p.SWA))
	}
	for k, e := range p.Full {
		if err := sameShape("full", e.Slots, c.Full[k]); err != nil {
			return nil, err
		}
	}
	for k, e := range p.SWA {
		if err := sameShape("swa", e.Slots, c.SWA[k]); err != nil {
			return nil, err
		}
	}
	if (p.Mamba >= 0) != (c.Mamba >= 0) {
		return nil, fmt.Errorf("%w: mamba device slot %d for plan slot %d", ErrInvalidArgument, c.Mamba, p.Mamba)
	}
	pin := t.cfg.writeBack
	for k, e := range p.Full {
		j, _ := t.resolve(e.Node)
		t.setFull(j, c.Full[k])
		t.account(j, Full, len(c.Full[k]))
		if pin {
			t.nodes[j].pin, t.nodes[j].pinGen = i, t.nodes[i].gen
		}
		t.refreshLeaf(j)
		t.refreshLeaf(t.nodes[j].parent)
		t.addCoexist(j)
		t.recordStored(j, MediumGPU, "")
	}
	var acts []Action
	for k, e := range p.SWA {
		j, _ := t.resolve(e.Node)
		t.setSWA(j)
		acts = append(acts, Action{Kind: ActionRebuildFullToSWAMapping, Node: e.Node,
			Slots: t.nodes[j].dev[Full], Incoming: slices.Clone(c.SWA[k])})
	}
	if c.Mamba >= 0 {
		t.setAuxDevice(i, Mamba, t.oneSlot(c.Mamba))
		t.account(i, Mamba, 1)
	}
	if pin && len(p.Full) > 0 {
		t.loadBacks[i] = t.nodes[i].gen
	}
	return acts, nil
}

// FinishLoadBack ends a load-back once its copies are complete: it clears
// the anchor's pins (write-back) along the path.
// Errors: ErrBroken, ErrStaleNode, ErrInvalidArgument.
func (t *Tree) FinishLoadBack(anchor NodeID) error {
	i, err := t.hostNode(anchor)
	if err != nil {
		return err
	}
	for j := i; j != rootIdx; j = t.nodes[j].parent {
		if n := &t.nodes[j]; n.pin == i {
			n.pin = nilIdx
			t.refreshLeaf(j)
			t.refreshLeaf(n.parent)
			t.addCoexist(j)
		}
	}
	delete(t.loadBacks, i)
	return nil
}

// InsertHostResult is the outcome of InsertHost.
type InsertHostResult struct {
	// Node holds the host data: the new host-only node, or the existing
	// node the key ended on when that one has a host copy; zero when none.
	Node NodeID
	// PrefixLen is how many atoms of the key the tree already held below
	// the anchor: the host frees HostSlots[:PrefixLen] itself.
	PrefixLen int
	// Dropped reports that write-through refused a host-only node under a
	// parent that is not backed up (the host frees all the slots).
	Dropped bool
}

// InsertHost adds KV that the host fetched into host memory (e.g. a
// storage prefetch) below anchor: tokens continue anchor's prefix and
// hostSlots holds one host slot per atom. The walk splits like Insert; the
// unmatched rest becomes a host-only node.
// Errors: ErrBroken, ErrStaleNode, ErrInvalidArgument (no host tier, too
// few or negative slots, a namespace differing from the anchor's).
func (t *Tree) InsertHost(anchor NodeID, ns Namespace, tokens []uint32, hostSlots []int32) (InsertHostResult, []Action, error) {
	if err := t.checkUsable(); err != nil {
		return InsertHostResult{}, nil, err
	}
	if !t.cfg.hostTier {
		return InsertHostResult{}, nil, fmt.Errorf("%w: the tree has no host tier", ErrInvalidArgument)
	}
	a, err := t.resolve(anchor)
	if err != nil {
		return InsertHostResult{}, nil, err
	}
	q, L := t.atomsOf(tokens)
	if len(hostSlots) < L {
		return InsertHostResult{}, nil, fmt.Errorf("%w: %d host slots for a key of %d aligned atoms", ErrInvalidArgument, len(hostSlots), L)
	}
	for k, s := range hostSlots[:L] {
		if s < 0 {
			return InsertHostResult{}, nil, fmt.Errorf("%w: host slot %d at atom %d is negative", ErrInvalidArgument, s, k)
		}
	}
	nsID, known := t.nsLookup(&ns)
	if a != rootIdx && (!known || t.nodes[a].ns != nsID) {
		return InsertHostResult{}, nil, fmt.Errorf("%w: namespace differs from the anchor's", ErrInvalidArgument)
	}
	if L == 0 {
		return InsertHostResult{}, nil, nil
	}
	nsID = t.nsIntern(&ns)
	var acts []Action
	wd := t.cfg.width
	node, off := a, 0
	for off < L {
		child := t.lookup(node, nsID, q[off*wd:])
		if child == nilIdx {
			break
		}
		t.touch(child)
		p := t.matchLen(q[off*wd:L*wd], t.nodes[child].key)
		if p < t.keyAtoms(&t.nodes[child]) {
			prefix, more, err := t.split(child, p, acts)
			acts = more
			if err != nil {
				return InsertHostResult{}, acts, err
			}
			child = prefix
		}
		node, off = child, off+p
	}
	res := InsertHostResult{PrefixLen: off}
	if off == L {
		if t.nodes[node].host[Full] != nil {
			res.Node = t.handle(node)
		}
		return res, acts, nil
	}
	if !t.cfg.writeBack && node != rootIdx && !t.nodes[node].backuped() {
		res.Dropped = true
		return res, acts, nil
	}
	leaf := t.alloc(nsID, nil)
	t.setKey(leaf, q[off*wd:L*wd])
	if node != rootIdx {
		t.nodes[leaf].priority = t.nodes[node].priority
	}
	t.nodes[leaf].host[Full] = slices.Clone(hostSlots[off:L])
	t.hostUsed[Full] += L - off
	t.link(node, leaf)
	t.refreshLeaf(leaf)
	t.refreshLeaf(node)
	t.recordStored(leaf, MediumCPU, "")
	res.Node = t.handle(leaf)
	return res, acts, nil
}
