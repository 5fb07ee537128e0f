package blockcache

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Chunks that share the edge key (first and last token) are told apart by
// their tokens.
func TestCache_ContextHashCollision(t *testing.T) {
	x, y := []uint32{1, 2, 3}, []uint32{1, 5, 3}
	c := newCache(t, Config{BlockSize: 3})
	mustInsert(t, c, x, []uint32{1}, nil, 0, 0)
	require.Zero(t, c.Peek(y, 0))
	mustInsert(t, c, y, []uint32{2}, nil, 0, 0)
	require.Equal(t, []uint32{1}, mustLookup(t, c, x, 0).Blocks)
	require.Equal(t, []uint32{2}, mustLookup(t, c, y, 0).Blocks)
	require.NoError(t, c.Release(x, 0))
	require.NoError(t, c.Release(x, 0))
	require.Equal(t, []uint32{1}, c.Evict(1).Blocks)
	require.NoError(t, c.Check())
	require.Equal(t, []uint32{2}, mustLookup(t, c, y, 0).Blocks)
	mustInsert(t, c, x, []uint32{3}, nil, 0, 0)
	for range 3 { // its insert and two lookups
		require.NoError(t, c.Release(y, 0))
	}
	require.Equal(t, []uint32{2}, c.Evict(1).Blocks, "the chain's head goes, x stays")
	require.NoError(t, c.Check())
	require.Equal(t, []uint32{3}, mustLookup(t, c, x, 0).Blocks)
}

// Many stamps of a few nodes leave stale heap entries; the heap is rebuilt
// and eviction still follows LRU.
func TestCache_CandidateHeapCompacts(t *testing.T) {
	c := newCache(t, Config{})
	a, b := toks(4, 1), toks(4, 50)
	mustInsert(t, c, a, []uint32{1}, nil, 0, 0)
	mustInsert(t, c, b, []uint32{2}, nil, 0, 0)
	require.NoError(t, c.Release(a, 0))
	require.NoError(t, c.Release(b, 0))
	for range 500 {
		mustLookup(t, c, a, 0)
		require.NoError(t, c.Release(a, 0))
	}
	require.Greater(t, len(c.cands), 400)
	mustInsert(t, c, toks(4, 90), []uint32{3}, nil, 0, 0) // newest, referenced
	require.Equal(t, []uint32{2}, c.Evict(1).Blocks)
	require.LessOrEqual(t, len(c.cands), 4*(len(c.nodes)-len(c.free))+64)
	require.NoError(t, c.Check())
	require.Equal(t, []uint32{1}, c.Evict(1).Blocks)
}
