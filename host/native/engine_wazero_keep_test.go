package native

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/radixkv/radixkv/core"
)

// TestWasmEngine_CallKeeping: the wasm engine sends its matches by
// radixkv_call_keeping where the module has it, and by radixkv_call (as
// against a module that predates the export) where it does not; the
// inserts that name those matches leave the tree the direct engine's
// either way, also when a match outgrows its keep region.
func TestWasmEngine_CallKeeping(t *testing.T) {
	for _, keep := range []bool{true, false} {
		rt, err := SharedWasmRuntime()
		require.NoError(t, err)
		g, err := rt.instantiate(context.Background())
		require.NoError(t, err)
		require.True(t, g.canKeep())
		if !keep {
			g.callKeep = nil
		}
		cfg := core.Config{PageSize: 2}
		w, err := newWireEngine(cfg, g)
		require.NoError(t, err)
		t.Cleanup(func() { w.Close() })
		d, err := NewDirectEngine(cfg)
		require.NoError(t, err)
		t.Cleanup(func() { d.Close() })
		ns := core.Namespace{CacheSalt: "k"}
		for _, n := range []int{8, 12, 40_000, 6, 100_000} { // 40k and 100k tokens outgrow the regions
			toks := seq(1, n)
			for _, e := range []Engine{d, w} {
				m, err := e.Match(nil, ns, toks)
				require.NoError(t, err)
				sl := append(append([]int32(nil), m.Indices...), seqSlots(1_000_000, n-len(m.Indices))...)
				st, err := e.BeginInsert(core.InsertParams{Namespace: ns, Tokens: toks, Slots: sl, PrevPrefixLen: len(m.Indices)})
				require.NoError(t, err)
				require.True(t, st.Done)
			}
			requireSameTrees(t, d, w)
		}
		require.Equal(t, keep, g.keep[0].ptr != 0 || g.keep[1].ptr != 0, "keep regions used")
	}
}
