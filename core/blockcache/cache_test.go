package blockcache

import (
	"testing"

	"github.com/radixkv/radixkv/core/snapshot"
	"github.com/stretchr/testify/require"
)

const bs = 4

func newCache(t *testing.T, cfg Config) *Cache {
	t.Helper()
	if cfg.BlockSize == 0 {
		cfg.BlockSize = bs
	}
	c, err := New(cfg)
	require.NoError(t, err)
	return c
}

func toks(n int, base uint32) []uint32 {
	s := make([]uint32, n)
	for i := range s {
		s[i] = base + uint32(i)
	}
	return s
}

func blocks(from, n int) []uint32 {
	s := make([]uint32, n)
	for i := range s {
		s[i] = uint32(from + i)
	}
	return s
}

func mustInsert(t *testing.T, c *Cache, tk, table, disks []uint32, matched int, adapter uint64) Acquired {
	t.Helper()
	a, err := c.Insert(tk, table, disks, matched, adapter)
	require.NoError(t, err)
	require.NoError(t, c.Check())
	return a
}

func mustLookup(t *testing.T, c *Cache, tk []uint32, adapter uint64) Match {
	t.Helper()
	m, err := c.Lookup(tk, 0, adapter)
	require.NoError(t, err)
	require.NoError(t, c.Check())
	return m
}

func refs(c *Cache, tk []uint32, adapter uint64) []uint32 {
	c.walk(tk, adapter)
	var out []uint32
	for _, s := range c.path {
		out = append(out, c.nodes[s.n].refs[:s.to-s.from]...)
	}
	return out
}

func TestNew_RejectsBadConfig(t *testing.T) {
	_, err := New(Config{})
	require.ErrorIs(t, err, ErrInvalidConfig)
	_, err = New(Config{BlockSize: 4, Snapshots: snapshot.Config{Alpha: 9}})
	require.ErrorIs(t, err, ErrInvalidConfig)
}

func TestCache_EmptyAndNoMatch(t *testing.T) {
	c := newCache(t, Config{})
	m := mustLookup(t, c, toks(8, 1), 0)
	require.Zero(t, m.MatchedTokens)
	require.Empty(t, m.Blocks)
	require.False(t, m.Snapshot.Found)
	mustInsert(t, c, toks(8, 1), blocks(10, 2), nil, 0, 0)
	require.Zero(t, mustLookup(t, c, toks(8, 100), 0).MatchedTokens)
	st := c.Stats()
	require.Equal(t, uint64(2), st.Misses)
}

// §9 (1): a miss-insert followed by the inserter's release leaves the
// nodes findable at the cache's reference alone, and evictable.
func TestCache_InsertReleaseLookupSurvivesAndEvicts(t *testing.T) {
	c := newCache(t, Config{})
	s := toks(12, 1)
	a := mustInsert(t, c, s, blocks(10, 3), nil, 0, 0)
	require.Equal(t, blocks(10, 3), a.Blocks)
	require.Equal(t, []uint32{2, 2, 2}, refs(c, s, 0))
	require.NoError(t, c.Release(s, 0))
	require.Equal(t, []uint32{1, 1, 1}, refs(c, s, 0))
	m := mustLookup(t, c, s, 0)
	require.Equal(t, 12, m.MatchedTokens)
	require.Equal(t, blocks(10, 3), m.Blocks)
	require.Nil(t, m.DiskIDs)
	require.Equal(t, []uint32{2, 2, 2}, refs(c, s, 0))
	require.NoError(t, c.ReleaseMatched(s, m.MatchedTokens, 0))
	ev := c.Evict(3)
	require.Equal(t, []uint32{12, 11, 10}, ev.Blocks, "leaf-up")
	require.Equal(t, 0, c.Stats().Nodes)
	require.NoError(t, c.Check())
}

func TestCache_PartialMatchAndMultiBlock(t *testing.T) {
	c := newCache(t, Config{})
	s := toks(16, 1)
	mustInsert(t, c, s, blocks(10, 4), nil, 0, 0)
	q := append(toks(8, 1), 99, 98, 97, 96, 95)
	m := mustLookup(t, c, q, 0)
	require.Equal(t, 8, m.MatchedTokens)
	require.Equal(t, blocks(10, 2), m.Blocks)
	require.Equal(t, 8, c.Peek(q, 0))
	// Peek has no side effects.
	require.Equal(t, []uint32{3, 3, 2, 2}, refs(c, s, 0))
	c.Peek(q, 0)
	require.Equal(t, []uint32{3, 3, 2, 2}, refs(c, s, 0))
	// Tokens past the last whole block are ignored (sub-block off).
	require.Equal(t, 12, mustLookup(t, c, toks(15, 1), 0).MatchedTokens)
}

