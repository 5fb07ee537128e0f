package core

// The lrfu policy ranks a leaf by its combined recency and frequency
// (LRFU's CRF): every match of a node adds a weight that halves every H
// ticks, and the leaf with the least weight goes first. Stored in the log
// domain, the weight is a tick-like value,
//
//	crf = H · log2( Σ 2^(tᵢ/H) )  over the node's accesses tᵢ,
//
// so a node used once ranks at its access tick (as under lru), and each
// further use moves it later by up to H ticks: two uses at the same
// moment count as one use H ticks later. Only integers are used (a table
// of H·log2(1+2^-x)), so the order is the same on every machine.
//
// H adapts by itself: it is the cache's own time scale, the smoothed age
// (now − last access, in ticks) of the leaves it evicted lately (before the
// first eviction it is one tick: lrfu starts as lru). A large
// cache keeps things long and so counts uses over a long window; a small
// one forgets fast. Nothing is tuned to a trace.
//
// Ghosts: a leaf the policy evicts leaves a ghost (its parent, first page
// and crf) for about one cache-size of evicted atoms. When an insert
// recreates an evicted leaf, the new leaf inherits the ghost's history
// (its crf combined with the new access), so a prefix that keeps coming
// back after eviction is recognised as frequent instead of starting
// afresh — the retained history of LRU-K, the admission evidence of
// TinyLFU.
//
// Eviction trims (Full-only trees): a walk frees only what it still wants, from the end of
// the chosen leaf, and the front stays cached — a request that would use a
// leaf's end uses its front too, so the front is never worth less.
//
// Cost per access: O(1) per node on the matched path (one table lookup),
// a map probe per new leaf and a map insert per victim; the key is O(1).

// crfTable[i] is 1024·log2(1 + 2^(-i/8)).
var crfTable = [...]int64{
	1024, 961, 902, 844, 790, 738, 689, 643, 599, 558, 518, 482, 447, 415, 385, 356,
	330, 305, 282, 260, 240, 222, 205, 189, 174, 160, 148, 136, 125, 115, 106, 97,
	90, 82, 76, 70, 64, 59, 54, 50, 45, 42, 38, 35, 32, 30, 27, 25,
	23, 21, 19, 18, 16, 15, 14, 13, 11, 11, 10, 9, 8, 7, 7, 6,
	6, 5, 5, 4, 4, 4, 3, 3, 3, 3, 2, 2, 2, 2, 2, 2,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
}

// crfAdd adds an access at tick now to a log-domain weight crf.
func (t *Tree) crfAdd(crf, now int64) int64 {
	h := max(t.adapt.horizon, 1)
	hi, lo := max(crf, now), min(crf, now)
	i := (hi - lo) * 8 / h
	if i >= int64(len(crfTable)) || i < 0 {
		return hi
	}
	return hi + h*crfTable[i]/1024
}

// adaptState is the learning state of the lrfu policy.
type adaptState struct {
	horizon int64           // smoothed age of recent victims, in ticks
	ghosts  ghostSet[int64] // evicted leaves' decayed counts
	hits    int64           // ghost hits so far
}

func (a *adaptState) reset() {
	a.ghosts.reset()
	*a = adaptState{ghosts: a.ghosts}
}

func lrfuKey(_ *Tree, n *node) (int64, int64) { return n.crf, n.lastAccess }

// lrfuEvict records the victim's age and leaves its ghost.
func lrfuEvict(t *Tree, n *node) {
	a := &t.adapt
	age := max(t.tick-n.lastAccess, 0)
	a.horizon += (age - a.horizon) / 8
	if n.parent == nilIdx {
		return
	}
	// Keep ghosts for about as many atoms as the cache holds.
	k := ghostKey{t.handle(n.parent), n.ns, n.edgeKey}
	a.ghosts.put(k, n.crf, len(n.dev[Full]), t.evictable[Full]+t.protected[Full])
}

// lrfuInsert gives a new leaf that recreates an evicted one its history.
func lrfuInsert(t *Tree, i int32) {
	a := &t.adapt
	n := &t.nodes[i]
	k := ghostKey{t.handle(n.parent), n.ns, n.edgeKey}
	crf, ok := a.ghosts.take(k)
	if !ok {
		return
	}
	a.hits++
	n.crf = t.crfAdd(crf, n.lastAccess)
}
