package core

// The branch policy is admit (admit.go) with a statistic learned per branch
// of the tree: every node counts the leaves created under it (births) and
// those of them that came back (returns: matched again, or recreated from
// a ghost while never reused). A probationer — a never-reused leaf past the
// probation window — whose parent's return rate is at least θ times the
// return rate of all leaves is kept with the reused ones instead of going
// first; everything else is exactly admit's order.
//
// Why: the tree's shape says what a new tail is. Under a chat's system
// prompt the next turn extends last turn's tail, so tails there come back;
// under a document that many one-off questions share they never do. admit
// treats both alike (only the window W separates them, by age); the branch
// statistic tells them apart by where they hang. The root is no branch: a
// top-level leaf's parent says nothing about it, so those are admit's.
//
// Learning θ (ARC's rule, as admit's W, on the same ghost hits within one
// cache-size of their eviction): a returning probationer lowers θ (new
// tails deserve protection in more branches), a returning reused leaf
// raises it (the protection costs the reused ones their place); steps are
// θ/8 + 1 in fixed point. θ starts at 1 (protect the branches better than
// average); a θ above every ratio is admit, θ = 0 protects every
// probationer below the root (LRU for them). Nothing depends on a trace.
//
// Cost per access: a counter on the matched path where a leaf comes back
// for the first time, a counter per new leaf, and admit's map probe per new
// leaf and map insert per victim; the key is O(1) (three divisions).

// branchState is the branch policy's learning state.
type branchState struct {
	window  int64 // W, in ticks (as admit's)
	theta   int64 // θ, fixed point: branchOne is 1
	ghosts  ghostSet[admitGhost]
	evicted int64 // atoms evicted so far
	births  int64 // new leaves (not recreations), all branches
	returns int64 // returns, all branches
}

// branchOne is θ = 1 and the scale of branchRatio.
const branchOne = 1 << 16

// branchCap bounds a node's counters: both halve when births reach it,
// which keeps the rate and lets old history fade.
const branchCap = 1 << 30

func (b *branchState) reset() {
	b.ghosts.reset()
	*b = branchState{ghosts: b.ghosts, theta: branchOne}
}

// branchRatio is the return rate of the leaves under p over that of all
// leaves, scaled by branchOne (both with a prior of one return in two
// births, so an empty branch rates one half of average or so).
func (t *Tree) branchRatio(p int32) int64 {
	b := &t.branch
	P := &t.nodes[p]
	r := (int64(P.returns) + 1) * branchOne / (int64(P.births) + 2)
	g := max((b.returns+1)*branchOne/(b.births+2), 1)
	return min(r, 1<<32) * branchOne / g
}

func branchKey(t *Tree, n *node) (int64, int64) {
	if n.reused || t.tick-n.creation < t.branch.window {
		return 1, n.lastAccess
	}
	if n.parent != rootIdx && n.parent != nilIdx && t.branchRatio(n.parent) >= t.branch.theta {
		return 1, n.lastAccess
	}
	return 0, n.lastAccess
}

// branchEvict leaves the victim's ghost, as admit does.
func branchEvict(t *Tree, n *node) {
	leaveReuseGhost(t, n, &t.branch.evicted, &t.branch.ghosts)
}

// branchInsert counts a new leaf as a birth under its parent, or, when it
// recreates an evicted one, marks it reused, counts the return of a
// never-reused one and lets a recent ghost hit move W and θ.
func branchInsert(t *Tree, i int32) {
	b := &t.branch
	n := &t.nodes[i]
	p := n.parent
	k := ghostKey{t.handle(p), n.ns, n.edgeKey}
	g, ok := b.ghosts.take(k)
	if !ok {
		b.births++
		P := &t.nodes[p]
		P.births++
		if P.births >= branchCap {
			P.births, P.returns = P.births/2, P.returns/2
		}
		return
	}
	n.reused = true
	if !g.reused {
		t.branchReturn(p)
	}
	if b.evicted-g.evicted > int64(t.evictable[Full]+t.protected[Full]) {
		return // too old to say which class was cut wrongly
	}
	step, ts := b.window/8+1, b.theta/8+1
	if g.reused {
		b.window = max(b.window-step, 0)
		b.theta = min(b.theta+ts, 1<<40)
	} else {
		b.window = min(b.window+step, t.tick)
		b.theta = max(b.theta-ts, 0)
	}
}

// branchReturn counts a return under node p (a leaf of p matched for the
// first time, or a never-reused one recreated).
func (t *Tree) branchReturn(p int32) {
	P := &t.nodes[p]
	P.returns = min(P.returns+1, branchCap)
	t.branch.returns++
}
