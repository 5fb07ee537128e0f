package coresim_test

import (
	"math"
	"testing"

	"github.com/radixkv/radixkv/internal/coresim"
	"github.com/radixkv/radixkv/workload"
)

// TestQueue_Protects replays a generated workload behind a slow server:
// the tree stays sane after every request, every policy runs, the queue
// is real, and protection never loses the slot accounting.
func TestQueue_Protects(t *testing.T) {
	cfg := workload.DefaultGenConfig()
	cfg.Requests = 300
	reqs, err := workload.Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"lru", "gdsf", "lrfu", "admit"} {
		plain, err := coresim.Run(coresim.Config{Capacity: 60000, PageSize: 16, Policy: p}, reqs)
		if err != nil {
			t.Fatal(err)
		}
		q, err := coresim.Run(coresim.Config{Capacity: 60000, PageSize: 16, Policy: p, ServiceRate: 20000, SanityEvery: 1}, reqs)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if q.QueueMax == 0 || q.QueueMean <= 0 || q.Protections == 0 || q.ProtectedTokens == 0 {
			t.Fatalf("%s: no queue formed: %+v", p, q)
		}
		if q.Requests != plain.Requests || q.InputTokens != plain.InputTokens {
			t.Fatalf("%s: the queue changed the workload: %+v vs %+v", p, q, plain)
		}
		t.Logf("%s: %.2f%% -> %.2f%% with protection (mean queue %.1f)", p, 100*plain.HitRate, 100*q.HitRate, q.QueueMean)
	}
	// A server far faster than the arrivals never queues anything.
	fast, err := coresim.Run(coresim.Config{Capacity: 60000, PageSize: 16, ServiceRate: 1e15}, reqs)
	if err != nil {
		t.Fatal(err)
	}
	if fast.QueueMax > 1 {
		t.Fatalf("fast server: queue of %d", fast.QueueMax)
	}
}

func TestQueue_BadRate(t *testing.T) {
	for _, r := range []float64{-1, math.NaN(), math.Inf(1)} {
		if _, err := coresim.Run(coresim.Config{Capacity: 10, PageSize: 1, ServiceRate: r}, nil); err == nil {
			t.Fatalf("rate %v accepted", r)
		}
	}
}
