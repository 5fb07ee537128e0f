package coresim_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/radixkv/radixkv/internal/coresim"
	"github.com/radixkv/radixkv/workload"
)

// TestLRFU_NotBelowLRU holds lrfu, admit, branch and lhd to the bar of issue 16 on the built-in
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
			for _, p := range []string{"lrfu", "admit", "branch", "lhd"} {
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

// otherWorkloads are workloads no policy was designed on, to catch a
// policy that only fits the shared trace: the generator with long reuse
// distances (ten times the shared pools, sessions arriving ten times
// faster, 6000 requests; seeds 1-3), and the shared trace with its eight
// chunks of requests in reverse order (local structure kept, long-range
// reuse changed), when it is present.
func otherWorkloads(t *testing.T) (names []string, reqs [][]workload.Request, caps [][]int) {
	for seed := uint64(1); seed <= 3; seed++ {
		cfg := workload.DefaultGenConfig()
		cfg.Seed = seed
		cfg.Documents, cfg.SystemPrompts, cfg.ToolPrompts, cfg.FewShotTemplates = 400, 64, 32, 64
		cfg.Requests, cfg.SessionGapMs = 6000, 100
		r, err := workload.Generate(cfg)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, fmt.Sprintf("long-reuse seed %d", seed))
		reqs = append(reqs, r)
		caps = append(caps, []int{25000, 100000, 400000, 1600000})
	}
	for _, p := range sharedTracePaths {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		all, err := workload.ReadMooncake(f, p)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		var rev []workload.Request
		k := (len(all) + 7) / 8
		for c := 7; c >= 0; c-- {
			rev = append(rev, all[c*k:min((c+1)*k, len(all))]...)
		}
		names = append(names, "shared trace, chunks reversed")
		reqs = append(reqs, rev)
		caps = append(caps, []int{250000, 1000000, 3000000})
		break
	}
	return names, reqs, caps
}

// TestPolicies_OtherWorkloads holds lrfu, admit and branch to the same 2%
// bar on otherWorkloads; -v logs each hit rate beside lru's.
func TestPolicies_OtherWorkloads(t *testing.T) {
	if testing.Short() {
		t.Skip("replays four long workloads")
	}
	names, reqs, caps := otherWorkloads(t)
	for w, name := range names {
		for _, c := range caps[w] {
			lru, err := coresim.Run(coresim.Config{Capacity: c, PageSize: 16, Policy: "lru"}, reqs[w])
			if err != nil {
				t.Fatal(err)
			}
			line := fmt.Sprintf("%s, capacity %d: lru %.2f%%", name, c, 100*lru.HitRate)
			for _, p := range []string{"lrfu", "admit", "branch"} {
				st, err := coresim.Run(coresim.Config{Capacity: c, PageSize: 16, Policy: p}, reqs[w])
				if err != nil {
					t.Fatal(err)
				}
				line += fmt.Sprintf(", %s %.2f%% (%.3fx)", p, 100*st.HitRate, st.HitRate/lru.HitRate)
				if st.HitRate < 0.98*lru.HitRate {
					t.Errorf("%s capacity %d: %s %.2f%% < 98%% of lru %.2f%%", name, c, p, 100*st.HitRate, 100*lru.HitRate)
				}
			}
			t.Log(line)
		}
	}
}
