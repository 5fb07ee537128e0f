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
		// Instance 2 is hybrid, so that SWA and Mamba ops find data. Its
		// components (and instance 3's) are listed out of the canonical
		// order, which the guest must not mind.
		abi.AppendRequest(nil, &abi.Request{Op: abi.OpCreate, Config: core.Config{PageSize: 1,
			Components: []core.Component{core.Mamba, core.SWA, core.Full}, SWAWindow: 2, MambaMaxPathStates: 1}}),
		abi.AppendRequest(nil, &abi.Request{Op: abi.OpInsert, Instance: 2,
			Insert: core.InsertParams{Tokens: []uint32{1, 2, 3, 4}, Slots: []int32{1, 2, 3, 4}, MambaSlot: 9}}),
		// Instance 3 has a write-back host tier with SWA (window 2): the
		// insert's leaf [3 4] (the first node allocated) is backed up and
		// demoted, so the host-tier ops find host data.
		abi.AppendRequest(nil, &abi.Request{Op: abi.OpCreate, Config: core.Config{PageSize: 1,
			Components: []core.Component{core.SWA, core.Full}, SWAWindow: 2, HostTier: true, WritePolicy: core.WriteBack}}),
		abi.AppendRequest(nil, &abi.Request{Op: abi.OpInsert, Instance: 3,
			Insert: core.InsertParams{Tokens: []uint32{1, 2, 3, 4}, Slots: []int32{1, 2, 3, 4}}}),
		abi.AppendRequest(nil, &abi.Request{Op: abi.OpCommitBackup, Instance: 3, Node: firstNode(3),
			Backup: core.BackupCommit{Full: []int32{10, 11}, SWA: [][]int32{{20, 21}}, Mamba: -1}}),
		abi.AppendRequest(nil, &abi.Request{Op: abi.OpDemote, Instance: 3, Node: firstNode(3)}),
		abi.AppendRequest(nil, &abi.Request{Op: abi.OpInsert, Instance: 3,
			Insert: core.InsertParams{Tokens: []uint32{5, 6}, Slots: []int32{5, 6}}}),
		// Instance 4: write-through with the external linker.
		abi.AppendRequest(nil, &abi.Request{Op: abi.OpCreate, Config: core.Config{PageSize: 1, HostTier: true, ExternalLinker: true}}),
		abi.AppendRequest(nil, &abi.Request{Op: abi.OpInsert, Instance: 4,
			Insert: core.InsertParams{Tokens: []uint32{1, 2, 3}, Slots: []int32{1, 2, 3}}}),
	}
	ctx := context.Background()
	// Compile before fuzzing: go test -fuzz runs the target body in every
	// worker process before its first input, and kills an input that runs
	// over 10 s, which a compile inside the fuzz function (seconds, tens
	// of seconds on a loaded machine) would. Each input then costs one
	// instantiation (a few ms) and the setup calls; internal/abifuzz
	// drives one long-lived instance instead, at tens of thousands of
	// calls per second.
	compiled, err := shared()
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, b []byte) {
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

// firstNode is the wire id of the first node inserted into instance h
// (arena slot 1, generation 1; the Go guest's scheme, see abi/dispatch).
func firstNode(h uint32) core.NodeID {
	return abi.TagID(core.NodeID(1<<32|2), dispatch.Tag(h))
}
