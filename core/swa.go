package core

import "slices"

// swaComponent is sliding-window attention KV. A layer with window W only
// ever reads the last W positions, so the tree keeps SWA slots only where
// a request could still need them; elsewhere the node is an SWA
// "tombstone" (Full data without SWA data).
//
// The SWA pool is indexed through the Full pool: the host maps each Full
// slot to an SWA slot. An SWA device value is therefore expressed in the
// node's Full slots (the tree stores the very same slice), and freeing it
// names those Full slots for the host to translate.
type swaComponent struct{}

// unbounded starts the window validator "already satisfied": SWA data
// contiguous from the root is always usable.
const unbounded = 1 << 62

func (swaComponent) kind() Component { return SWA }

func (swaComponent) startMatch(hostOK bool) validator {
	return validator{hostOK: hostOK, length: unbounded}
}

// accept accumulates the SWA-covered length since the last gap; a node is
// usable once a whole window is covered.
func (swaComponent) accept(t *Tree, v validator, i int32) (validator, bool) {
	n := &t.nodes[i]
	if n.dev[SWA] == nil && !(v.hostOK && n.host[SWA] != nil) {
		v.length = 0
		return v, false
	}
	if v.length < unbounded {
		v.length += t.keyAtoms(n)
	}
	return v, v.length >= t.cfg.window
}

// finishMatch reports the branching length (the Full prefix that would
// have hit with an SWA window there) and the SWA host hit in the window.
func (swaComponent) finishMatch(t *Tree, r MatchResult, w matchWalk) MatchResult {
	a := w.fullHit / t.cfg.page * t.cfg.page
	if a > r.DeviceLen+r.HostHitLen {
		r.SWABranchingSeqlen = a
	}
	if !t.cfg.hostTier {
		return r
	}
	seen, hit := 0, 0
	for i := w.best; i != rootIdx && seen < t.cfg.window; i = t.nodes[i].parent {
		n := &t.nodes[i]
		l := t.keyAtoms(n)
		switch {
		case n.dev[SWA] != nil:
			seen += l
		case n.host[SWA] != nil:
			seen += l
			hit += l
		default:
			return r
		}
		r.SWAHostHitLen = hit
	}
	return r
}

// refreshLRU makes the window above the node the most recent run, so the
// list evicts out-of-window data first.
func (swaComponent) refreshLRU(t *Tree, phase lruPhase, i int32) {
	t.lruWindowFront(i, t.cfg.window+t.cfg.page, SWA)
}

// overlap recovers an SWA tombstone that the insert covers with SWA data
// the request still holds (positions at or past its SWA-evicted length).
// It returns how much of the incoming slice is a plain duplicate.
func (swaComponent) overlap(t *Tree, s *insertState, i int32, p int) int {
	c := s.cursor
	// Only a node wholly past the request's cached prefix can take the
	// request's slots: those below the prefix are the tree's own. (A
	// prefix from a locked match ends on a node boundary, so a prefix
	// ending inside the node means the caller's length is off; the plain
	// duplicate rule then frees only the slots past it.)
	if s.prev > c || t.nodes[i].dev[SWA] != nil {
		return p
	}
	e := s.swaEvicted
	switch {
	case e <= c:
		t.swaRecover(s, i, c, p)
		return 0
	case e < c+p:
		k := e - c
		if _, err := t.insertSplit(s, i, k); err != nil {
			return p // split only fails on a broken tree, which reports it
		}
		t.swaRecover(s, i, e, p-k)
		return k
	}
	return p
}

