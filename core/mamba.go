package core

import "fmt"

// mambaComponent is a recurrent (Mamba / linear-attention) state: one pool
// slot per node where the state after that node's last atom was saved,
// normally at leaves. A prefix is usable only up to a node with a state,
// so the match stops at the deepest one; states elsewhere on a path are
// dropped first (internal nodes are evicted before leaves by the list,
// and a per-path cap bounds how many a path keeps).
type mambaComponent struct{}

func (mambaComponent) kind() Component { return Mamba }

func (mambaComponent) startMatch(hostOK bool) validator { return validator{hostOK: hostOK} }

func (mambaComponent) accept(t *Tree, v validator, i int32) (validator, bool) {
	n := &t.nodes[i]
	return v, n.dev[Mamba] != nil || (v.hostOK && n.host[Mamba] != nil)
}

// finishMatch reports the chunk-aligned branching length, the host hit
// (one state) and the state slot the request should fork (copy on write).
func (mambaComponent) finishMatch(t *Tree, r MatchResult, w matchWalk) MatchResult {
	g := t.cfg.mambaGrid
	if a := w.fullHit / g * g; a > r.DeviceLen+r.HostHitLen {
		r.MambaBranchingSeqlen = a
	}
	n := &t.nodes[w.best]
	if w.best != rootIdx && n.dev[Mamba] == nil && n.host[Mamba] != nil {
		r.MambaHostHitLen = max(r.MambaHostHitLen, 1)
	}
	if v := t.nodes[w.bestDevice].dev[Mamba]; v != nil {
		r.MambaSlot = v[0]
	}
	return r
}

// refreshLRU moves only the matched node's state to the front: states
// above it are superseded for this request.
func (mambaComponent) refreshLRU(t *Tree, phase lruPhase, i int32) {
	if phase == phaseMatchEnd && i != rootIdx && t.nodes[i].dev[Mamba] != nil {
		t.lruFront(i, tierDevice, Mamba)
	}
}

func (mambaComponent) overlap(_ *Tree, _ *insertState, _ int32, p int) int { return p }

func (mambaComponent) recoverAfterUnevict(*Tree, *insertState, int32, int) {}

// commit saves the request's state at the target. A target that already
// has one keeps it (MambaExist: the caller frees its own slot).
func (mambaComponent) commit(t *Tree, s *insertState, target int32, newLeaf bool) {
	if t.nodes[target].dev[Mamba] != nil {
		t.lruFront(target, tierDevice, Mamba)
		t.touch(target)
		s.res.MambaExist = true
		return
	}
	t.setAuxDevice(target, Mamba, t.oneSlot(s.mambaSlot))
	t.account(target, Mamba, 1)
	if !newLeaf {
		t.touch(target)
	}
	if t.cfg.pathCap > 0 {
		s.pending = append(s.pending, Action{Kind: ActionMambaEvictExcessPathStates, Node: t.handle(target)})
	}
}

// split leaves the state with the child: it describes the sequence up to
// the child's last atom, which the prefix does not reach.
func (mambaComponent) split(*Tree, int32, int32, int) {}

// acquire locks the node's own state (a single node, not a path).
func (mambaComponent) acquire(t *Tree, i int32, _ *Receipt) {
	n := &t.nodes[i]
	n.lock[Mamba]++
	if n.lock[Mamba] == 1 && n.dev[Mamba] != nil {
		t.evictable[Mamba]--
		t.protected[Mamba]++
	}
}

func (mambaComponent) canRelease(t *Tree, i int32, _ *Receipt) bool {
	return t.nodes[i].lock[Mamba] > 0
}

func (mambaComponent) release(t *Tree, i int32, _ *Receipt) {
	n := &t.nodes[i]
	n.lock[Mamba]--
	if n.lock[Mamba] == 0 {
		if n.dev[Mamba] != nil {
			t.protected[Mamba]--
			t.evictable[Mamba]++
		}
		t.refreshLeaf(i)
	}
}

func (mambaComponent) evict(t *Tree, i int32, l layer, acts []Action) ([]Action, int) {
	n := &t.nodes[i]
	freed := 0
	if l&layerDevice != 0 && n.dev[Mamba] != nil {
		v := n.dev[Mamba]
		t.account(i, Mamba, -1)
		t.setAuxDevice(i, Mamba, nil)
		acts = append(acts, Action{Kind: ActionFreeDeviceSlots, Component: Mamba, Node: t.handle(i), Slots: v})
		freed++
	}
	if l&layerHost != 0 && n.host[Mamba] != nil {
		v := n.host[Mamba]
		n.host[Mamba] = nil
		t.hostUsed[Mamba] -= len(v)
		t.lruRemove(i, tierHost, Mamba)
		acts = append(acts, Action{Kind: ActionFreeHostSlots, Component: Mamba, Node: t.handle(i), Slots: v})
		if l == layerHost {
			freed++
		}
	}
	return acts, freed
}

func (mambaComponent) priority(bool) int { return 0 }

// EvictExcessPathStates enforces the per-path cap on Mamba states
// (Config.MambaMaxPathStates) on the path from tail to the root, as an
// insert's ActionMambaEvictExcessPathStates asks. The shallowest states
// go first; the tail's own, locked ones, and those on branching nodes or
// evictable leaves stay. It returns the frees for the host.
// Errors: ErrBroken, ErrStaleNode, ErrInvalidArgument (no Mamba component).
func (t *Tree) EvictExcessPathStates(tail NodeID) ([]Action, error) {
	if err := t.checkUsable(); err != nil {
		return nil, err
	}
	i, err := t.resolve(tail)
	if err != nil {
		return nil, err
	}
	if !t.cfg.set.Has(Mamba) {
		return nil, fmt.Errorf("%w: the tree has no mamba component", ErrInvalidArgument)
	}
	if t.cfg.pathCap <= 0 {
		return nil, nil
	}
	holders := t.path[:0]
	for j := i; j != rootIdx; j = t.nodes[j].parent {
		if t.nodes[j].dev[Mamba] != nil {
			holders = append(holders, j)
		}
	}
	t.path = holders[:0]
	excess := len(holders) - t.cfg.pathCap
	t.arena = t.arena[:0]
	var acts []Action
	for k := len(holders) - 1; k >= 0 && excess > 0; k-- {
		j := holders[k]
		if j == i {
			break
		}
		n := &t.nodes[j]
		if n.lock[Mamba] > 0 || len(n.children) != 1 || n.dpos >= 0 {
			continue
		}
		if acts, err = t.cascade(j, Mamba, layerDevice, acts); err != nil {
			return acts, err
		}
		excess--
	}
	return acts, nil
}
