package blockcache

import (
	"container/heap"
	"fmt"

	"github.com/radixkv/radixkv/core/snapshot"
)

// NoDisk is the disk block id of a block with no disk copy.
const NoDisk = ^uint32(0)

const none = -1

// Config configures a Cache.
type Config struct {
	// BlockSize is the number of tokens per block (> 0).
	BlockSize int
	// SubBlockTail lets a lookup whose tokens end inside a block match the
	// first tokens of a cached block (a following block or a partial
	// suffix). Off by default: the matched block is shared without a
	// reference and without copy-on-write, so a sequence that writes into
	// it corrupts every other reader (see the package doc).
	SubBlockTail bool
	// Snapshots configures the SSM snapshot index.
	Snapshots snapshot.Config
}

// node is a run of consecutive cached blocks: the radix tree is compressed,
// but every block keeps its own reference count, stamp and disk id, so the
// behaviour is that of one node per block. Only a run's last block can
// have child runs; a run branches by splitting.
type node struct {
	parent, first, next, prev int32 // tree links; children newest first
	same                      int32 // next child of the parent with the same edge key
	gen                       uint32
	live                      bool
	adapter                   uint64   // roots only
	key                       []uint32 // len(blocks)*BlockSize tokens
	blocks, disks, refs       []uint32
	lasts                     []uint64
}

// partial is a block holding fewer than BlockSize tokens after a cached
// block (keyed by that block's id).
type partial struct {
	tokens      []uint32
	block, disk uint32
}

// edge keys a child run by its parent and the first and last token of its
// first block; runs that share both are chained through node.same and told
// apart by comparing the block.
type edge struct {
	parent      int32
	first, last uint32
}

// Cache is a block-granular prefix cache: every cached block holds the
// caller's physical block id under a root per adapter, with a reference
// count (1 for the cache, +1 per sequence using it), an optional disk copy
// and an optional partial suffix block. It also owns the SSM snapshot
// index. Not safe for concurrent use; host/native.BlockCache adds a lock.
type Cache struct {
	cfg      Config
	bs       int
	nodes    []node
	free     []int32
	roots    map[uint64]int32
	edges    map[edge]int32
	owned    blockSet            // every cached block id, full or partial
	partials map[uint32]*partial // by the id of the block they follow
	cands    candHeap
	clock    uint64
	blockN   int
	path     []step // walk scratch
	idx      *snapshot.Index
	st       Stats
}

// step is one run of a walk: blocks [from, to) of node n matched.
type step struct {
	n        int32
	from, to int
}

// New returns an empty cache, or ErrInvalidConfig.
func New(cfg Config) (*Cache, error) {
	if cfg.BlockSize <= 0 {
		return nil, fmt.Errorf("%w: BlockSize %d must be positive", ErrInvalidConfig, cfg.BlockSize)
	}
	idx, err := snapshot.New(cfg.Snapshots)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	c := &Cache{cfg: cfg, bs: cfg.BlockSize, roots: map[uint64]int32{}, edges: map[edge]int32{},
		partials: map[uint32]*partial{}, idx: idx}
	c.root(0, true)
	return c, nil
}

// BlockSize returns the configured block size.
func (c *Cache) BlockSize() int { return c.bs }

// root returns adapter's root (none when absent and not create).
func (c *Cache) root(adapter uint64, create bool) int32 {
	if r, ok := c.roots[adapter]; ok {
		return r
	}
	if !create {
		return none
	}
	r := c.alloc()
	c.nodes[r].adapter = adapter
	c.roots[adapter] = r
	return r
}

func (c *Cache) alloc() int32 {
	var i int32
	if k := len(c.free); k > 0 {
		i = c.free[k-1]
		c.free = c.free[:k-1]
	} else {
		i = int32(len(c.nodes))
		c.nodes = append(c.nodes, node{})
	}
	o := &c.nodes[i]
	*o = node{parent: none, first: none, next: none, prev: none, same: none, gen: o.gen + 1, live: true,
		key: o.key[:0], blocks: o.blocks[:0], disks: o.disks[:0], refs: o.refs[:0], lasts: o.lasts[:0]}
	return i
}

func edgeOf(p int32, block []uint32) edge { return edge{p, block[0], block[len(block)-1]} }

