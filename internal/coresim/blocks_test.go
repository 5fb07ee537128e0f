package coresim_test

import (
	"errors"
	"testing"

	"github.com/radixkv/radixkv/internal/coresim"
	"github.com/radixkv/radixkv/workload"
	"github.com/stretchr/testify/require"
)

// The block replay of the hand-checked sequence of TestRun_HandChecked,
// in a pool of 8 blocks of 4:
//
//	r0 0..15              miss      A0..A3                          free 4
//	r1 0..7 100..107      hit 8     B0 B1 after A1                  free 2
//	r2 0..15 200 201      hit 16    partial (200 201) after A3      free 1
//	r3 300..315           miss      evicts B1, B0, A3 + its partial  free 1
//	r4 0..7 100..107      hit 8     evicts A2                       free 0
//
// The same 32 matched tokens as the tree.
func TestRunBlocks_HandChecked(t *testing.T) {
	reqs := []workload.Request{
		req(seq(0, 16)),
		req(seq(0, 8), seq(100, 108)),
		req(seq(0, 16), seq(200, 202)),
		req(seq(300, 316)),
		req(seq(0, 8), seq(100, 108)),
	}
	st, err := coresim.RunBlocks(coresim.BlocksConfig{Capacity: 32, BlockSize: 4, SanityEvery: 1}, reqs)
	require.NoError(t, err)
	require.Equal(t, 5, st.Requests)
	require.Equal(t, int64(82), st.InputTokens)
	require.Equal(t, int64(32), st.MatchedTokens)
	require.Equal(t, int64(5), st.EvictedBlocks)
	require.Equal(t, 2, st.Evictions)
	require.Equal(t, 0, st.FreeBlocks)
	require.Equal(t, int64(32/4), st.CanaryChecked)
}

func generated(t *testing.T, n int) []workload.Request {
	gc := workload.DefaultGenConfig()
	gc.Requests = n
	if testing.Short() {
		gc.Requests = n / 5
	}
	gc.Tenants = 3
	reqs, err := workload.Generate(gc)
	require.NoError(t, err)
	return reqs
}

// TestRunBlocks_Deterministic replays a generated workload with and
// without snapshots, with a sanity check after every request, twice.
func TestRunBlocks_Deterministic(t *testing.T) {
	reqs := generated(t, 300)
	for _, cfg := range []coresim.BlocksConfig{
		{Capacity: 60000, BlockSize: 16},
		{Capacity: 60000, BlockSize: 16, States: 64},
		{Capacity: 60000, BlockSize: 16, States: 32, TierStates: 16},
		{Capacity: 60000, BlockSize: 16, States: 32, Output: true, OutputToken: func(k, j int) uint32 { return 1<<31 | uint32(k<<12+j) }},
	} {
		cfg.SanityEvery = 1
		a, err := coresim.RunBlocks(cfg, reqs)
		require.NoError(t, err)
		cfg.SanityEvery = 0
		b, err := coresim.RunBlocks(cfg, reqs)
		require.NoError(t, err)
		require.Equal(t, a, b)
		require.NotZero(t, a.EvictedBlocks, "workload too easy")
		require.NotZero(t, a.MatchedTokens)
		if cfg.States > 0 {
			s := a.Snapshots
			if !cfg.Output { // a finish leaf after decoding serves only a prompt that repeats the output
				require.NotZero(t, s.Hits)
			}
			require.NotZero(t, s.Evictions)
			require.LessOrEqual(t, s.AnchorTokens, a.MatchedTokens)
			require.Equal(t, a.MatchedTokens, s.AnchorTokens+s.RecomputeTokens)
			if cfg.TierStates > 0 {
				require.NotZero(t, s.Spills)
			}
			t.Logf("states %d tier %d: kv hit %.4f, effective %.4f, %+v", cfg.States, cfg.TierStates, a.HitRate, s.EffectiveHitRate, *s)
		} else {
			t.Logf("kv hit %.4f evicted %d blocks", a.HitRate, a.EvictedBlocks)
		}
	}
}

// The tree replay and the block replay of one workload and pool give
// similar hit rates (they differ only in eviction granularity).
func TestRunBlocks_NearTheTree(t *testing.T) {
	reqs := generated(t, 300)
	tr, err := coresim.Run(coresim.Config{Capacity: 60000, PageSize: 16}, reqs)
	require.NoError(t, err)
	bl, err := coresim.RunBlocks(coresim.BlocksConfig{Capacity: 60000, BlockSize: 16}, reqs)
	require.NoError(t, err)
	t.Logf("tree %.4f blocks %.4f", tr.HitRate, bl.HitRate)
	require.InDelta(t, tr.HitRate, bl.HitRate, 0.1)
}

func TestRunBlocks_Errors(t *testing.T) {
	_, err := coresim.RunBlocks(coresim.BlocksConfig{Capacity: 8, BlockSize: 16}, nil)
	require.Error(t, err)
	_, err = coresim.RunBlocks(coresim.BlocksConfig{Capacity: 32, BlockSize: 4}, []workload.Request{req(seq(0, 40))})
	require.True(t, errors.Is(err, coresim.ErrCapacity), "%v", err)
	_, err = coresim.RunBlocks(coresim.BlocksConfig{Capacity: 64, BlockSize: 4, Output: true}, nil)
	require.Error(t, err)
}

// Marconi: branch-point admission, utility eviction and the one-off alpha
// tuning run deterministically with sane structures after every request.
func TestRunBlocks_Marconi(t *testing.T) {
	reqs := generated(t, 300)
	cfg := coresim.BlocksConfig{Capacity: 60000, BlockSize: 16, States: 12, Policy: "marconi", Alpha: -1, TuneWindow: 40, SanityEvery: 1}
	a, err := coresim.RunBlocks(cfg, reqs)
	require.NoError(t, err)
	cfg.SanityEvery = 0
	b, err := coresim.RunBlocks(cfg, reqs)
	require.NoError(t, err)
	require.Equal(t, a, b)
	s := a.Snapshots
	require.NotZero(t, s.Branches)
	require.GreaterOrEqual(t, s.TunedAt, 40)
	require.Greater(t, s.FLOPsSaved, 0.0)
	lru, err := coresim.RunBlocks(coresim.BlocksConfig{Capacity: 60000, BlockSize: 16, States: 12}, reqs)
	require.NoError(t, err)
	t.Logf("marconi: %d hits, %.3e FLOPs saved, alpha %.1f tuned after request %d; lru: %d hits, %.3e FLOPs",
		s.Hits, s.FLOPsSaved, s.Alpha, s.TunedAt, lru.Snapshots.Hits, lru.Snapshots.FLOPsSaved)
	for _, bad := range []coresim.BlocksConfig{
		{Capacity: 64, BlockSize: 4, States: 2, Policy: "fifo"},
		{Capacity: 64, BlockSize: 4, States: 2, Admission: "all"},
		{Capacity: 64, BlockSize: 4, States: 2, Policy: "marconi", TuneWindow: -1},
	} {
		_, err := coresim.RunBlocks(bad, nil)
		require.Error(t, err, "%+v", bad)
	}
}
