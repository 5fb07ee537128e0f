package native

import (
	"testing"

	"github.com/radixkv/radixkv/core"
	"github.com/stretchr/testify/require"
)

// Every engine sets marconi's alpha, refuses a bad one or a tree under lru
// with core's error, and then evicts as the direct engine does.
func TestEngine_SetMambaAlpha(t *testing.T) {
	mamba := []core.Component{core.Full, core.Mamba}
	forEachEngine(t, func(t *testing.T, newEng engineCtor) {
		e := newEngine(t, newEng, core.Config{PageSize: 1, Components: mamba, MambaPolicy: "marconi"})
		s, ok := e.(MambaAlphaSetter)
		require.True(t, ok)
		require.ErrorIs(t, s.SetMambaAlpha(-1), core.ErrInvalidArgument)
		require.Zero(t, e.Config().MambaAlpha)
		// Alpha 0 would take the older, long state; 8 keeps it.
		_, _, err := e.Insert(core.InsertParams{Tokens: seq(1, 64), Slots: slotRange(0, 64), MambaSlot: 10})
		require.NoError(t, err)
		_, _, err = e.Insert(core.InsertParams{Tokens: seq(500, 2), Slots: slotRange(100, 2), MambaSlot: 11})
		require.NoError(t, err)
		require.NoError(t, s.SetMambaAlpha(8))
		require.Equal(t, 8.0, e.Config().MambaAlpha)
		acts, freed, err := e.Evict(core.Mamba, 1, nil)
		require.NoError(t, err)
		require.Equal(t, 1, freed)
		require.Equal(t, []int32{11}, acts[0].Slots)

		lru := newEngine(t, newEng, core.Config{PageSize: 1, Components: mamba})
		require.ErrorIs(t, lru.(MambaAlphaSetter).SetMambaAlpha(1), core.ErrInvalidArgument)
	})
}

func slotRange(from, n int) []int32 {
	out := make([]int32, n)
	for k := range out {
		out[k] = int32(from + k)
	}
	return out
}
