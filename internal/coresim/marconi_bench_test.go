package coresim_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/radixkv/radixkv/internal/coresim"
	"github.com/radixkv/radixkv/workload"
)

var sharedTracePaths = []string{
	"../../../shared/traces/mooncake_synthetic_trace.jsonl",
	"../../shared/traces/mooncake_synthetic_trace.jsonl",
}

func sharedTrace(b testing.TB) []workload.Request {
	for _, p := range sharedTracePaths {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		defer f.Close()
		reqs, err := workload.ReadMooncake(f, p)
		if err != nil {
			b.Fatal(err)
		}
		return reqs
	}
	b.Skip("shared trace not present")
	return nil
}

// BenchmarkMarconiSharedTrace replays the shared trace through the block
// cache (1,000,000 tokens, block 16) with the 7B hybrid's SSM snapshots at
// three state-pool sizes, under lru (finish-leaf states, the seed's
// order), lru with Marconi's branch-point admission (the ablation), and
// marconi (admission, utility eviction, alpha tuned over 500 requests),
// and marconi with alpha fixed at 1.
// It reports snapshot hits, the effective token hit rate and the prefill
// FLOPs saved per replay; one iteration is a whole replay, so run it with
// -benchtime 1x.
func BenchmarkMarconiSharedTrace(b *testing.B) {
	reqs := sharedTrace(b)
	for _, states := range []int{10, 40, 160} {
		for _, c := range []struct {
			name, policy, admission string
			alpha                   float64
		}{{"lru", "lru", "leaf", 0}, {"lru+branch", "lru", "branch", 0}, {"marconi", "marconi", "branch", -1},
			{"marconi-alpha1", "marconi", "branch", 1}} {
			b.Run(fmt.Sprintf("states=%d/policy=%s", states, c.name), func(b *testing.B) {
				var st coresim.BlocksStats
				for b.Loop() {
					var err error
					st, err = coresim.RunBlocks(coresim.BlocksConfig{Capacity: 1_000_000, BlockSize: 16, States: states,
						Policy: c.policy, Admission: c.admission, Alpha: c.alpha}, reqs)
					if err != nil {
						b.Fatal(err)
					}
				}
				s := st.Snapshots
				b.ReportMetric(float64(s.Hits), "hits")
				b.ReportMetric(s.EffectiveHitRate, "eff_hit_rate")
				b.ReportMetric(s.FLOPsSaved, "flops_saved")
				b.ReportMetric(s.Alpha, "alpha")
			})
		}
	}
}

// BenchmarkMarconiTreeSharedTrace replays the shared trace through the
// unified tree's {full, mamba} components (1,000,000 KV tokens, page 16)
// with the 7B hybrid's geometry at three state-pool sizes, under lru with
// a state every 512-token chunk (vLLM+-style), lru with Marconi's
// branch-point admission (the ablation), and marconi (branch admission,
// utility eviction, alpha tuned online over 500-request windows, retuned
// every 500 requests).
// It reports state hits, the token hit rate and the prefill FLOPs saved
// per replay; one iteration is a whole replay, so run it with
// -benchtime 1x.
func BenchmarkMarconiTreeSharedTrace(b *testing.B) {
	reqs := sharedTrace(b)
	for _, states := range []int{10, 40, 160} {
		for _, c := range []struct {
			name, policy, admission string
			alpha                   float64
		}{{"lru", "lru", "chunk", 0}, {"lru+branch", "lru", "branch", 0}, {"marconi", "marconi", "branch", -1}} {
			b.Run(fmt.Sprintf("states=%d/policy=%s", states, c.name), func(b *testing.B) {
				var st coresim.MambaStats
				for b.Loop() {
					var err error
					st, err = coresim.RunMamba(coresim.MambaConfig{Capacity: 1_000_000, PageSize: 16, States: states,
						Policy: c.policy, Admission: c.admission, Alpha: c.alpha, RetuneEvery: 500}, reqs)
					if err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(st.Hits), "hits")
				b.ReportMetric(st.HitRate, "hit_rate")
				b.ReportMetric(st.FLOPsSaved, "flops_saved")
				b.ReportMetric(st.Alpha, "alpha")
			})
		}
	}
}