// §9 (2): eviction skips referenced nodes and takes leaves LRU first.
func TestCache_EvictLRUAndSkipsReferenced(t *testing.T) {
	c := newCache(t, Config{})
	a, b, d := toks(4, 1), toks(4, 100), toks(4, 200)
	for i, s := range [][]uint32{a, b, d} {
		mustInsert(t, c, s, blocks(10+i, 1), nil, 0, 0)
		require.NoError(t, c.Release(s, 0))
	}
	mustLookup(t, c, a, 0) // a newest now and referenced
	ev := c.Evict(1)
	require.Equal(t, []uint32{11}, ev.Blocks, "b is the least recent")
	ev = c.Evict(5)
	require.Equal(t, []uint32{12}, ev.Blocks, "a is referenced")
	require.NoError(t, c.Release(a, 0))
	require.Equal(t, []uint32{10}, c.Evict(5).Blocks)
	require.NoError(t, c.Check())
}

func TestCache_BranchingTree(t *testing.T) {
	c := newCache(t, Config{})
	x := append(toks(4, 1), toks(4, 50)...)
	y := append(toks(4, 1), toks(4, 80)...)
	mustInsert(t, c, x, blocks(10, 2), nil, 0, 0)
	a := mustInsert(t, c, y, []uint32{20, 21}, nil, 0, 0)
	require.Equal(t, []uint32{21}, a.Blocks)
	require.Equal(t, []uint32{20}, a.Unused, "the shared chunk keeps its own block")
	require.Equal(t, []uint32{10, 21}, mustLookup(t, c, y, 0).Blocks)
	require.Equal(t, 3, c.Stats().Nodes)
}

// §9 (3): re-insert acquires nothing; an extension only new blocks and
// disk ids.
func TestCache_DiskIDAcquisition(t *testing.T) {
	c := newCache(t, Config{})
	s := toks(12, 1)
	a := mustInsert(t, c, s[:8], blocks(10, 2), []uint32{70, 71}, 0, 0)
	require.Equal(t, []uint32{70, 71}, a.DiskIDs)
	a = mustInsert(t, c, s[:8], blocks(10, 2), []uint32{70, 71}, 8, 0)
	require.Empty(t, a.DiskIDs)
	require.Empty(t, a.Blocks)
	a = mustInsert(t, c, s, blocks(10, 3), []uint32{70, 71, 72}, 8, 0)
	require.Equal(t, []uint32{72}, a.DiskIDs)
	require.Equal(t, []uint32{12}, a.Blocks)
	m := mustLookup(t, c, s, 0)
	require.Equal(t, []uint32{70, 71, 72}, m.DiskIDs)
	// MAX -> real on an existing node is acquired.
	d := newCache(t, Config{})
	mustInsert(t, d, s[:4], blocks(10, 1), nil, 0, 0)
	require.Nil(t, mustLookup(t, d, s[:4], 0).DiskIDs, "no disk copies: empty")
	a = mustInsert(t, d, s[:4], blocks(10, 1), []uint32{90}, 4, 0)
	require.Equal(t, []uint32{90}, a.DiskIDs)
	// Evict returns the disk ids, without NoDisk entries.
	require.NoError(t, c.Release(s, 0)) // the lookup's
	require.NoError(t, c.Release(s, 0)) // the inserts'
	require.ErrorIs(t, c.ReleaseMatched(s, 8, 0), ErrOverRelease)
	ev := c.Evict(3)
	require.Equal(t, []uint32{72, 71, 70}, ev.DiskIDs)
}

// §9 (4): a partial suffix block is owned once, replaced -> released,
// freed with its node, dropped when a child covers it.
func TestCache_PartialSuffix(t *testing.T) {
	c := newCache(t, Config{})
	s := toks(10, 1)
	a := mustInsert(t, c, s, blocks(10, 3), []uint32{NoDisk, NoDisk, 77}, 0, 0)
	require.Equal(t, blocks(10, 3), a.Blocks)
	require.Equal(t, []uint32{77}, a.DiskIDs)
	require.Equal(t, 1, c.Stats().PartialBlocks)
	// Same block again: nothing.
	a = mustInsert(t, c, s, blocks(10, 3), nil, 10, 0)
	require.Empty(t, a.Blocks)
	require.Empty(t, a.Released)
	// A different partial block replaces and releases the old one.
	a = mustInsert(t, c, append(toks(8, 1), 9), []uint32{10, 11, 40}, nil, 9, 0)
	require.Equal(t, []uint32{40}, a.Blocks)
	require.Equal(t, []uint32{12}, a.Released)
	require.Equal(t, []uint32{77}, a.ReleasedDiskIDs)
	// Shorter than one block caches nothing (the end node is a root).
	a = mustInsert(t, c, toks(3, 500), []uint32{60}, nil, 0, 0)
	require.Empty(t, a.Blocks)
	// An extension past the partial drops it.
	a = mustInsert(t, c, toks(12, 1), []uint32{10, 11, 41}, nil, 12, 0)
	require.Equal(t, []uint32{41}, a.Blocks)
	require.Equal(t, []uint32{40}, a.Released)
	require.Equal(t, 0, c.Stats().PartialBlocks)
	// Eviction frees a node's block and its partial block.
	d := newCache(t, Config{})
	mustInsert(t, d, s, blocks(10, 3), nil, 0, 0)
	require.NoError(t, d.Release(s, 0))
	ev := d.Evict(1)
	require.Equal(t, []uint32{11, 12}, ev.Blocks)
	require.NoError(t, d.Check())
}

