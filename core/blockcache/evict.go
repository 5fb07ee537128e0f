package blockcache

import "container/heap"

// Evicted lists what Evict freed: the physical blocks (nodes' blocks and
// their partial suffixes) to return to the pool and the disk ids to
// dereference.
type Evicted struct {
	Blocks, DiskIDs []uint32
}

// Evict frees at least want blocks if it can: it removes leaves that no
// sequence references, least recently used first (ties: lowest node
// index), so chains go leaf-up. Each leaf frees its block and its partial
// suffix. Roots are never evicted.
func (c *Cache) Evict(want int) Evicted {
	var ev Evicted
	for len(ev.Blocks) < want {
		q := c.popVictim()
		if q == none {
			break
		}
		n := &c.nodes[q]
		ev.Blocks = append(ev.Blocks, n.block)
		if n.disk != NoDisk {
			ev.DiskIDs = append(ev.DiskIDs, n.disk)
		}
		delete(c.owner, n.block)
		if n.partial {
			c.dropPartial(q, &ev.Blocks, &ev.DiskIDs)
		}
		p := c.unlink(q)
		c.offer(p)
	}
	c.st.EvictedBlocks += uint64(len(ev.Blocks))
	return ev
}

func (c *Cache) candidate(q int32) bool {
	n := &c.nodes[q]
	return n.live && n.parent != none && n.first == none && n.ref <= 1
}

// popVictim returns the least recent candidate leaf, skipping stale heap
// entries, or none.
func (c *Cache) popVictim() int32 {
	for c.cands.Len() > 0 {
		e := heap.Pop(&c.cands).(cand)
		if n := &c.nodes[e.idx]; n.gen == e.gen && n.last == e.last && c.candidate(e.idx) {
			return e.idx
		}
	}
	return none
}

// unlink removes leaf q from the tree and recycles it; returns its parent.
func (c *Cache) unlink(q int32) int32 {
	n := &c.nodes[q]
	p := n.parent
	if n.prev != none {
		c.nodes[n.prev].next = n.next
	} else {
		c.nodes[p].first = n.next
	}
	if n.next != none {
		c.nodes[n.next].prev = n.prev
	}
	e := edgeOf(p, n.key)
	if c.edges[e] == q {
		if n.same == none {
			delete(c.edges, e)
		} else {
			c.edges[e] = n.same
		}
	} else {
		for i := c.edges[e]; i != none; i = c.nodes[i].same {
			if c.nodes[i].same == q {
				c.nodes[i].same = n.same
				break
			}
		}
	}
	n.live = false
	c.free = append(c.free, q)
	c.nodeN--
	c.maybeCompact()
	return p
}

// maybeCompact rebuilds the candidate heap from the live candidates when
// stale entries dominate it, bounding its size.
func (c *Cache) maybeCompact() {
	if len(c.cands) <= 4*c.nodeN+64 {
		return
	}
	c.cands = c.cands[:0]
	for q := range c.nodes {
		if c.candidate(int32(q)) {
			n := &c.nodes[q]
			c.cands = append(c.cands, cand{last: n.last, idx: int32(q), gen: n.gen})
		}
	}
	heap.Init(&c.cands)
}

// cand is a queued eviction candidate: valid while the node's generation
// and stamp are unchanged and it is still an unreferenced leaf.
type cand struct {
	last uint64
	idx  int32
	gen  uint32
}

type candHeap []cand

func (h candHeap) Len() int { return len(h) }
func (h candHeap) Less(i, j int) bool {
	if h[i].last != h[j].last {
		return h[i].last < h[j].last
	}
	return h[i].idx < h[j].idx
}
func (h candHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *candHeap) Push(x any)   { *h = append(*h, x.(cand)) }
func (h *candHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
