package wasmmod_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/radixkv/radixkv/abi"
	"github.com/radixkv/radixkv/abi/dispatch"
	"github.com/radixkv/radixkv/wasmmod"
)

type vector struct {
	Name     string `json:"name"`
	Request  string `json:"request"`
	Response string `json:"response"`
}

func loadVectors(t *testing.T) []vector {
	b, err := os.ReadFile("../abi/testdata/vectors.json")
	require.NoError(t, err)
	var vs []vector
	require.NoError(t, json.Unmarshal(b, &vs))
	require.NotEmpty(t, vs)
	return vs
}

// guest is an instantiated radixkv module.
type guest struct {
	mod               api.Module
	alloc, free, call api.Function
}

// shared compiles the module once for all tests (compiling 3 MB of
// WebAssembly dominates the package's run time), through an on-disk
// compilation cache so that later test processes, and every worker
// process of go test -fuzz, load the compiled code instead.
var shared = sync.OnceValues(func() (wazero.CompiledModule, error) {
	ctx := context.Background()
	cfg := wazero.NewRuntimeConfig()
	if dir, err := os.UserCacheDir(); err == nil {
		if cache, err := wazero.NewCompilationCacheWithDir(filepath.Join(dir, "radixkv", "wazero-test")); err == nil {
			cfg = cfg.WithCompilationCache(cache)
		}
	}
	rt = wazero.NewRuntimeWithConfig(ctx, cfg)
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	return rt.CompileModule(ctx, wasmmod.Module)
})

var rt wazero.Runtime

// instantiate gives each test its own, anonymous instance of the module.
func instantiate(t testing.TB) *guest {
	ctx := context.Background()
	compiled, err := shared()
	require.NoError(t, err)
	// A c-shared (reactor) module has no _start; _initialize sets up the
	// Go runtime and must run once before any other export.
	mod, err := rt.InstantiateModule(ctx, compiled, wazero.NewModuleConfig().WithName("").WithStartFunctions("_initialize"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = mod.Close(ctx) })
	g := &guest{mod: mod, alloc: mod.ExportedFunction("radixkv_alloc"),
		free: mod.ExportedFunction("radixkv_free"), call: mod.ExportedFunction("radixkv_call")}
	require.NotNil(t, g.alloc)
	require.NotNil(t, g.free)
	require.NotNil(t, g.call)
	return g
}

// roundTrip copies req into a guest buffer, calls, and copies the
// response out, checking every memory access.
func (g *guest) roundTrip(t testing.TB, req []byte) []byte {
	ctx := context.Background()
	res, err := g.alloc.Call(ctx, uint64(len(req)))
	require.NoError(t, err)
	ptr := uint32(res[0])
	defer func() { _, err := g.free.Call(ctx, uint64(ptr)); require.NoError(t, err) }()
	require.True(t, g.mod.Memory().Write(ptr, req), "write request")
	res, err = g.call.Call(ctx, uint64(ptr), uint64(len(req)))
	require.NoError(t, err)
	out, ok := g.mod.Memory().Read(uint32(res[0]>>32), uint32(res[0]))
	require.True(t, ok, "read response")
	return bytes.Clone(out)
}

func TestModule_Exports(t *testing.T) {
	g := instantiate(t)
	var names []string
	for name := range g.mod.ExportedFunctionDefinitions() {
		names = append(names, name)
	}
	sort.Strings(names)
	require.Equal(t, []string{"_initialize", "radixkv_abi_version", "radixkv_alloc", "radixkv_call", "radixkv_call_keeping", "radixkv_free"}, names)
	v, err := g.mod.ExportedFunction("radixkv_abi_version").Call(context.Background())
	require.NoError(t, err)
	require.Equal(t, uint64(abi.Version), v[0])
}

// TestModule_GoldenVectors runs every golden vector through the module
// and through the in-process dispatcher: both must give the committed
// response bytes.
func TestModule_GoldenVectors(t *testing.T) {
	g := instantiate(t)
	d := dispatch.New()
	for _, v := range loadVectors(t) {
		req, err := hex.DecodeString(v.Request)
		require.NoError(t, err)
		want, err := hex.DecodeString(v.Response)
		require.NoError(t, err)
		require.Equal(t, want, d.Call(req), "%s: in-process", v.Name)
		require.Equal(t, hex.EncodeToString(want), hex.EncodeToString(g.roundTrip(t, req)), "%s: wasm", v.Name)
	}
}

func TestModule_CallOutsideAllocation(t *testing.T) {
	g := instantiate(t)
	ctx := context.Background()
	res, err := g.alloc.Call(ctx, 8)
	require.NoError(t, err)
	for _, c := range [][2]uint64{{res[0], 9}, {res[0] + 1, 4}, {0, 0}} {
		out, err := g.call.Call(ctx, c[0], c[1])
		require.NoError(t, err)
		b, ok := g.mod.Memory().Read(uint32(out[0]>>32), uint32(out[0]))
		require.True(t, ok)
		var r abi.Response
		require.NoError(t, abi.DecodeResponse(&r, b))
		require.Equal(t, abi.CodeMalformed, r.Code, r.Message)
	}
	_, err = g.free.Call(ctx, res[0])
	require.NoError(t, err)
	_, err = g.free.Call(ctx, res[0]) // freeing twice is harmless
	require.NoError(t, err)
	out, err := g.call.Call(ctx, res[0], 0)
	require.NoError(t, err)
	b, ok := g.mod.Memory().Read(uint32(out[0]>>32), uint32(out[0]))
	require.True(t, ok)
	var r abi.Response
	require.NoError(t, abi.DecodeResponse(&r, b))
	require.Equal(t, abi.CodeMalformed, r.Code, "a freed buffer is no longer accepted")
}
