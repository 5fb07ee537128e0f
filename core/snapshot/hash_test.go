package snapshot

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Vectors computed from the algorithm of SNAPSHOTS.md §2 (an independent
// Python rendering of it), not from this code.
func TestHash_Vectors(t *testing.T) {
	cases := []struct {
		tokens  []uint32
		adapter uint64
		want    uint64
	}{
		{nil, 0, 0xcbf29ce484222325},
		{nil, 7, 0xaf63ba4c8601b2c6},
		{[]uint32{1}, 0, 0xaf63bc4c8601b62c},
		{[]uint32{1, 2, 3}, 0, 0xd0aa6218672cf5ab},
		{[]uint32{1, 2, 3}, 5, 0x35e2c655f3a39860},
		{[]uint32{0xffffffff}, 0, 0x6b1d723e79fe466e},
		{[]uint32{0, 0}, 0, 0x08328807b4eb6fed},
		{[]uint32{1, 2, 3}, 1<<63 | 1, 0x35cd76774c7a8aa4},
	}
	for _, c := range cases {
		require.Equal(t, c.want, Hash(c.tokens, c.adapter), "%v adapter %d", c.tokens, c.adapter)
	}
}

// §9 (5): adapter 0 is the plain hash; other adapters differ.
func TestHash_AdapterZeroIsPlain(t *testing.T) {
	toks := []uint32{10, 20, 30, 40}
	plain := uint64(fnvBasis)
	for _, tk := range toks {
		plain = (plain ^ uint64(tk)) * fnvPrime
	}
	require.Equal(t, plain, Hash(toks, 0))
	require.NotEqual(t, Hash(toks, 0), Hash(toks, 1))
	require.NotEqual(t, Hash(toks, 1), Hash(toks, 2))
}

// The adapter fold looks like a leading token: the structural collision
// that makes the index check an entry's adapter and length on lookup.
func TestHash_AdapterFoldCollidesWithLeadingToken(t *testing.T) {
	require.Equal(t, Hash([]uint32{1, 2, 3}, 0), Hash([]uint32{2, 3}, 1))
}

func TestHash_PrefixHashes(t *testing.T) {
	toks := []uint32{5, 6, 7, 8}
	hs := appendPrefixHashes(nil, toks, 3, 9)
	require.Len(t, hs, 4)
	for i, h := range hs {
		require.Equal(t, Hash(toks[:i], 9), h)
	}
}
