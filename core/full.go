package core

// fullComponent is full-attention KV: a device slot per atom, a path lock
// from the node to the root, eviction from the leaves.
type fullComponent struct{}

func (fullComponent) kind() Component { return Full }

func (fullComponent) startMatch(hostOK bool) validator { return validator{hostOK: hostOK} }

func (fullComponent) accept(t *Tree, v validator, i int32) (validator, bool) {
	n := &t.nodes[i]
	return v, n.dev[Full] != nil || (v.hostOK && n.host[Full] != nil)
}

// finishMatch sums the host-only Full lengths between the best node and
// the last device node: what a load-back would bring to the device.
func (fullComponent) finishMatch(t *Tree, r MatchResult, w matchWalk) MatchResult {
	sum := 0
	for i := w.best; i != rootIdx && i != w.bestDevice; i = t.nodes[i].parent {
		sum += len(t.nodes[i].host[Full])
	}
	r.HostHitLen = sum
	return r
}

func (fullComponent) refreshLRU(*Tree, lruPhase, int32) {}

func (fullComponent) overlap(_ *Tree, _ *insertState, _ int32, p int) int { return p }

func (fullComponent) recoverAfterUnevict(*Tree, *insertState, int32, int) {}

func (fullComponent) commit(*Tree, *insertState, int32, bool) {}

// split divides both tiers' values; both halves keep the child's lock
// counts (device and host), since every lock that covered the child
// covers both.
func (fullComponent) split(t *Tree, prefix, child int32, at int) {
	p, c := &t.nodes[prefix], &t.nodes[child]
	if v := c.dev[Full]; v != nil {
		// The halves keep their places in the value's storage.
		p.dev[Full], c.dev[Full] = v[:at:at], v[at:]
		p.fullAt = c.fullAt
		if c.fullAt.slab != 0 {
			c.fullAt.off += int32(at)
		}
	}
	if v := c.host[Full]; v != nil {
		p.host[Full], c.host[Full] = v[:at:at], v[at:]
	}
	// The device lock is a path lock: it covers both halves. A host lock
	// covers the copy as it was when taken, so the prefix, a part of that
	// copy, gets the child's count too; the release walks up from the
	// anchor over the receipt's span (see hostFullSpan).
	p.lock[Full], p.hostLock[Full] = c.lock[Full], c.hostLock[Full]
}

// acquire increments every node from i up to (excluding) the root. A node
// whose count goes 0→1 and holds a value moves from evictable to
// protected, and leaves the D-leaf set.
func (fullComponent) acquire(t *Tree, i int32, r *Receipt) {
	for ; i != rootIdx; i = t.nodes[i].parent {
		n := &t.nodes[i]
		n.lock[Full]++
		if n.lock[Full] == 1 && n.dev[Full] != nil {
			l := len(n.dev[Full])
			t.evictable[Full] -= l
			t.protected[Full] += l
			r.Delta += l
			t.refreshLeaf(i)
		}
	}
}

func (fullComponent) canRelease(t *Tree, i int32, _ *Receipt) bool {
	for ; i != rootIdx; i = t.nodes[i].parent {
		if t.nodes[i].lock[Full] == 0 {
			return false
		}
	}
	return true
}

func (fullComponent) release(t *Tree, i int32, _ *Receipt) {
	for ; i != rootIdx; i = t.nodes[i].parent {
		n := &t.nodes[i]
		n.lock[Full]--
		if n.lock[Full] == 0 {
			if n.dev[Full] != nil {
				l := len(n.dev[Full])
				t.protected[Full] -= l
				t.evictable[Full] += l
			}
			t.refreshLeaf(i)
		}
	}
}

// evict frees the Full value of the chosen layer(s). The device value is
// taken last by callers that cascade (auxiliary frees need the Full slots).
func (fullComponent) evict(t *Tree, i int32, l layer, acts []Action) ([]Action, int) {
	n := &t.nodes[i]
	freed := 0
	if l&layerDevice != 0 && n.dev[Full] != nil {
		v := n.dev[Full]
		t.account(i, Full, -len(v))
		slots := t.scratch(len(v))
		copy(slots, v)
		t.freeFull(i)
		acts = append(acts, Action{Kind: ActionFreeDeviceSlots, Component: Full, Node: t.handle(i), Slots: slots})
		freed += len(v)
	}
	if l&layerHost != 0 && n.host[Full] != nil {
		v := n.host[Full]
		n.host[Full] = nil
		t.hostUsed[Full] -= len(v)
		acts = append(acts, Action{Kind: ActionFreeHostSlots, Component: Full, Node: t.handle(i), Slots: v})
		if l == layerHost {
			freed += len(v)
		}
	}
	return acts, freed
}

func (fullComponent) priority(leaf bool) int {
	if leaf {
		return 0
	}
	return 2
}