// mismatch returns the length of the common prefix of a and b.
func mismatch(a, b []uint32) int {
	n := min(len(a), len(b))
	a, b = a[:n], b[:n]
	i := 0
	// Array views compare as one vectorised memequal call.
	for ; i+64 <= n; i += 64 {
		if *(*[64]uint32)(a[i : i+64]) != *(*[64]uint32)(b[i : i+64]) {
			break
		}
	}
	for ; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// child returns the child run of p whose first block is block.
func (c *Cache) child(p int32, block []uint32) int32 {
	i, ok := c.edges[edgeOf(p, block)]
	for ok && i != none {
		if mismatch(c.nodes[i].key[:c.bs], block) == c.bs {
			return i
		}
		i = c.nodes[i].same
	}
	return none
}

// walk matches the whole blocks of tokens under adapter into c.path and
// returns the matched block count and where the walk stopped: the node and
// the number of its blocks matched (0 for a root).
func (c *Cache) walk(tokens []uint32, adapter uint64) (n int, end int32, at int) {
	c.path = c.path[:0]
	p := c.root(adapter, false)
	if p == none {
		return 0, none, 0
	}
	pos := 0
	for pos+c.bs <= len(tokens) {
		q := c.child(p, tokens[pos:pos+c.bs])
		if q == none {
			break
		}
		nd := &c.nodes[q]
		k := mismatch(nd.key, tokens[pos:]) / c.bs
		c.path = append(c.path, step{q, n, n + k})
		n += k
		pos += k * c.bs
		if k < len(nd.blocks) {
			return n, q, k
		}
		p = q
	}
	if len(c.path) == 0 {
		return 0, p, 0
	}
	return n, p, len(c.nodes[p].blocks)
}

// subBlock finds a block that starts with rem after the walk's end (node
// end, at blocks matched): the next block (in the run, or the newest child
// run's first), else the partial suffix of the last matched block.
func (c *Cache) subBlock(end int32, at int, rem []uint32) (block, disk uint32, ok bool) {
	nd := &c.nodes[end]
	if at < len(nd.blocks) {
		if mismatch(nd.key[at*c.bs:(at+1)*c.bs], rem) == len(rem) {
			return nd.blocks[at], nd.disks[at], true
		}
	} else {
		for q := nd.first; q != none; q = c.nodes[q].next {
			if mismatch(c.nodes[q].key[:c.bs], rem) == len(rem) {
				return c.nodes[q].blocks[0], c.nodes[q].disks[0], true
			}
		}
	}
	if at == 0 {
		return 0, 0, false // a root has no partial suffix
	}
	if pt := c.partials[nd.blocks[at-1]]; pt != nil && mismatch(pt.tokens, rem) == len(rem) {
		return pt.block, pt.disk, true
	}
	return 0, 0, false
}

// Match is the result of Lookup.
type Match struct {
	// Blocks are the cached blocks of the matched prefix, in order; the
	// whole ones now carry one more reference for the caller.
	Blocks []uint32
	// DiskIDs are the blocks' disk ids (NoDisk where none); empty when no
	// block has one.
	DiskIDs []uint32
	// MatchedTokens is the matched prefix length: whole blocks, plus the
	// sub-block tail when Config.SubBlockTail matched one (that last block
	// carries no reference).
	MatchedTokens int
	// Snapshot is the deepest SSM snapshot within the match (Found false
	// when none).
	Snapshot snapshot.Match
}

// tail reports the sub-block tail match after a walk of n blocks.
func (c *Cache) tail(tokens []uint32, n int, end int32, at int) (block, disk uint32, ok bool) {
	full := len(tokens) / c.bs * c.bs
	if !c.cfg.SubBlockTail || end == none || n*c.bs != full || len(tokens) == full {
		return 0, 0, false
	}
	return c.subBlock(end, at, tokens[full:])
}

// Peek returns the matched length of tokens without any side effect.
func (c *Cache) Peek(tokens []uint32, adapter uint64) int {
	n, end, at := c.walk(tokens, adapter)
	if _, _, ok := c.tail(tokens, n, end, at); ok {
		return len(tokens)
	}
	return n * c.bs
}

// Lookup matches tokens under adapter, takes a reference on every whole
// matched block for the caller (give it back with ReleaseMatched), stamps
// them, and looks up the deepest SSM snapshot within the match; a nonzero
// session becomes the snapshot index's live session.
func (c *Cache) Lookup(tokens []uint32, session, adapter uint64) (Match, error) {
	n, end, at := c.walk(tokens, adapter)
	m := Match{MatchedTokens: n * c.bs, Snapshot: snapshot.Match{Slot: -1}}
	anyDisk := false
	tb, td, tok := c.tail(tokens, n, end, at)
	if n > 0 || tok {
		m.Blocks = make([]uint32, 0, n+1)
	}
	for _, s := range c.path {
		nd := &c.nodes[s.n]
		k := s.to - s.from
		m.Blocks = append(m.Blocks, nd.blocks[:k]...)
		for _, d := range nd.disks[:k] {
			anyDisk = anyDisk || d != NoDisk
		}
	}
	if tok {
		m.Blocks = append(m.Blocks, tb)
		anyDisk = anyDisk || td != NoDisk
		m.MatchedTokens = len(tokens)
		c.st.SubBlockHits++
	}
	if anyDisk { // disk ids only when the cache has some (the HSS-engaged signal)
		m.DiskIDs = make([]uint32, 0, len(m.Blocks))
		for _, s := range c.path {
			m.DiskIDs = append(m.DiskIDs, c.nodes[s.n].disks[:s.to-s.from]...)
		}
		if tok {
			m.DiskIDs = append(m.DiskIDs, td)
		}
	}
	c.st.Lookups++
	c.st.LookupTokens += uint64(len(tokens))
	if m.MatchedTokens == 0 {
		c.st.Misses++
		return m, nil
	}
	c.st.Hits++
	c.st.MatchedTokens += uint64(m.MatchedTokens)
	c.clock++
	for _, s := range c.path {
		nd := &c.nodes[s.n]
		k := s.to - s.from
		for j := range k {
			nd.refs[j]++
			nd.lasts[j] = c.clock
		}
		if k == len(nd.blocks) {
			c.offer(s.n)
		}
	}
	sm, err := c.idx.Lookup(tokens, m.MatchedTokens, session, adapter)
	if err != nil { // unreachable: MatchedTokens <= len(tokens)
		return Match{}, err
	}
	m.Snapshot = sm
	return m, nil
}

// offer queues q as an eviction candidate when its last block is an
// unreferenced leaf (entries are validated when popped).
func (c *Cache) offer(q int32) {
	nd := &c.nodes[q]
	if k := len(nd.blocks); k > 0 && nd.first == none && nd.refs[k-1] <= 1 {
		heap.Push(&c.cands, cand{last: nd.lasts[k-1], idx: q, gen: nd.gen})
	}
}
