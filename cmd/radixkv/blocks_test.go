package main

import (
	"os"
	"testing"

	"github.com/radixkv/radixkv/internal/coresim"
	"github.com/radixkv/radixkv/workload"
	"github.com/stretchr/testify/require"
)

// TestReplay_Blocks: --cache blocks reports the common fields, equals
// coresim.RunBlocks to the token, and sits near the tree on the same
// workload and pool.
func TestReplay_Blocks(t *testing.T) {
	args := []string{"--requests", "300", "--capacity", "40000"}
	m := replayJSON(t, append([]string{"--cache", "blocks"}, args...)...)
	for _, k := range []string{"hit_rate", "requests", "input_tokens", "computed_tokens", "prefill_tokens_saved", "cached_tokens"} {
		num(t, m, k)
	}
	require.Equal(t, "blocks", m["settings"].(map[string]any)["cache"])
	require.Nil(t, m["snapshots"])
	gc := workload.DefaultGenConfig()
	gc.Requests = 300
	reqs, err := workload.Generate(gc)
	require.NoError(t, err)
	st, err := coresim.RunBlocks(coresim.BlocksConfig{Capacity: 40000, BlockSize: 16}, reqs)
	require.NoError(t, err)
	require.Equal(t, float64(st.MatchedTokens), num(t, m, "hits", "device_tokens"))
	require.Equal(t, st.HitRate, num(t, m, "hit_rate"))
	require.Equal(t, float64(st.EvictedBlocks), num(t, m, "evictions", "nodes"))
	tree := replayJSON(t, append([]string{"--engine", "direct"}, args...)...)
	require.InDelta(t, num(t, tree, "hit_rate"), num(t, m, "hit_rate"), 0.1)

	code, out, errOut := cli(t, "replay", "--cache", "blocks", "--components", "full,mamba", "--mamba-capacity", "40", "--host-capacity", "320", "--requests", "300", "--capacity", "40000")
	require.Equal(t, 0, code, errOut)
	for _, want := range []string{"blocks (facade)", "ssm snapshots", "recompute", "state pool", "spilled"} {
		require.Contains(t, out, want)
	}
	hy := replayJSON(t, "--cache", "blocks", "--components", "full,mamba", "--mamba-capacity", "40", "--requests", "300", "--capacity", "40000")
	require.Greater(t, num(t, hy, "snapshots", "hits"), 0.0)
	require.Greater(t, num(t, hy, "snapshots", "recompute_tokens"), 0.0)
	require.Equal(t, num(t, hy, "hits", "device_tokens"), num(t, hy, "snapshots", "anchor_tokens")+num(t, hy, "snapshots", "recompute_tokens"))
}

// --mamba-policy marconi admits branch points, tunes alpha and reports
// the FLOPs saved; it saves more than lru on the built-in workload.
func TestReplay_BlocksMarconi(t *testing.T) {
	args := []string{"--cache", "blocks", "--components", "full,mamba", "--mamba-capacity", "12", "--requests", "300", "--capacity", "60000"}
	lru := replayJSON(t, args...)
	mar := replayJSON(t, append(args, "--mamba-policy", "marconi", "--marconi-window", "40")...)
	sn := mar["snapshots"].(map[string]any)
	require.Equal(t, "marconi", sn["policy"])
	require.Equal(t, "7b-hybrid", sn["model"])
	require.Greater(t, num(t, mar, "snapshots", "branches"), 0.0)
	require.GreaterOrEqual(t, num(t, mar, "snapshots", "tuned_at"), 40.0)
	require.Equal(t, -1.0, num(t, lru, "snapshots", "tuned_at"))
	require.Greater(t, num(t, mar, "snapshots", "flops_saved"), num(t, lru, "snapshots", "flops_saved"))
	require.Equal(t, num(t, lru, "hit_rate"), num(t, mar, "hit_rate"), "the KV side is the same")
	fixed := replayJSON(t, append(args, "--mamba-policy", "marconi", "--marconi-alpha", "1")...)
	require.Equal(t, 1.0, num(t, fixed, "snapshots", "alpha"))
	require.Equal(t, -1.0, num(t, fixed, "snapshots", "tuned_at"))
}

// Every engine gives the same block-cache report (the ABI path equals the
// direct one), snapshots included.
func TestReplay_BlocksEngines(t *testing.T) {
	args := []string{"--cache", "blocks", "--components", "full,mamba", "--mamba-capacity", "16", "--host-capacity", "160",
		"--requests", "200", "--capacity", "40000"}
	var want map[string]any
	for _, engine := range availableEngines(t) {
		m := replayJSON(t, append(args, "--engine", engine)...)
		require.Equal(t, engine, m["engine"])
		got := map[string]any{"hits": m["hits"], "snapshots": m["snapshots"], "evictions": m["evictions"],
			"cached": m["cached_tokens"], "canary": m["canary"]}
		if want == nil {
			want = got
			continue
		}
		require.Equal(t, want, got, engine)
	}
	require.Greater(t, want["snapshots"].(map[string]any)["spills"].(float64), 0.0)
}