func TestCache_SubBlockTail(t *testing.T) {
	s := toks(8, 1)
	off := newCache(t, Config{})
	mustInsert(t, off, s, blocks(10, 2), nil, 0, 0)
	require.Equal(t, 4, off.Peek(s[:6], 0), "off by default")
	on := newCache(t, Config{SubBlockTail: true})
	mustInsert(t, on, s, blocks(10, 2), nil, 0, 0)
	m := mustLookup(t, on, s[:6], 0)
	require.Equal(t, 6, m.MatchedTokens, "via the child's key prefix")
	require.Equal(t, []uint32{10, 11}, m.Blocks)
	require.Equal(t, []uint32{3, 2}, refs(on, s, 0), "the sub-block match takes no reference")
	require.Equal(t, 2, mustLookup(t, on, s[:2], 0).MatchedTokens, "sub-block only")
	// Via the partial suffix.
	p := newCache(t, Config{SubBlockTail: true})
	q := toks(7, 1)
	mustInsert(t, p, q, blocks(10, 2), nil, 0, 0)
	require.Equal(t, 6, p.Peek(q[:6], 0))
	require.Equal(t, 4, p.Peek(append(toks(4, 1), 5, 99), 0), "a different suffix does not match")
	require.Equal(t, 4, p.Peek(toks(8, 1), 0), "a full-block request does not use the partial")
}

// §9 (5): adapters are disjoint for KV and snapshots.
func TestCache_AdapterIsolation(t *testing.T) {
	c := newCache(t, Config{})
	s := toks(8, 1)
	mustInsert(t, c, s, blocks(10, 2), nil, 0, 0)
	require.Zero(t, c.Peek(s, 7), "base blocks are not reused by an adapter")
	a := mustInsert(t, c, s, blocks(20, 2), nil, 0, 7)
	require.Equal(t, blocks(20, 2), a.Blocks, "the adapter insert does not clobber the base")
	require.Equal(t, blocks(10, 2), mustLookup(t, c, s, 0).Blocks)
	require.Equal(t, blocks(20, 2), mustLookup(t, c, s, 7).Blocks)
	_, err := c.InsertIntermediateSnapshot(s, 7, 3, 0)
	require.NoError(t, err)
	require.False(t, mustLookup(t, c, s, 0).Snapshot.Found)
	require.True(t, mustLookup(t, c, s, 7).Snapshot.Found)
	require.Equal(t, 2, c.Stats().Adapters)
}

// §9 (6): snapshots survive tree eviction; the deepest anchor within the
// match wins.
func TestCache_SnapshotsSurviveEvictionAndDeepestWins(t *testing.T) {
	c := newCache(t, Config{})
	s := toks(12, 1)
	d, a, err := c.InsertWithSnapshot(s, blocks(10, 3), nil, 0, 0, 5, 0)
	require.NoError(t, err)
	require.Empty(t, d.Slots)
	require.Len(t, a.Blocks, 3)
	_, err = c.InsertIntermediateSnapshot(s[:4], 0, 6, 0)
	require.NoError(t, err)
	m := mustLookup(t, c, s, 0)
	require.Equal(t, int32(5), m.Snapshot.Slot)
	require.Equal(t, 12, m.Snapshot.Tokens)
	m = mustLookup(t, c, s[:8], 0)
	require.Equal(t, int32(6), m.Snapshot.Slot, "deepest within the 8 matched tokens")
	require.NoError(t, c.Release(s, 0))
	require.NoError(t, c.Release(s, 0))
	require.NoError(t, c.Release(s[:8], 0))
	c.Evict(10)
	require.Equal(t, 0, c.Stats().Nodes)
	require.Equal(t, 2, c.Snapshots().Len(), "block eviction never removes a snapshot")
	// Re-inserting the blocks finds the old snapshot again.
	mustInsert(t, c, s, blocks(30, 3), nil, 0, 0)
	require.Equal(t, int32(5), mustLookup(t, c, s, 0).Snapshot.Slot)
	// An overwrite returns the displaced slot.
	d, _, err = c.InsertWithSnapshot(s, blocks(30, 3), nil, 12, 0, 8, 0)
	require.NoError(t, err)
	require.Equal(t, []int32{5}, d.Slots)
}

