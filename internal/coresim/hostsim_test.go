package coresim_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/internal/coresim"
	"github.com/radixkv/radixkv/workload"
)

// TestRunHost_Accounting replays shared-prefix requests through small
// device and host pools under both write policies with the sanity check
// every few requests; the host tier must turn some misses into host hits.
func TestRunHost_Accounting(t *testing.T) {
	var reqs []workload.Request
	for r := range 200 {
		base := uint32(r%7) * 1000
		reqs = append(reqs, req(seq(base, base+40), seq(uint32(r)*100+50_000, uint32(r)*100+50_000+uint32(8+r%24))))
	}
	for _, wp := range []core.WritePolicy{core.WriteThrough, core.WriteBack} {
		t.Run(wp.String(), func(t *testing.T) {
			dev, err := coresim.Run(coresim.Config{Capacity: 160, PageSize: 4}, reqs)
			require.NoError(t, err)
			st, err := coresim.RunHost(coresim.HostConfig{Config: coresim.Config{Capacity: 160, PageSize: 4, SanityEvery: 5},
				HostCapacity: 640, WritePolicy: wp}, reqs)
			require.NoError(t, err)
			t.Logf("device only %.3f; with host: device %.3f host %.3f combined %.3f (%d load-backs, %d demoted, %d dropped)",
				dev.HitRate, st.HitRate, st.HostHitRate, st.CombinedHitRate, st.LoadBacks, st.DemotedNodes, st.DroppedNodes)
			require.Greater(t, st.HostMatchedTokens, int64(0))
			require.GreaterOrEqual(t, st.CombinedHitRate, dev.HitRate)
		})
	}
}
