package blockcache

import (
	"maps"
	"slices"
)

// Branch reports, without side effects, the whole-block length of tokens'
// cached prefix and whether it ends strictly inside a cached run of
// blocks: inserting tokens would then split a shared prefix into a branch
// point, a prefix seen twice (Marconi's input-reuse admission checkpoints
// the state there).
func (c *Cache) Branch(tokens []uint32, adapter uint64) (matched int, inside bool) {
	n, end, at := c.walk(tokens, adapter)
	return n * c.bs, n > 0 && end != none && at < len(c.nodes[end].blocks)
}

// Clone returns an independent copy of the cache and its snapshot index
// (to replay a window of requests under other settings).
func (c *Cache) Clone() *Cache {
	d := *c
	d.nodes = slices.Clone(c.nodes)
	for i := range d.nodes {
		n := &d.nodes[i]
		n.key, n.blocks, n.disks = slices.Clone(n.key), slices.Clone(n.blocks), slices.Clone(n.disks)
		n.refs, n.lasts = slices.Clone(n.refs), slices.Clone(n.lasts)
	}
	d.free = slices.Clone(c.free)
	d.roots = maps.Clone(c.roots)
	d.edges = maps.Clone(c.edges)
	d.owned = blockSet{bits: slices.Clone(c.owned.bits), sparse: maps.Clone(c.owned.sparse), n: c.owned.n}
	d.partials = make(map[uint32]*partial, len(c.partials))
	for k, p := range c.partials {
		q := *p
		q.tokens = slices.Clone(p.tokens)
		d.partials[k] = &q
	}
	d.cands = slices.Clone(c.cands)
	d.path = nil
	d.idx = c.idx.Clone()
	return &d
}