// Bad input: typed errors, nothing changed.
func TestCache_BadInputChangesNothing(t *testing.T) {
	s := toks(12, 1)
	build := func() *Cache {
		c := newCache(t, Config{})
		mustInsert(t, c, s, blocks(10, 3), nil, 0, 0)
		require.NoError(t, c.ReleaseMatched(s, 4, 0)) // block 0 at the cache's ref only
		_, err := c.InsertIntermediateSnapshot(s[:4], 0, 1, 0)
		require.NoError(t, err)
		return c
	}
	cases := []struct {
		name string
		call func(c *Cache) error
		want error
	}{
		{"release more than matched", func(c *Cache) error { return c.ReleaseMatched(s, 12, 0) }, ErrOverRelease},
		{"release uncached", func(c *Cache) error { return c.Release(toks(8, 900), 0) }, ErrOverRelease},
		{"release other adapter", func(c *Cache) error { return c.Release(s[4:], 3) }, ErrOverRelease},
		{"release negative", func(c *Cache) error { return c.ReleaseMatched(s, -1, 0) }, ErrInvalidArgument},
		{"insert matched beyond", func(c *Cache) error { _, err := c.Insert(s, blocks(10, 3), nil, 13, 0); return err }, ErrInvalidArgument},
		{"insert too many disks", func(c *Cache) error { _, err := c.Insert(s, blocks(10, 1), []uint32{1, 2}, 0, 0); return err }, ErrInvalidArgument},
		{"insert owned block", func(c *Cache) error {
			_, err := c.Insert(append(s, toks(4, 70)...), []uint32{10, 11, 12, 11}, nil, 0, 0)
			return err
		}, ErrBlockInUse},
		{"insert block twice", func(c *Cache) error { _, err := c.Insert(toks(8, 300), []uint32{50, 50}, nil, 0, 0); return err }, ErrBlockInUse},
		{"insert partial owned", func(c *Cache) error { _, err := c.Insert(toks(6, 300), []uint32{50, 10}, nil, 0, 0); return err }, ErrBlockInUse},
		{"snapshot slot in use", func(c *Cache) error {
			_, _, err := c.InsertWithSnapshot(toks(8, 300), []uint32{50, 51}, nil, 0, 0, 1, 0)
			return err
		}, snapshot.ErrSlotInUse},
		{"promote resident", func(c *Cache) error { return c.Snapshots().Promote(snapshot.Hash(s[:4], 0), 0, 2, 0) }, snapshot.ErrResident},
	}
	for _, cs := range cases {
		c := build()
		before, st := dump(c), c.Stats()
		require.ErrorIs(t, cs.call(c), cs.want, cs.name)
		require.Equal(t, before, dump(c), cs.name)
		require.Equal(t, st, c.Stats(), cs.name)
		require.NoError(t, c.Check(), cs.name)
	}
}

// Block ids beyond the bitmap's range work the same.
func TestCache_LargeBlockIDs(t *testing.T) {
	c := newCache(t, Config{})
	big := uint32(1<<31 + 5)
	s := toks(9, 1)
	a := mustInsert(t, c, s, []uint32{big, 7, big + 1}, nil, 0, 0)
	require.Equal(t, []uint32{big, 7, big + 1}, a.Blocks)
	_, err := c.Insert(toks(4, 80), []uint32{big}, nil, 0, 0)
	require.ErrorIs(t, err, ErrBlockInUse)
	require.NoError(t, c.Release(s, 0))
	require.Equal(t, []uint32{7, big + 1, big}, c.Evict(3).Blocks)
	require.NoError(t, c.Check())
}

func TestCache_BranchAndClone(t *testing.T) {
	c := newCache(t, Config{})
	s := toks(16, 1)
	mustInsert(t, c, s, blocks(10, 4), nil, 0, 0)
	m, in := c.Branch(append(toks(8, 1), 99, 98, 97, 96), 0)
	require.Equal(t, 8, m)
	require.True(t, in, "ends inside the run of 4 blocks")
	m, in = c.Branch(append(toks(16, 1), 5, 5, 5, 5), 0)
	require.Equal(t, 16, m)
	require.False(t, in, "extends a leaf")
	d := c.Clone()
	require.NoError(t, d.Check())
	mustInsert(t, d, append(toks(8, 1), 99, 98, 97, 96), []uint32{10, 11, 20}, nil, 8, 0)
	require.NoError(t, d.Release(s, 0))
	require.Equal(t, 16, c.Peek(s, 0))
	require.NoError(t, c.Check())
	_, in = d.Branch(append(toks(8, 1), 1, 1, 1, 1), 0)
	require.False(t, in, "the clone split there; the original did not")
	_, in = c.Branch(append(toks(8, 1), 1, 1, 1, 1), 0)
	require.True(t, in)
}
