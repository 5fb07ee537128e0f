package wasmmod_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/radixkv/radixkv/abi"
	"github.com/radixkv/radixkv/core"
)

// TestModule_MemoryBoundedUnderChurn: instances created, filled and
// destroyed over and over leave linear memory flat. Before the module
// yielded to the Go scheduler, its collector's background workers never
// ran in the reactor and memory grew with every cycle.
func TestModule_MemoryBoundedUnderChurn(t *testing.T) {
	g := newFastGuest(t)
	toks := make([]uint32, 2048)
	slots := make([]int32, 2048)
	for i := range toks {
		toks[i], slots[i] = uint32(i), int32(i)
	}
	var h uint32
	cycle := func() {
		out := g.roundTrip(abi.AppendRequest(nil, &abi.Request{Op: abi.OpCreate, Config: core.Config{PageSize: 1}}))
		var r abi.Response
		require.NoError(t, abi.DecodeResponse(&r, out))
		h = r.Handle
		for k := range 4 {
			toks[0] = uint32(k)
			g.roundTrip(abi.AppendRequest(nil, &abi.Request{Op: abi.OpInsert, Instance: h, Insert: core.InsertParams{Tokens: toks, Slots: slots}}))
		}
		g.roundTrip(abi.AppendRequest(nil, &abi.Request{Op: abi.OpDestroy, Instance: h}))
	}
	for range 2000 {
		cycle()
	}
	before := g.g.mod.Memory().Size()
	for range 6000 {
		cycle()
	}
	after := g.g.mod.Memory().Size()
	t.Logf("linear memory %d MiB after warm-up, %d MiB after 6,000 more cycles", before>>20, after>>20)
	require.LessOrEqual(t, after, before+8<<20)
}
