package core_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/internal/coresim"
)

// TestReplayHostTier replays the shared trace with a host tier of four
// times the device capacity, under write-through and write-back, next to
// the device-only replay, and logs device, host and combined hit rates.
// The host tier must never lower the combined hit rate below the
// device-only one.
func TestReplayHostTier(t *testing.T) {
	if testing.Short() {
		t.Skip("replays the whole trace six times")
	}
	reqs := loadTrace(t)
	var tab strings.Builder
	fmt.Fprintf(&tab, "%-8s %-20s %8s %8s %8s %10s %9s", "device", "mode", "device", "host", "combined", "load-backs", "wb-demotes")
	for _, c := range replayCapacities {
		dev, err := coresim.Run(coresim.Config{Capacity: c, PageSize: replayPage, Policy: "lru"}, reqs)
		require.NoError(t, err)
		fmt.Fprintf(&tab, "\n%-8s %-20s %8.4f %8s %8.4f", capName(c), "device only", dev.HitRate, "-", dev.HitRate)
		for _, wp := range []core.WritePolicy{core.WriteThrough, core.WriteBack} {
			st, err := coresim.RunHost(coresim.HostConfig{
				Config:       coresim.Config{Capacity: c, PageSize: replayPage, Policy: "lru"},
				HostCapacity: 4 * c, WritePolicy: wp}, reqs)
			require.NoError(t, err)
			fmt.Fprintf(&tab, "\n%-8s %-20s %8.4f %8.4f %8.4f %10d %9d", capName(c), "host "+wp.String(),
				st.HitRate, st.HostHitRate, st.CombinedHitRate, st.LoadBacks, st.DemotedNodes)
			require.GreaterOrEqual(t, st.CombinedHitRate, dev.HitRate, "%s at %s", wp, capName(c))
		}
	}
	t.Logf("hit rates with a host tier of 4x the device, %d requests, page %d, lru:\n%s", len(reqs), replayPage, tab.String())
}
