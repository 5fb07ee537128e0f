package core

import "fmt"

// EvictHost frees at least want host slots of component c when that many
// are evictable, appending the frees to dst, and returns what it freed.
//
// Under write-back, host copies of data that is also on the device go
// first, sparing evictable device leaves until a second pass: for Full
// oldest first, for SWA and Mamba in their device list's order. Then Full
// deletes host-only leaves in the tree's policy order, each victim's
// parent becoming a candidate once it is a host leaf, while SWA and Mamba
// walk their host list from the least recent unlocked member: a host-only
// leaf goes whole, any other node loses that component's host value (and
// those ranked below it). Locked and load-back-pinned nodes are never
// touched.
// Errors: ErrBroken, ErrInvalidArgument (no host tier, a component the
// tree lacks, want < 0).
func (t *Tree) EvictHost(c Component, want int, dst []Action) ([]Action, int, error) {
	if err := t.checkUsable(); err != nil {
		return dst, 0, err
	}
	if !t.cfg.hostTier {
		return dst, 0, fmt.Errorf("%w: the tree has no host tier", ErrInvalidArgument)
	}
	if !t.cfg.set.Has(c) {
		return dst, 0, fmt.Errorf("%w: component %s is not in the tree's set %s", ErrInvalidArgument, c, t.cfg.set)
	}
	if want < 0 {
		return dst, 0, fmt.Errorf("%w: cannot evict %d host slots", ErrInvalidArgument, want)
	}
	t.arena = t.arena[:0]
	start := t.hostUsed[c]
	freed := func() int { return start - t.hostUsed[c] }
	if c != Full {
		return t.evictHostAux(c, want, dst, freed)
	}
	if t.cfg.writeBack {
		for pass := 0; pass < 2 && freed() < want; pass++ {
			dst = t.reclaimCoexisting(want, pass == 0, dst, freed)
		}
	}
	heap := t.buildHeap(t.walk.hostHeap, t.hset)
	for len(heap) > 0 && freed() < want {
		var e heapEntry
		e, heap = heapPop(heap)
		n := &t.nodes[e.idx]
		if !n.live || n.gen != e.gen() || n.hpos < 0 {
			continue
		}
		parent := n.parent
		dst = t.deleteHostLeaf(e.idx, dst)
		if p := &t.nodes[parent]; p.live && p.hpos >= 0 {
			heap = heapPush(heap, t.heapEntry(parent))
		}
	}
	t.walk.hostHeap = heap[:0]
	return dst, freed(), nil
}

// reclaimCoexisting frees host Full copies of nodes that also hold Full on
// the device (write-back keeps such copies only as long as there is room).
func (t *Tree) reclaimCoexisting(want int, spareLeaves bool, dst []Action, freed func() int) []Action {
	kept := t.coexist[:0]
	for k, r := range t.coexist {
		if freed() >= want {
			kept = append(kept, t.coexist[k:]...)
			break
		}
		if !t.valid(r) {
			continue
		}
		n := &t.nodes[r.idx]
		if n.dev[Full] == nil || n.host[Full] == nil || n.wtPending != 0 {
			n.coexist = false
			continue
		}
		if n.pin != nilIdx || n.hostLock[Full] != 0 || (spareLeaves && n.dpos >= 0) {
			kept = append(kept, r)
			continue
		}
		t.recordRemoved(r.idx, MediumCPU)
		dst, _ = fullComponent{}.evict(t, r.idx, layerHost, dst)
		n.coexist = false
	}
	t.coexist = kept
	return dst
}

// deleteHostLeaf removes H-leaf i with all its data, then cleans up the
// ancestors it leaves without data.
func (t *Tree) deleteHostLeaf(i int32, dst []Action) []Action {
	t.recordRemoved(i, MediumCPU)
	dst, _ = t.releaseAll(i, dst)
	parent := t.nodes[i].parent
	t.removeLeaf(i)
	t.refreshLeaf(parent)
	return t.cleanupTombstones(parent, dst)
}

// evictHostAux is EvictHost for SWA and Mamba: their host lists.
func (t *Tree) evictHostAux(c Component, want int, dst []Action, freed func() int) ([]Action, int, error) {
	if t.cfg.writeBack {
		// Host copies of data still on the device go first, least
		// recently used first, evictable device leaves in a second pass.
		for pass := 0; pass < 2 && freed() < want; pass++ {
			for x := t.list(tierDevice, c).tail; x != nilIdx && freed() < want; {
				prev := t.lruLk(x, tierDevice, c).prev
				n := &t.nodes[x]
				if n.host[c] != nil && n.hostLock[c] == 0 && n.pin == nilIdx && n.wtPending == 0 && (pass == 1 || n.dpos < 0) {
					dst, _ = t.byKind[c].evict(t, x, layerHost, dst)
				}
				x = prev
			}
		}
	}
	x := t.lruOldestUnlocked(tierHost, c)
	for x != nilIdx && freed() < want {
		next := t.lruNewerUnlocked(x, tierHost, c)
		var nextGen uint32
		if next != nilIdx {
			nextGen = t.nodes[next].gen
		}
		if n := &t.nodes[x]; n.pin == nilIdx {
			if n.hpos >= 0 {
				dst = t.deleteHostLeaf(x, dst)
			} else {
				var err error
				if dst, err = t.cascade(x, c, layerHost, dst); err != nil {
					return dst, freed(), err
				}
			}
		}
		if next != nilIdx && (!t.nodes[next].live || t.nodes[next].gen != nextGen || !t.inLRU(next, tierHost, c)) {
			next = t.lruOldestUnlocked(tierHost, c)
		}
		x = next
	}
	return dst, freed(), nil
}
