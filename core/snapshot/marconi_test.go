package snapshot

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func newMarconi(t *testing.T, alpha float64) *Index {
	x, err := New(Config{Marconi: &MarconiConfig{Model: Model7BHybrid, Alpha: alpha}})
	require.NoError(t, err)
	return x
}

// With alpha 0 Marconi is LRU; with a large alpha a state that saves
// little over its parent goes before an older one that saves much.
func TestMarconi_UtilityOrder(t *testing.T) {
	s := seq(4096)
	build := func(alpha float64) *Index {
		x := newMarconi(t, alpha)
		ins(t, x, s[:4000], 1, 0)             // deep, saves a lot over nothing, oldest
		ins(t, x, []uint32{1, 2, 3}, 2, 0)    // shallow: saves little
		ins(t, x, []uint32{7, 7, 7, 7}, 3, 0) // shallow, newest
		return x
	}
	x := build(0)
	require.Equal(t, []int32{1, 2, 3}, []int32{evict(t, x), evict(t, x), evict(t, x)})
	x = build(2)
	require.Equal(t, int32(2), evict(t, x), "the shallow older state goes first")
	require.Equal(t, int32(3), evict(t, x))
}

// A state that extends another saves only the difference: a long child of
// a long parent is worth less than its length suggests.
func TestMarconi_SavedRelativeToParent(t *testing.T) {
	s := seq(4096)
	x := newMarconi(t, 8)
	ins(t, x, s[:3000], 1, 0)
	ins(t, x, s[:3100], 2, 0) // 100 tokens past its parent
	ins(t, x, seq(1000), 3, 0)
	// seq(1000) is s[:1000]: it is the parent of slot 1 now.
	require.NoError(t, x.Check())
	require.Equal(t, int32(2), evict(t, x), "saves the least over its parent")
}

// Branch points (two children) are kept while other candidates exist.
func TestMarconi_BranchPointProtected(t *testing.T) {
	x := newMarconi(t, 0)
	a := []uint32{1, 2, 3, 4}
	ins(t, x, a, 1, 0) // oldest, would be LRU's victim
	ins(t, x, append(append([]uint32{}, a...), 5, 6), 2, 0)
	ins(t, x, append(append([]uint32{}, a...), 8, 9), 3, 0)
	require.Equal(t, int32(2), evict(t, x), "the branch point at slot 1 is kept")
	require.Equal(t, int32(1), evict(t, x), "one child left: no longer a branch point")
}

func TestMarconi_ConfigAndAlpha(t *testing.T) {
	_, err := New(Config{Marconi: &MarconiConfig{Model: Model{D: 1, N: 1}}})
	require.ErrorIs(t, err, ErrInvalidConfig)
	_, err = New(Config{Marconi: &MarconiConfig{Model: Model7BHybrid, Alpha: -1}})
	require.ErrorIs(t, err, ErrInvalidConfig)
	x := newMarconi(t, 0)
	require.NoError(t, x.SetAlpha(1.5))
	require.Equal(t, 1.5, x.Alpha())
	require.ErrorIs(t, x.SetAlpha(9), ErrInvalidArgument)
	plain := newIndex(t, Config{})
	require.ErrorIs(t, plain.SetAlpha(1), ErrInvalidArgument)
}

// A clone evolves independently of its original.
func TestIndex_Clone(t *testing.T) {
	for _, x := range []*Index{newIndex(t, Config{}), newMarconi(t, 1)} {
		s := seq(64)
		ins(t, x, s[:16], 1, 0)
		ins(t, x, s[:32], 2, 0)
		y := x.Clone()
		require.NoError(t, y.Check())
		ins(t, y, s[:48], 3, 0)
		evict(t, y)
		require.Equal(t, 2, x.Len())
		require.NoError(t, x.Check())
		require.Equal(t, int32(2), look(t, x, s, 64, 0).Slot)
		require.NoError(t, y.Check())
	}
}
