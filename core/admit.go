package core

// The admit policy is LRU with TinyLFU-style admission, learned online:
// a leaf whose content has never been reused is "on probation", and once
// it is older than a window of W ticks it goes before every other leaf;
// everything else (reused leaves, and probationers still inside the
// window) is ordered by recency. W = 0 is pure admission (a new tail that
// nobody asks for again goes first), a W longer than any leaf's age is
// plain lru; W moves between the two by itself.
//
// Why: when reuse distances are much longer than the cache's reach, recency
// keeps whatever came last, mostly one-off tails, and flushes the prefixes
// that come back; what a serving cache can know about those is that they
// came back before. When reuse is short (a chat's next turn right after
// the answer), probation must last long enough to catch it: that is W.
//
// History beyond the cache: an evicted leaf leaves a ghost (its parent,
// namespace and first page, as lrfu's) for up to admitHistory cache-sizes
// of evicted atoms, so a prefix that is recreated after its eviction is
// recognised as reused even when it comes back long after the cache forgot
// it.
//
// Learning W (ARC's rule, deterministic): a ghost hit within one
// cache-size of evicted atoms of the eviction says the victim's class was
// wrongly cut. A probationer evicted that way grows W (new tails deserve a
// longer window); a reused leaf evicted that way shrinks it (probation
// costs the reused ones their place). Steps are W/8 + 1 ticks, so W spans
// any clock scale in a few dozen hits.
//
// Cost per access: a flag set on the matched path (in the same loop that
// restamps ticks), a map probe per new leaf and a map insert per victim;
// the key is O(1).

// admitHistory is how many cache-sizes of evicted atoms the ghosts cover.
const admitHistory = 16

type admitGhost struct {
	evicted int64 // the evicted-atom count at its eviction
	reused  bool  // the victim had been reused
}

// admitState is the admit policy's learning state.
type admitState struct {
	window  int64 // W, in ticks
	ghosts  ghostSet[admitGhost]
	evicted int64 // atoms evicted so far
	grows   int64 // ghost hits that grew W
	shrinks int64 // ghost hits that shrank W
}

func (a *admitState) reset() {
	a.ghosts.reset()
	*a = admitState{ghosts: a.ghosts}
}

func admitKey(t *Tree, n *node) (int64, int64) {
	if n.reused || t.tick-n.creation < t.admit.window {
		return 1, n.lastAccess
	}
	return 0, n.lastAccess
}

// admitEvict leaves the victim's ghost.
func admitEvict(t *Tree, n *node) {
	leaveReuseGhost(t, n, &t.admit.evicted, &t.admit.ghosts)
}

// leaveReuseGhost counts the victim n's atoms in *evicted and leaves its
// ghost in gs: the count at its eviction, which tells a later recreation
// how long ago it went, and whether it had been reused. admit and branch
// share it.
func leaveReuseGhost(t *Tree, n *node, evicted *int64, gs *ghostSet[admitGhost]) {
	atoms := len(n.dev[Full])
	cache := t.evictable[Full] + t.protected[Full]
	*evicted += int64(atoms)
	if n.parent == nilIdx {
		return
	}
	k := ghostKey{t.handle(n.parent), n.ns, n.edgeKey}
	gs.put(k, admitGhost{evicted: *evicted, reused: n.reused}, atoms, admitHistory*cache)
}

// admitInsert marks a new leaf that recreates an evicted one as reused and
// lets a recent ghost hit move W.
func admitInsert(t *Tree, i int32) {
	a := &t.admit
	n := &t.nodes[i]
	k := ghostKey{t.handle(n.parent), n.ns, n.edgeKey}
	g, ok := a.ghosts.take(k)
	if !ok {
		return
	}
	n.reused = true
	if a.evicted-g.evicted > int64(t.evictable[Full]+t.protected[Full]) {
		return // too old to say which class was cut wrongly
	}
	step := a.window/8 + 1
	if g.reused {
		a.shrinks++
		a.window = max(a.window-step, 0)
	} else {
		a.grows++
		a.window = min(a.window+step, t.tick)
	}
}
