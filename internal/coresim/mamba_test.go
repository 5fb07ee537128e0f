package coresim_test

import (
	"testing"

	"github.com/radixkv/radixkv/internal/coresim"
	"github.com/radixkv/radixkv/workload"
	"github.com/stretchr/testify/require"
)

// A hand-checked hybrid replay at page 4, chunk 8: under branch admission
// the second request's match ends inside the first's run (no state at 8),
// so it checkpoints there, and the third resumes from that state.
func TestRunMamba_BranchAdmission(t *testing.T) {
	reqs := []workload.Request{
		req(seq(0, 16)),               // miss; state at 16
		req(seq(0, 8), seq(100, 108)), // KV hit 8 but no state: miss; states at 8 and 16
		req(seq(0, 8), seq(200, 208)), // resumes from the branch state: hit 8
	}
	st, err := coresim.RunMamba(coresim.MambaConfig{Capacity: 64, PageSize: 4, States: 8, Policy: "marconi", Alpha: 1, SanityEvery: 1}, reqs)
	require.NoError(t, err)
	require.Equal(t, 1, st.Hits)
	require.Equal(t, int64(8), st.HitTokens)
	require.Equal(t, int64(1), st.Branches)
	require.Equal(t, int64(4), st.Admitted)
	require.Equal(t, 1.0, st.Alpha)
	// Leaf admission never checkpoints the branch: the third misses too.
	st, err = coresim.RunMamba(coresim.MambaConfig{Capacity: 64, PageSize: 4, States: 8, Admission: "leaf", SanityEvery: 1}, reqs)
	require.NoError(t, err)
	require.Zero(t, st.Hits)
	// Chunk admission (every 8) has a state at 8 after the first request.
	st, err = coresim.RunMamba(coresim.MambaConfig{Capacity: 64, PageSize: 4, States: 8, Chunk: 8, SanityEvery: 1}, reqs)
	require.NoError(t, err)
	require.Equal(t, 2, st.Hits)
	require.Equal(t, int64(16), st.HitTokens)
}

// Generated workloads under both policies and every admission, with small
// pools (evicting states all the time), a sanity check after every
// request, online tuning, and the slot accounting RunMamba checks; a second
// run gives the same statistics.
func TestRunMamba_Deterministic(t *testing.T) {
	reqs := generated(t, 300)
	for _, cfg := range []coresim.MambaConfig{
		{Capacity: 60000, PageSize: 16, States: 8},
		{Capacity: 20000, PageSize: 16, States: 4, Admission: "leaf"},
		{Capacity: 60000, PageSize: 16, States: 8, Policy: "marconi", Alpha: -1, TuneWindow: 40, RetuneEvery: 50},
		{Capacity: 20000, PageSize: 16, States: 5, Policy: "marconi", Alpha: 2, Admission: "chunk", Chunk: 100},
	} {
		cfg.SanityEvery = 1
		a, err := coresim.RunMamba(cfg, reqs)
		require.NoError(t, err, "%+v", cfg)
		b, err := coresim.RunMamba(cfg, reqs)
		require.NoError(t, err)
		require.Equal(t, a, b)
		require.Positive(t, a.StateEvictions, "%+v", cfg)
		if cfg.Alpha < 0 {
			require.Positive(t, a.Tunes)
		}
		t.Logf("%+v: %+v", cfg, a)
	}
}

func TestRunMamba_BadConfig(t *testing.T) {
	for _, cfg := range []coresim.MambaConfig{
		{Capacity: 64, PageSize: 4, States: 2},
		{Capacity: 64, PageSize: 4, States: 8, Admission: "every"},
		{Capacity: 64, PageSize: 4, States: 8, Policy: "lfu"},
		{Capacity: -1, PageSize: 4, States: 8},
		{Capacity: 64, PageSize: 4, States: 8, TuneWindow: -1},
	} {
		_, err := coresim.RunMamba(cfg, nil)
		require.Error(t, err, "%+v", cfg)
	}
}
