package blockcache

import (
	"fmt"

	"github.com/radixkv/radixkv/core/snapshot"
)

// Stats counts what the cache did and holds.
type Stats struct {
	Lookups, Hits, Misses, SubBlockHits uint64
	LookupTokens, MatchedTokens         uint64
	Inserts, EvictedBlocks              uint64
	// Nodes is the cached whole blocks (roots excluded); PartialBlocks the
	// partial suffix blocks; Blocks their sum, the pool blocks the cache holds.
	Nodes, PartialBlocks, Blocks int
	// Referenced is the nodes some sequence holds (reference above 1).
	Referenced int
	Adapters   int
	Snapshots  snapshot.Stats
}

// Stats returns the counters and current sizes.
func (c *Cache) Stats() Stats {
	s := c.st
	s.Nodes, s.PartialBlocks, s.Blocks = c.nodeN, c.parts, c.nodeN+c.parts
	for i := range c.nodes {
		if n := &c.nodes[i]; n.live && n.parent != none && n.ref > 1 {
			s.Referenced++
		}
	}
	s.Adapters = len(c.roots)
	s.Snapshots = c.idx.Stats()
	return s
}

// Check verifies the cache's invariants (links, edge index, chained
// hashes, block ownership, references, counts) and the snapshot index's,
// returning ErrSanity naming the first violation.
func (c *Cache) Check() error {
	bad := func(f string, a ...any) error { return fmt.Errorf("%w: "+f, append([]any{ErrSanity}, a...)...) }
	live, parts := 0, 0
	owned := 0
	for q := range c.nodes {
		n := &c.nodes[q]
		if !n.live {
			continue
		}
		if n.parent == none {
			if r, ok := c.roots[n.adapter]; !ok || int(r) != q {
				return bad("root %d of adapter %d not registered", q, n.adapter)
			}
		} else {
			live++
			pn := &c.nodes[n.parent]
			if !pn.live {
				return bad("node %d under a dead parent", q)
			}
			if len(n.key) != c.bs || n.ctx != chain(pn.ctx, n.key) {
				return bad("node %d: key length %d or context hash wrong", q, len(n.key))
			}
			if c.child(n.parent, n.key) != int32(q) {
				return bad("node %d not reachable through its edge", q)
			}
			if n.ref < 1 {
				return bad("node %d has reference %d", q, n.ref)
			}
			if o, ok := c.owner[n.block]; !ok || int(o) != q {
				return bad("block %d of node %d not owned by it", n.block, q)
			}
			owned++
		}
		if n.partial {
			parts++
			owned++
			if n.parent == none || len(n.pTokens) == 0 || len(n.pTokens) >= c.bs {
				return bad("node %d: partial suffix of %d tokens", q, len(n.pTokens))
			}
			if o, ok := c.owner[n.pBlock]; !ok || int(o) != q {
				return bad("partial block %d of node %d not owned by it", n.pBlock, q)
			}
		}
		for k := n.first; k != none; k = c.nodes[k].next {
			if c.nodes[k].parent != int32(q) || !c.nodes[k].live {
				return bad("child %d of %d links elsewhere", k, q)
			}
			if nx := c.nodes[k].next; nx != none && c.nodes[nx].prev != k {
				return bad("sibling links broken at %d", k)
			}
		}
	}
	if live != c.nodeN || parts != c.parts || owned != len(c.owner) {
		return bad("counts: %d nodes (%d counted), %d partials (%d), %d owned blocks (%d)", live, c.nodeN, parts, c.parts, owned, len(c.owner))
	}
	for e, q := range c.edges {
		for i := q; i != none; i = c.nodes[i].same {
			if !c.nodes[i].live || edgeOf(c.nodes[i].parent, c.nodes[i].key) != e {
				return bad("edge index entry %d stale", i)
			}
		}
	}
	for q := range c.nodes {
		if c.candidate(int32(q)) {
			found := false
			for _, e := range c.cands {
				found = found || (e.idx == int32(q) && e.gen == c.nodes[q].gen && e.last == c.nodes[q].last)
			}
			if !found {
				return bad("evictable leaf %d is not queued", q)
			}
		}
	}
	if err := c.idx.Check(); err != nil {
		return fmt.Errorf("%w: %w", ErrSanity, err)
	}
	return nil
}
