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
	// first tokens of a cached block (a child's chunk or a partial suffix).
	// Off by default: the matched block is shared without a reference and
	// without copy-on-write, so a sequence that writes into it corrupts
	// every other reader (see the package doc).
	SubBlockTail bool
	// Snapshots configures the SSM snapshot index.
	Snapshots snapshot.Config
}

type node struct {
	parent, first, next, prev int32 // tree links; children in creation order (newest first)
	same                      int32 // next node with the same edge key (hash collision chain)
	gen                       uint32
	live                      bool
	ref                       uint32
	key                       []uint32 // the block's BlockSize tokens
	ctx                       uint64   // chained hash of every token from the root (checked by Check)
	block, disk               uint32
	last                      uint64
	adapter                   uint64 // roots only
	partial                   bool
	pTokens                   []uint32
	pBlock, pDisk             uint32
}

// edge keys a child by its parent and the first and last token of its
// chunk; chunks that share both are chained through node.same and told
// apart by a full comparison.
type edge struct {
	parent      int32
	first, last uint32
}

func edgeOf(p int32, chunk []uint32) edge { return edge{p, chunk[0], chunk[len(chunk)-1]} }

// Cache is a block-granular prefix cache: each node is one cached KV block
// of BlockSize tokens under a root per adapter, with a reference count
// (1 for the cache, +1 per sequence using it), an optional disk copy and
// an optional partial suffix block. It also owns the SSM snapshot index.
// Not safe for concurrent use; host/native.BlockCache adds the locks.
type Cache struct {
	cfg   Config
	bs    int
	nodes []node
	free  []int32
	roots map[uint64]int32
	edges map[edge]int32
	owner map[uint32]int32 // cached block id -> node holding it (full or partial)
	slab  []uint32         // room for new nodes' keys
	fresh map[uint32]bool  // CanInsert scratch: the insert's new blocks
	cands candHeap
	clock uint64
	nodeN int
	parts int
	idx   *snapshot.Index
	st    Stats
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
	c := &Cache{cfg: cfg, bs: cfg.BlockSize, roots: map[uint64]int32{}, edges: map[edge]int32{}, owner: map[uint32]int32{}, fresh: map[uint32]bool{}, idx: idx}
	c.root(0, true)
	return c, nil
}

// BlockSize returns the configured block size.
func (c *Cache) BlockSize() int { return c.bs }

// root returns adapter's root, creating it when create is set.
func (c *Cache) root(adapter uint64, create bool) int32 {
	if r, ok := c.roots[adapter]; ok || !create {
		if !ok {
			return none
		}
		return r
	}
	r := c.alloc()
	n := &c.nodes[r]
	n.parent, n.adapter, n.ref = none, adapter, 1
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
	gen := c.nodes[i].gen + 1
	key := c.nodes[i].key[:0]
	c.nodes[i] = node{parent: none, first: none, next: none, prev: none, same: none, gen: gen, live: true, key: key, block: NoDisk, disk: NoDisk}
	return i
}

// keyOf copies chunk into buf when it fits (a recycled node's key), else
// into a fresh slice cut from a slab, so new nodes do not allocate one by one.
func (c *Cache) keyOf(buf, chunk []uint32) []uint32 {
	if cap(buf) >= len(chunk) {
		return append(buf[:0], chunk...)
	}
	if len(c.slab) < len(chunk) {
		c.slab = make([]uint32, 256*len(chunk))
	}
	k := c.slab[:len(chunk):len(chunk)]
	c.slab = c.slab[len(chunk):]
	copy(k, chunk)
	return k
}

func chain(h uint64, toks []uint32) uint64 {
	for _, t := range toks {
		h = (h ^ uint64(t)) * 0x100000001b3
	}
	return h
}

