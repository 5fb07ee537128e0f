package coresim_test

import (
	"testing"

	"github.com/radixkv/radixkv/internal/coresim"
	"github.com/radixkv/radixkv/workload"
)

// TestLRFU_NotBelowLRU holds lrfu, admit and lhd to the bar of issue 16 on the built-in
// generator's workloads (seeds 1-5, the sweep's default capacities): never
// more than 2% (relative) below lru's hit rate.
func TestLRFU_NotBelowLRU(t *testing.T) {
	if testing.Short() {
		t.Skip("replays 60 workloads")
	}
	for seed := uint64(1); seed <= 5; seed++ {
		cfg := workload.DefaultGenConfig()
		cfg.Seed = seed
		reqs, err := workload.Generate(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []int{25000, 50000, 100000, 200000, 400000, 800000} {
			lru, err := coresim.Run(coresim.Config{Capacity: c, PageSize: 16, Policy: "lru"}, reqs)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{"lrfu", "admit", "lhd"} {
				st, err := coresim.Run(coresim.Config{Capacity: c, PageSize: 16, Policy: p}, reqs)
				if err != nil {
					t.Fatal(err)
				}
				if st.HitRate < 0.98*lru.HitRate {
					t.Errorf("seed %d capacity %d: %s %.2f%% < 98%% of lru %.2f%%", seed, c, p, 100*st.HitRate, 100*lru.HitRate)
				}
			}
		}
	}
}
