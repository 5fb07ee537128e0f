package native

import (
	"runtime"
	"testing"

	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/workload"
)

// TestController_SteadyStateAllocs serves a generated workload through the
// direct engine until its storage has settled (two passes, evicting all
// along: the cache holds a fraction of the workload), then counts the heap
// allocations of a third pass. The tree's keys, values and children live
// in slabs that coalesce freed ranges (core/slabs.go), the controller
// reuses its request and pools: a pass allocates nothing. The bound leaves
// room for a stray allocation of the runtime, far below the one every few
// requests that per-node buffers cost.
func TestController_SteadyStateAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	cfg := workload.DefaultGenConfig()
	cfg.Tenants = 3
	reqs, err := workload.Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := NewDirectEngine(core.Config{PageSize: 16})
	if err != nil {
		t.Fatal(err)
	}
	pool, err := NewPagedMemPool(300_000, 0, 16)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewController(eng, NewPoolSet(pool), ControllerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ns := make([]core.Namespace, len(reqs))
	for k := range reqs {
		ns[k].CacheSalt = reqs[k].Namespace
	}
	var r *Request
	pass := func() {
		for k := range reqs {
			if r, err = c.ArriveReusing(r, ns[k], reqs[k].Tokens); err != nil {
				t.Fatal(err)
			}
			if err := c.Prefill(r, r.Pending()); err != nil {
				t.Fatal(err)
			}
			if err := c.Finish(r); err != nil {
				t.Fatal(err)
			}
		}
	}
	pass()
	pass()
	evictions := c.Stats().EvictedTokens
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	pass()
	runtime.ReadMemStats(&m1)
	if c.Stats().EvictedTokens == evictions {
		t.Fatal("the measured pass evicted nothing: the cache is too large to test reuse")
	}
	n := m1.Mallocs - m0.Mallocs
	t.Logf("%d heap allocations over %d requests", n, len(reqs))
	if n > 4 {
		t.Fatalf("%d heap allocations over %d requests in steady state, want none", n, len(reqs))
	}
}
