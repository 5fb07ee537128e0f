package native

import (
	"slices"
	"testing"

	"github.com/radixkv/radixkv/core"
	"github.com/stretchr/testify/require"
)

// TestEngines_Protect: every engine protects a queued request's prefix the
// same way: its leaf goes after the unprotected one, and a released or
// unknown serial is refused with ErrInvalidArgument.
func TestEngines_Protect(t *testing.T) {
	var freedBy [][]int32
	forEachEngine(t, func(t *testing.T, ctor engineCtor) {
		e := newEngine(t, ctor, core.Config{PageSize: 2})
		_, _, err := e.Insert(core.InsertParams{Tokens: []uint32{1, 2, 3, 4}, Slots: []int32{0, 1, 2, 3}})
		require.NoError(t, err)
		_, _, err = e.Insert(core.InsertParams{Tokens: []uint32{5, 6, 7, 8}, Slots: []int32{4, 5, 6, 7}})
		require.NoError(t, err)
		// The older request waits in the queue: protect it.
		p, err := e.Protect(core.Namespace{}, []uint32{1, 2, 3, 4, 9})
		require.NoError(t, err)
		require.Equal(t, 4, p.Len)
		acts, freed, err := e.Evict(core.Full, 4, nil)
		require.NoError(t, err)
		require.Equal(t, 4, freed)
		var slots []int32
		for _, a := range acts {
			slots = append(slots, a.Slots...)
		}
		slices.Sort(slots)
		require.Equal(t, []int32{4, 5, 6, 7}, slots, "the unprotected leaf goes first")
		require.NoError(t, e.SanityCheck())
		require.NoError(t, e.Unprotect(p.Serial))
		require.ErrorIs(t, e.Unprotect(p.Serial), core.ErrInvalidArgument)
		require.ErrorIs(t, e.Unprotect(1<<63), core.ErrInvalidArgument)
		freedBy = append(freedBy, slots)
	})
	for _, s := range freedBy[1:] {
		require.Equal(t, freedBy[0], s)
	}
}