func equal(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// child returns the child of p whose chunk is chunk.
func (c *Cache) child(p int32, chunk []uint32) int32 {
	i, ok := c.edges[edgeOf(p, chunk)]
	for ok && i != none {
		if equal(c.nodes[i].key, chunk) {
			return i
		}
		i = c.nodes[i].same
	}
	return none
}

// walk appends the fully matched nodes of tokens under adapter to path.
func (c *Cache) walk(path []int32, tokens []uint32, adapter uint64) ([]int32, int32) {
	p := c.root(adapter, false)
	if p == none {
		return path, none
	}
	for k := 0; (k+1)*c.bs <= len(tokens); k++ {
		chunk := tokens[k*c.bs : (k+1)*c.bs]
		q := c.child(p, chunk)
		if q == none {
			break
		}
		path = append(path, q)
		p = q
	}
	return path, p
}

// subBlock finds a block that starts with rem below node p: a child's
// chunk (first in child order) or p's partial suffix.
func (c *Cache) subBlock(p int32, rem []uint32) (block, disk uint32, ok bool) {
	for q := c.nodes[p].first; q != none; q = c.nodes[q].next {
		if equal(c.nodes[q].key[:len(rem)], rem) {
			return c.nodes[q].block, c.nodes[q].disk, true
		}
	}
	n := &c.nodes[p]
	if n.partial && len(n.pTokens) >= len(rem) && equal(n.pTokens[:len(rem)], rem) {
		return n.pBlock, n.pDisk, true
	}
	return 0, 0, false
}

// Match is the result of Lookup.
type Match struct {
	// Blocks are the cached blocks of the matched prefix, in order; the
	// fully matched ones now carry one more reference for the caller.
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

// Peek returns the matched length of tokens without any side effect.
func (c *Cache) Peek(tokens []uint32, adapter uint64) int {
	var buf [64]int32
	path, end := c.walk(buf[:0], tokens, adapter)
	m := len(path) * c.bs
	if c.cfg.SubBlockTail && end != none && m == len(tokens)/c.bs*c.bs && len(tokens) > m {
		if _, _, ok := c.subBlock(end, tokens[m:]); ok {
			m = len(tokens)
		}
	}
	return m
}

// Lookup matches tokens under adapter, takes a reference on every fully
// matched block for the caller (release it with ReleaseMatched or
// Release), stamps them, and looks up the deepest SSM snapshot within the
// match; a nonzero session becomes the snapshot index's live session.
func (c *Cache) Lookup(tokens []uint32, session, adapter uint64) (Match, error) {
	var buf [64]int32
	path, end := c.walk(buf[:0], tokens, adapter)
	m := Match{MatchedTokens: len(path) * c.bs, Snapshot: snapshot.Match{Slot: -1}}
	anyDisk := false
	for _, q := range path {
		m.Blocks = append(m.Blocks, c.nodes[q].block)
		m.DiskIDs = append(m.DiskIDs, c.nodes[q].disk)
		anyDisk = anyDisk || c.nodes[q].disk != NoDisk
	}
	if c.cfg.SubBlockTail && end != none && m.MatchedTokens == len(tokens)/c.bs*c.bs && len(tokens) > m.MatchedTokens {
		if b, d, ok := c.subBlock(end, tokens[m.MatchedTokens:]); ok {
			m.Blocks = append(m.Blocks, b)
			m.DiskIDs = append(m.DiskIDs, d)
			anyDisk = anyDisk || d != NoDisk
			m.MatchedTokens = len(tokens)
			c.st.SubBlockHits++
		}
	}
	if !anyDisk {
		m.DiskIDs = nil
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
	for _, q := range path {
		c.nodes[q].ref++
		c.touch(q)
	}
	sm, err := c.idx.Lookup(tokens, m.MatchedTokens, session, adapter)
	if err != nil { // unreachable: MatchedTokens <= len(tokens)
		return Match{}, err
	}
	m.Snapshot = sm
	return m, nil
}

// touch stamps q with the current clock and queues it as an eviction
// candidate (validated when popped).
func (c *Cache) touch(q int32) {
	c.nodes[q].last = c.clock
	c.offer(q)
}

func (c *Cache) offer(q int32) {
	n := &c.nodes[q]
	if n.parent != none && n.first == none && n.ref <= 1 {
		heap.Push(&c.cands, cand{last: n.last, idx: q, gen: n.gen})
	}
}
