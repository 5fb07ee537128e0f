package native

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/internal/coresim"
	"github.com/radixkv/radixkv/workload"
)

// sharedTrace is the Mooncake trace under ../shared, loaded once.
var sharedTrace struct {
	once sync.Once
	reqs []workload.Request
	err  error
}

const sharedTracePath = "../../../shared/traces/mooncake_synthetic_trace.jsonl"

func loadSharedTrace(b *testing.B) []workload.Request {
	sharedTrace.once.Do(func() {
		f, err := os.Open(sharedTracePath)
		if err != nil {
			sharedTrace.err = err
			return
		}
		defer f.Close()
		sharedTrace.reqs, sharedTrace.err = workload.ReadMooncake(f, sharedTracePath)
	})
	if os.IsNotExist(sharedTrace.err) {
		b.Skipf("no shared trace (%v)", sharedTrace.err)
	}
	if sharedTrace.err != nil {
		b.Fatal(sharedTrace.err)
	}
	return sharedTrace.reqs
}

// BenchmarkStack_Replay replays the shared Mooncake trace (arrive,
// prefill, finish per request, no decode) from an empty cache at two
// device capacities: through the core alone (internal/coresim: the tree
// and a free list), and through the controller with its pools on each
// engine, with the canary off (and, for direct, on as well). The
// tokens/s metric is input tokens per second of replay; compare the
// figures of one run (direct/core, inprocess/direct, wasm/direct):
//
//	go test ./host/native -run '^$' -bench 'Stack_Replay' -benchtime 3x
func BenchmarkStack_Replay(b *testing.B) {
	reqs := loadSharedTrace(b)
	var input int64
	for k := range reqs {
		input += int64(len(reqs[k].Tokens))
	}
	const page = 16
	kinds := []struct {
		name   string
		new    engineCtor
		canary bool
	}{
		{"core", nil, false},
		{"direct", NewDirectEngine, false},
		{"direct+canary", NewDirectEngine, true},
		{"inprocess", NewInProcessEngine, false},
		{"wasm", NewWasmEngine, false},
	}
	for _, k := range kinds {
		for _, capacity := range []int{1_000_000, 3_000_000} {
			b.Run(fmt.Sprintf("%s/%dM", k.name, capacity/1_000_000), func(b *testing.B) {
				var spent time.Duration
				var tokens int64
				for b.Loop() {
					if k.new == nil {
						t0 := time.Now()
						if _, err := coresim.Run(coresim.Config{Capacity: capacity, PageSize: page}, reqs); err != nil {
							b.Fatal(err)
						}
						spent += time.Since(t0)
						tokens += input
						continue
					}
					b.StopTimer()
					c := stackController(b, k.new, capacity, page, k.canary)
					b.StartTimer()
					t0 := time.Now()
					for i := range reqs {
						if err := serveOne(c, &reqs[i]); err != nil {
							b.Fatalf("request %d: %v", i, err)
						}
					}
					spent += time.Since(t0)
					tokens += input
					b.StopTimer()
					if err := c.Close(); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				b.ReportMetric(float64(tokens)/spent.Seconds(), "tokens/s")
			})
		}
	}
}

// stackController builds a controller as `radixkv replay` does.
func stackController(b *testing.B, ctor engineCtor, capacity, page int, canary bool) *Controller {
	eng, err := ctor(core.Config{PageSize: page})
	if err != nil {
		b.Fatal(err)
	}
	slotBytes := 0
	if canary {
		slotBytes = CanaryBytes
	}
	pool, err := NewPagedMemPool(capacity, slotBytes, page)
	if err != nil {
		b.Fatal(err)
	}
	c, err := NewController(eng, NewPoolSet(pool), ControllerConfig{Canary: canary, VerifyMatches: canary})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// serveOne runs one trace request through the lifecycle. The trace's
// tokens are read-only for the whole replay, so the controller borrows
// them (ArriveBorrowing), as `radixkv replay` does.
func serveOne(c *Controller, req *workload.Request) error {
	var ns core.Namespace
	if req.Namespace != "" {
		ns.CacheSalt = req.Namespace
	}
	r, err := c.ArriveBorrowing(nil, ns, req.Tokens)
	if err != nil {
		return err
	}
	if err := c.Prefill(r, r.Pending()); err != nil {
		return err
	}
	return c.Finish(r)
}

// BenchmarkStack_RequestAllocs serves trace requests one per iteration
// through the direct engine after a warm-up pass over the trace, reusing
// one Request (ArriveReusing; borrowing/: ArriveBorrowing, the trace's
// tokens read in place), at two device capacities, and reports
// allocations per request: the exact count, since allocs/op (an integer
// division) rounds anything below one to 0. The controller, its pools and
// the engine allocate nothing per request, and neither does the tree: its
// keys, values and children live in slabs that coalesce freed ranges
// (core/slabs.go). retained-MiB is the heap the controller holds at the
// end (live after a GC, less what is live once it is closed).
//
//	go test ./host/native -run '^$' -bench 'Stack_RequestAllocs' -benchtime 16000x
func BenchmarkStack_RequestAllocs(b *testing.B) {
	reqs := loadSharedTrace(b)
	for _, borrow := range []bool{false, true} {
		for _, capacity := range []int{1_000_000, 3_000_000} {
			name := fmt.Sprintf("%dM", capacity/1_000_000)
			if borrow {
				name = "borrowing/" + name
			}
			b.Run(name, func(b *testing.B) {
				c := stackController(b, NewDirectEngine, capacity, 16, false)
				var r *Request
				serve := func(req *workload.Request) {
					var ns core.Namespace
					if req.Namespace != "" {
						ns.CacheSalt = req.Namespace
					}
					var err error
					if borrow {
						r, err = c.ArriveBorrowing(r, ns, req.Tokens)
					} else {
						r, err = c.ArriveReusing(r, ns, req.Tokens)
					}
					if err != nil {
						b.Fatal(err)
					}
					if err := c.Prefill(r, r.Pending()); err != nil {
						b.Fatal(err)
					}
					if err := c.Finish(r); err != nil {
						b.Fatal(err)
					}
				}
				// The warm-up pass arrives as the measured requests do, so
				// that the spare buffers the copying arrival grows are grown.
				for i := range reqs {
					serve(&reqs[i])
				}
				b.ReportAllocs()
				i := 0
				var m0, m1 runtime.MemStats
				runtime.ReadMemStats(&m0)
				for b.Loop() {
					serve(&reqs[i%len(reqs)])
					i++
				}
				runtime.ReadMemStats(&m1)
				b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/float64(i), "allocs/request")
				runtime.GC()
				runtime.ReadMemStats(&m0)
				if err := c.Close(); err != nil {
					b.Fatal(err)
				}
				c, r = nil, nil
				runtime.GC()
				runtime.ReadMemStats(&m1)
				b.ReportMetric(float64(int64(m0.HeapAlloc)-int64(m1.HeapAlloc))/(1<<20), "retained-MiB")
			})
		}
	}
}