func TestReplay_BlocksErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--cache", "heap"}, "unknown --cache"},
		{[]string{"--mamba-policy", "marconi"}, "put mamba in --components"},
		{[]string{"--components", "full,mamba", "--mamba-policy", "marconi", "--marconi-alpha", "1", "--marconi-window", "40"}, "no fixed --marconi-alpha"},
		{[]string{"--components", "full,mamba", "--marconi-alpha", "1"}, "needs --mamba-policy marconi"},
		{[]string{"--components", "full,mamba", "--mamba-policy", "arc"}, "unknown --mamba-policy"},
		{[]string{"--cache", "blocks", "--policy", "lfu"}, "least recently used blocks only"},
		{[]string{"--cache", "blocks", "--components", "full,swa"}, "no sliding-window"},
		{[]string{"--cache", "blocks", "--host-capacity", "1000"}, "no host KV tier"},
		{[]string{"--cache", "blocks", "--mamba-policy", "marconi"}, "applies to the SSM snapshots"},
		{[]string{"--cache", "blocks", "--components", "full,mamba", "--mamba-policy", "arc"}, "unknown --mamba-policy"},
		{[]string{"--cache", "blocks", "--components", "full,mamba", "--hybrid-model", "70b"}, "unknown --hybrid-model"},
		{[]string{"--cache", "blocks", "--components", "full,mamba", "--marconi-window", "0"}, "--marconi-window at least 1"},
	} {
		code, out, errOut := cli(t, append([]string{"replay", "--requests", "20"}, tc.args...)...)
		require.Equal(t, 1, code, tc.args)
		require.Empty(t, out)
		require.Contains(t, errOut, tc.want, tc.args)
	}
}

// On the shared trace the block cache and the tree give hit rates within a
// point of each other (same pool, block = page 16, LRU).
func TestReplay_BlocksSharedTrace(t *testing.T) {
	var path string
	for _, p := range sharedTraces {
		if _, err := os.Stat(p); err == nil {
			path = p
			break
		}
	}
	if path == "" || testing.Short() {
		t.Skip("shared trace not present (or -short)")
	}
	b := replayJSON(t, "--cache", "blocks", "--engine", "direct", "--trace", path, "--quiet")
	tr := replayJSON(t, "--engine", "direct", "--trace", path, "--quiet")
	t.Logf("hit rate: blocks %.4f tree %.4f", num(t, b, "hit_rate"), num(t, tr, "hit_rate"))
	require.InDelta(t, num(t, tr, "hit_rate"), num(t, b, "hit_rate"), 0.01)
}

// --mamba-policy marconi on the tree: the engines agree (the policy
// crosses the ABI), the report names the policy and counts state hits and
// FLOPs saved, and with a small state pool marconi saves at least as many
// FLOPs as lru on the built-in workload.
func TestReplay_TreeMarconi(t *testing.T) {
	args := []string{"--components", "full,mamba", "--mamba-capacity", "8", "--requests", "300"}
	lru := replayJSON(t, args...)
	var want map[string]any
	for _, engine := range availableEngines(t) {
		m := replayJSON(t, append(args, "--mamba-policy", "marconi", "--marconi-alpha", "1", "--engine", engine)...)
		got := map[string]any{"hits": m["hits"], "hybrid": m["hybrid"], "evictions": m["evictions"]}
		if want == nil {
			want = got
			continue
		}
		require.Equal(t, want, got, engine)
	}
	hy := want["hybrid"].(map[string]any)
	require.Equal(t, "marconi", hy["mamba_policy"])
	require.Equal(t, "7b-hybrid", hy["model"])
	require.Equal(t, 1.0, hy["mamba_alpha"])
	require.Greater(t, hy["mamba_hits"].(float64), 0.0)
	require.Equal(t, "lru", lru["hybrid"].(map[string]any)["mamba_policy"])
	require.GreaterOrEqual(t, hy["mamba_flops_saved"].(float64), num(t, lru, "hybrid", "mamba_flops_saved"))
}

// With alpha left to tune, the tree's marconi tunes it online (through
// the engine's mamba_set_alpha), the same on every engine.
func TestReplay_TreeMarconiTuned(t *testing.T) {
	args := []string{"--components", "full,mamba", "--mamba-capacity", "8", "--requests", "300", "--mamba-policy", "marconi", "--marconi-window", "40"}
	var want any
	for _, engine := range availableEngines(t) {
		m := replayJSON(t, append(args, "--engine", engine)...)
		if want == nil {
			want = m["hybrid"]
			continue
		}
		require.Equal(t, want, m["hybrid"], engine)
	}
	hy := want.(map[string]any)
	require.Greater(t, hy["mamba_tunes"].(float64), 1.0)
	require.GreaterOrEqual(t, hy["mamba_tuned_at"].(float64), 40.0)
}
