package wasmmod_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"

	"github.com/radixkv/radixkv/abi"
	"github.com/radixkv/radixkv/abi/dispatch"
	"github.com/radixkv/radixkv/core"
)

// FuzzModuleCall feeds arbitrary bytes to the module's call entry, after a
// little setup so that handles and receipts exist. The module must never
// trap, must always answer a well-formed response, and must answer exactly
// what the in-process dispatcher answers to the same command stream.
func FuzzModuleCall(f *testing.F) {
	raw, err := os.ReadFile("../abi/testdata/vectors.json")
	require.NoError(f, err)
	var vs []vector
	require.NoError(f, json.Unmarshal(raw, &vs))
	for _, v := range vs {
		b, err := hex.DecodeString(v.Request)
		require.NoError(f, err)
		f.Add(b)
	}
	setup := [][]byte{
		abi.AppendRequest(nil, &abi.Request{Op: abi.OpCreate, Config: core.Config{PageSize: 1}}),
		abi.AppendRequest(nil, &abi.Request{Op: abi.OpInsert, Instance: 1,
			Insert: core.InsertParams{Tokens: []uint32{1, 2, 3}, Slots: []int32{1, 2, 3}}}),
		// Instance 2 is hybrid, so that SWA and Mamba ops find data.
		abi.AppendRequest(nil, &abi.Request{Op: abi.OpCreate, Config: core.Config{PageSize: 1,
			Components: []core.Component{core.Full, core.SWA, core.Mamba}, SWAWindow: 2, MambaMaxPathStates: 1}}),
		abi.AppendRequest(nil, &abi.Request{Op: abi.OpInsert, Instance: 2,
			Insert: core.InsertParams{Tokens: []uint32{1, 2, 3, 4}, Slots: []int32{1, 2, 3, 4}, MambaSlot: 9}}),
	}
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, b []byte) {
		compiled, err := shared()
		require.NoError(t, err)
		mod, err := rt.InstantiateModule(ctx, compiled, wazero.NewModuleConfig().WithName("").WithStartFunctions("_initialize"))
		require.NoError(t, err)
		defer mod.Close(ctx)
		g := &guest{mod: mod, alloc: mod.ExportedFunction("radixkv_alloc"),
			free: mod.ExportedFunction("radixkv_free"), call: mod.ExportedFunction("radixkv_call")}
		d := dispatch.New()
		for _, s := range setup {
			require.Equal(t, d.Call(s), g.roundTrip(t, s))
		}
		want := d.Call(b)
		got := g.roundTrip(t, b) // fails on a trap or an out-of-range response
		require.Equal(t, hex.EncodeToString(want), hex.EncodeToString(got))
		var r abi.Response
		require.NoError(t, abi.DecodeResponse(&r, got))
		if r.Status == abi.StatusError {
			require.NotEqual(t, abi.CodeInternal, r.Code, r.Message)
		}
	})
}