// swaRecover gives tombstone i (covering insert positions [from, from+n))
// the request's SWA slots. An unlocked node adopts the incoming Full slots
// wholesale (its own go back Full-only: their SWA side is gone); a locked
// node must keep its Full slots, so the host moves the incoming SWA slots
// under them instead.
func (t *Tree) swaRecover(s *insertState, i int32, from, n int) {
	node := &t.nodes[i]
	if node.lock[Full] > 0 {
		s.pending = append(s.pending, Action{Kind: ActionRecoverSWAWithLockedFull, Node: t.handle(i),
			Slots: node.dev[Full], Incoming: s.slots(from, from+n)})
		t.setSWA(i)
		s.adopt(SWA, from, from+n)
		return
	}
	// The host frees the old slots after this call, maybe after others
	// (a fused unlock rewinds the arena): they get a buffer of their own.
	old := slices.Clone(node.dev[Full])
	t.freeFull(i)
	t.setFull(i, s.value[from:from+n])
	s.pending = append(s.pending, Action{Kind: ActionFreeDeviceKVFullOnly, Slots: old})
	t.setSWA(i)
	s.pending = append(s.pending, Action{Kind: ActionSWARebuild, Node: t.handle(i), Slots: t.nodes[i].dev[Full]})
	s.adopt(Full, from, from+n)
	s.adopt(SWA, from, from+n)
}

// setSWA gives node i an SWA device value over its Full slots.
func (t *Tree) setSWA(i int32) {
	t.setAuxDevice(i, SWA, t.nodes[i].dev[Full])
	t.account(i, SWA, len(t.nodes[i].dev[Full]))
}

// recoverAfterUnevict gives a node whose Full value the insert just
// restored the SWA data for the positions the request still holds,
// splitting it where the request's SWA-evicted length falls inside.
func (swaComponent) recoverAfterUnevict(t *Tree, s *insertState, i int32, p int) {
	if t.nodes[i].dev[SWA] != nil {
		return
	}
	c, e := s.cursor, s.swaEvicted
	from := c
	switch {
	case e <= c:
	case e < c+p:
		if _, err := t.insertSplit(s, i, e-c); err != nil {
			return
		}
		from = e
	default:
		return
	}
	t.setSWA(i)
	s.adopt(SWA, from, c+p)
	s.pending = append(s.pending, Action{Kind: ActionSWARebuild, Node: t.handle(i), Slots: t.nodes[i].dev[Full]})
}

// commit gives a new leaf SWA data from the request's SWA-evicted length
// on, and caps an unlocked leaf's SWA part at the window (rounded up to
// pages) by splitting off the older part, which the list then evicts
// first.
func (swaComponent) commit(t *Tree, s *insertState, target int32, newLeaf bool) {
	s.res.SWABranchInserted = s.swaBranching > 0 && s.L >= s.swaBranching
	if !newLeaf {
		return
	}
	from := s.res.PrefixLen
	sp := s.swaEvicted - from
	if sp >= s.L-from {
		return
	}
	if sp > 0 {
		if _, err := t.insertSplit(s, target, sp); err != nil {
			return
		}
		from += sp
	}
	s.adopt(SWA, from, s.L)
	limit := (t.cfg.window + t.cfg.page - 1) / t.cfg.page * t.cfg.page
	if n := s.L - from; t.nodes[target].lock[SWA] == 0 && n > limit {
		older, err := t.insertSplit(s, target, n-limit)
		if err != nil {
			return
		}
		t.setSWA(older)
		s.pending = append(s.pending, Action{Kind: ActionSWARebuild, Node: t.handle(older), Slots: t.nodes[older].dev[Full]})
	}
	t.setSWA(target)
	s.pending = append(s.pending, Action{Kind: ActionSWARebuild, Node: t.handle(target), Slots: t.nodes[target].dev[Full]})
}

// split divides the SWA value like the Full one (it is the same slice),
// copies the locks and moves the boundary stamps to the prefix, the top
// of any lock segment that covered the child. The prefix ranks just less
// recent than the child.
func (swaComponent) split(t *Tree, prefix, child int32, at int) {
	p, c := &t.nodes[prefix], &t.nodes[child]
	if c.dev[SWA] != nil {
		p.dev[SWA], c.dev[SWA] = p.dev[Full], c.dev[Full]
		t.lruAfter(child, prefix, tierDevice, SWA)
	}
	if h := c.host[SWA]; h != nil {
		p.host[SWA], c.host[SWA] = h[:at:at], h[at:]
		if t.inLRU(child, tierHost, SWA) {
			t.lruAfter(child, prefix, tierHost, SWA)
		}
	}
	p.lock[SWA], p.hostLock[SWA] = c.lock[SWA], c.hostLock[SWA]
	p.swaUUID, c.swaUUID = c.swaUUID, 0
	p.swaHostUUID, c.swaHostUUID = c.swaHostUUID, 0
}

