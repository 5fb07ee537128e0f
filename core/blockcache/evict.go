package blockcache

import "container/heap"

// Evicted lists what Evict freed: the physical blocks (whole blocks and
// their partial suffixes) to return to the pool and the disk ids to
// dereference.
type Evicted struct {
	Blocks, DiskIDs []uint32
}

// Evict frees at least want blocks if it can: it removes leaf blocks that
// no sequence references, least recently used first, so chains go
// leaf-up. Each freed block takes its partial suffix with it. Roots are
// never evicted.
func (c *Cache) Evict(want int) Evicted {
	var ev Evicted
	for len(ev.Blocks) < want {
		q := c.popVictim()
		if q == none {
			break
		}
		nd := &c.nodes[q]
		k := len(nd.blocks) - 1
		b := nd.blocks[k]
		ev.Blocks = append(ev.Blocks, b)
		if nd.disks[k] != NoDisk {
			ev.DiskIDs = append(ev.DiskIDs, nd.disks[k])
		}
		c.owned.del(b)
		if c.partials[b] != nil {
			c.dropPartial(b, &ev.Blocks, &ev.DiskIDs)
		}
		c.blockN--
		if k > 0 {
			nd.key, nd.blocks, nd.disks = nd.key[:k*c.bs], nd.blocks[:k], nd.disks[:k]
			nd.refs, nd.lasts = nd.refs[:k], nd.lasts[:k]
			c.offer(q)
			continue
		}
		if p := c.unlink(q); c.nodes[p].parent != none {
			c.offer(p)
		}
	}
	c.st.EvictedBlocks += uint64(len(ev.Blocks))
	return ev
}

func (c *Cache) candidate(q int32) bool {
	nd := &c.nodes[q]
	k := len(nd.blocks)
	return nd.live && k > 0 && nd.first == none && nd.refs[k-1] <= 1
}

// popVictim returns the node whose last block is the least recent
// candidate, skipping stale heap entries, or none.
func (c *Cache) popVictim() int32 {
	for c.cands.Len() > 0 {
		e := heap.Pop(&c.cands).(cand)
		nd := &c.nodes[e.idx]
		if nd.gen == e.gen && c.candidate(e.idx) && nd.lasts[len(nd.lasts)-1] == e.last {
			return e.idx
		}
	}
	return none
}

// unlink removes the empty leaf run q and recycles it; returns its parent.
func (c *Cache) unlink(q int32) int32 {
	nd := &c.nodes[q]
	p := nd.parent
	nd.key = nd.key[:c.bs] // unindex reads the first block, gone from the run
	c.unindex(q)
	if nd.prev != none {
		c.nodes[nd.prev].next = nd.next
	} else {
		c.nodes[p].first = nd.next
	}
	if nd.next != none {
		c.nodes[nd.next].prev = nd.prev
	}
	nd.live = false
	c.free = append(c.free, q)
	c.maybeCompact()
	return p
}

// maybeCompact rebuilds the candidate heap from the live candidates when
// stale entries dominate it, bounding its size.
func (c *Cache) maybeCompact() {
	if len(c.cands) <= 4*(len(c.nodes)-len(c.free))+64 {
		return
	}
	c.cands = c.cands[:0]
	for q := range c.nodes {
		if c.candidate(int32(q)) {
			nd := &c.nodes[q]
			c.cands = append(c.cands, cand{last: nd.lasts[len(nd.lasts)-1], idx: int32(q), gen: nd.gen})
		}
	}
	heap.Init(&c.cands)
}

// cand is a queued eviction candidate: valid while the node's generation
// is unchanged, its last block still an unreferenced leaf with this stamp.
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
