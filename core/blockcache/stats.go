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
	// Nodes is the cached whole blocks (one per node of the reference's
	// block tree); PartialBlocks the partial suffix blocks; Blocks their
	// sum, the pool blocks the cache holds; Runs the compressed runs.
	Nodes, PartialBlocks, Blocks, Runs int
	// Referenced is the whole blocks some sequence holds (reference above 1).
	Referenced int
	Adapters   int
	Snapshots  snapshot.Stats
}

// Stats returns the counters and current sizes.
func (c *Cache) Stats() Stats {
	s := c.st
	s.Nodes, s.PartialBlocks = c.blockN, len(c.partials)
	s.Blocks = s.Nodes + s.PartialBlocks
	for i := range c.nodes {
		if nd := &c.nodes[i]; nd.live && nd.parent != none {
			s.Runs++
			for _, r := range nd.refs {
				if r > 1 {
					s.Referenced++
				}
			}
		}
	}
	s.Adapters = len(c.roots)
	s.Snapshots = c.idx.Stats()
	return s
}

// Check verifies the cache's invariants (links, edge index, run shapes,
// block ownership, references, counts, queued candidates) and the
// snapshot index's, returning ErrSanity naming the first violation.
func (c *Cache) Check() error {
	bad := func(f string, a ...any) error { return fmt.Errorf("%w: "+f, append([]any{ErrSanity}, a...)...) }
	blocks := map[uint32]bool{}
	nblocks, runs := 0, 0
	for q := range c.nodes {
		nd := &c.nodes[q]
		if !nd.live {
			continue
		}
		k := len(nd.blocks)
		if nd.parent == none {
			if r, ok := c.roots[nd.adapter]; !ok || int(r) != q || k != 0 {
				return bad("root %d of adapter %d not registered or not empty", q, nd.adapter)
			}
		} else {
			runs++
			if !c.nodes[nd.parent].live || k == 0 {
				return bad("run %d: %d blocks under parent %d", q, k, nd.parent)
			}
			if len(nd.key) != k*c.bs || len(nd.disks) != k || len(nd.refs) != k || len(nd.lasts) != k {
				return bad("run %d: key %d, %d blocks, %d disks, %d refs, %d stamps", q, len(nd.key), k, len(nd.disks), len(nd.refs), len(nd.lasts))
			}
			if c.child(nd.parent, nd.key[:c.bs]) != int32(q) {
				return bad("run %d not reachable through its edge", q)
			}
			for j, b := range nd.blocks {
				if nd.refs[j] < 1 || blocks[b] {
					return bad("block %d of run %d: reference %d or owned twice", b, q, nd.refs[j])
				}
				blocks[b] = true
			}
			nblocks += k
		}
		seen := map[edge]int{}
		for ch := nd.first; ch != none; ch = c.nodes[ch].next {
			cn := &c.nodes[ch]
			if cn.parent != int32(q) || !cn.live {
				return bad("child %d of %d links elsewhere", ch, q)
			}
			if cn.next != none && c.nodes[cn.next].prev != ch {
				return bad("sibling links broken at %d", ch)
			}
			seen[edgeOf(int32(q), cn.key[:c.bs])]++
		}
		for e, n := range seen {
			chain := 0
			for i := c.edges[e]; i != none; i = c.nodes[i].same {
				if !c.nodes[i].live || c.nodes[i].parent != e.parent || edgeOf(e.parent, c.nodes[i].key[:c.bs]) != e {
					return bad("edge chain of %d holds %d", q, i)
				}
				chain++
			}
			if chain != n {
				return bad("edge chain of %d: %d entries for %d children", q, chain, n)
			}
		}
	}
	if nblocks != c.blockN {
		return bad("%d blocks counted %d", nblocks, c.blockN)
	}
	for after, pt := range c.partials {
		if !blocks[after] || len(pt.tokens) == 0 || len(pt.tokens) >= c.bs || blocks[pt.block] {
			return bad("partial %d after block %d: %d tokens", pt.block, after, len(pt.tokens))
		}
		blocks[pt.block] = true
	}
	if len(blocks) != c.owned.len() {
		return bad("%d blocks cached, %d owned", len(blocks), c.owned.len())
	}
	for b := range blocks {
		if !c.owned.has(b) {
			return bad("block %d not marked owned", b)
		}
	}
	queued := map[cand]bool{}
	for _, e := range c.cands {
		queued[e] = true
	}
	for q := range c.nodes {
		if c.candidate(int32(q)) {
			nd := &c.nodes[q]
			if !queued[cand{last: nd.lasts[len(nd.lasts)-1], idx: int32(q), gen: nd.gen}] {
				return bad("evictable leaf block of run %d is not queued", q)
			}
		}
	}
	if err := c.idx.Check(); err != nil {
		return fmt.Errorf("%w: %w", ErrSanity, err)
	}
	return nil
}