// acquire locks the window segment above i: every node up to and
// including the one where the covered length reaches the window
// (tombstones count, with no accounting). That node is stamped with a
// boundary id, recorded in the receipt so the release stops there.
func (swaComponent) acquire(t *Tree, i int32, r *Receipt) {
	covered := 0
	for j := i; j != rootIdx && covered < t.cfg.window; j = t.nodes[j].parent {
		n := &t.nodes[j]
		n.lock[SWA]++
		if n.lock[SWA] == 1 && n.dev[SWA] != nil {
			l := len(n.dev[SWA])
			t.evictable[SWA] -= l
			t.protected[SWA] += l
		}
		covered += t.keyAtoms(n)
		if covered >= t.cfg.window {
			if n.swaUUID == 0 {
				t.swaUUIDs++
				n.swaUUID = t.swaUUIDs
			}
			r.SWAUUID = n.swaUUID
		}
	}
}

// swaSegment calls f on each node of the lock segment of a receipt on i,
// up to the node stamped uuid (device stamps, or host stamps when host is
// set; uuid 0 means up to the root), and reports whether the segment
// ended where the receipt says it does.
func (t *Tree) swaSegment(i int32, uuid int64, host bool, f func(j int32)) bool {
	for j := i; j != rootIdx; j = t.nodes[j].parent {
		f(j)
		stamp := t.nodes[j].swaUUID
		if host {
			stamp = t.nodes[j].swaHostUUID
		}
		if uuid != 0 && stamp == uuid {
			return true
		}
	}
	return uuid == 0
}

func (swaComponent) canRelease(t *Tree, i int32, r *Receipt) bool {
	ok := true
	end := t.swaSegment(i, r.SWAUUID, false, func(j int32) {
		if t.nodes[j].lock[SWA] == 0 {
			ok = false
		}
	})
	return ok && end
}

func (swaComponent) release(t *Tree, i int32, r *Receipt) {
	t.swaRelease(i, r, nil)
}

// swaRelease drops a receipt's SWA segment. With early set (an early
// release while Full stays locked), a node that thereby becomes an
// evictable device leaf loses its SWA value at once; its frees are
// appended to *early.
func (t *Tree) swaRelease(i int32, r *Receipt, early *[]Action) {
	t.swaSegment(i, r.SWAUUID, false, func(j int32) {
		n := &t.nodes[j]
		n.lock[SWA]--
		if n.lock[SWA] != 0 {
			return
		}
		if n.dev[SWA] != nil {
			l := len(n.dev[SWA])
			t.protected[SWA] -= l
			t.evictable[SWA] += l
		}
		t.refreshLeaf(j)
		if early != nil && n.dpos >= 0 && n.dev[SWA] != nil {
			*early, _ = swaComponent{}.evict(t, j, layerDevice, *early)
		}
	})
}

// evict frees the SWA value of the chosen layer(s), named by the node's
// Full slots (the host translates them).
func (swaComponent) evict(t *Tree, i int32, l layer, acts []Action) ([]Action, int) {
	n := &t.nodes[i]
	freed := 0
	if l&layerDevice != 0 && n.dev[SWA] != nil {
		v := n.dev[SWA]
		t.account(i, SWA, -len(v))
		slots := t.scratch(len(v))
		copy(slots, v)
		t.setAuxDevice(i, SWA, nil)
		acts = append(acts, Action{Kind: ActionFreeDeviceSlots, Component: SWA, Node: t.handle(i), Slots: slots})
		freed += len(v)
	}
	if l&layerHost != 0 && n.host[SWA] != nil {
		v := n.host[SWA]
		n.host[SWA] = nil
		t.hostUsed[SWA] -= len(v)
		t.lruRemove(i, tierHost, SWA)
		acts = append(acts, Action{Kind: ActionFreeHostSlots, Component: SWA, Node: t.handle(i), Slots: v})
		if l == layerHost {
			freed += len(v)
		}
	}
	return acts, freed
}

func (swaComponent) priority(leaf bool) int {
	if leaf {
		return 0
	}
	return 1
}
