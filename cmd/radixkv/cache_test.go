package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMain points the user's cache directory at a temporary one, so the
// tests never write compiled code into the real ~/.cache.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "radixkv-cache-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CACHE_HOME", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// TestReplay_WasmCache: the first wasm replay fills the compilation cache
// directory, the second reuses it (same report apart from timings), and
// --wasm-cache=off runs without one.
func TestReplay_WasmCache(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "wazero")
	args := []string{"replay", "--engine", "wasm", "--requests", "50", "--json", "--wasm-cache", dir}
	var reports []map[string]any
	for range 2 {
		code, out, errOut := cli(t, args...)
		require.Equal(t, 0, code, errOut)
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &m))
		tp := m["throughput"].(map[string]any)
		require.Greater(t, tp["startup_seconds"].(float64), 0.0)
		delete(m, "throughput")
		delete(m, "latency_ns")
		reports = append(reports, m)
	}
	require.Equal(t, reports[0], reports[1])
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.NotEmpty(t, entries, "the cache directory holds the compiled module")

	code, _, errOut := cli(t, "replay", "--engine", "wasm", "--requests", "20", "--wasm-cache", "off")
	require.Equal(t, 0, code, errOut)
}

// TestReplay_WasmCacheUnusable: a cache path that cannot be a directory
// fails with the flag's name and the way out.
func TestReplay_WasmCacheUnusable(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o600))
	code, _, errOut := cli(t, "replay", "--engine", "wasm", "--requests", "5", "--wasm-cache", file)
	require.Equal(t, exitError, code)
	require.Contains(t, errOut, "--wasm-cache "+file)
	require.Contains(t, errOut, "--wasm-cache=off")
}
