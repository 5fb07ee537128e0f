package native

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/tetratelabs/wazero"

	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/workload"
)

// The benchmarks compare the engines on the same work; divide the
// wasm and inprocess ns/op of one run for the cost of the WebAssembly
// boundary (benchstat: go test -bench Engine -count 10).

const benchKey = 4096

// BenchmarkEngine_Match matches a cached 4096-token key into a reused
// buffer.
func BenchmarkEngine_Match(b *testing.B) {
	for _, k := range engineKinds {
		b.Run(k.name, func(b *testing.B) {
			e := newEngine(b, k.new, core.Config{PageSize: 16})
			key := seq(1, benchKey)
			if _, _, err := e.Insert(core.InsertParams{Tokens: key, Slots: seqSlots(0, benchKey)}); err != nil {
				b.Fatal(err)
			}
			dst := make([]int32, 0, benchKey)
			b.ReportAllocs()
			b.SetBytes(4 * benchKey)
			for b.Loop() {
				m, err := e.Match(dst[:0], core.Namespace{}, key)
				if err != nil || m.DeviceLen != benchKey {
					b.Fatal(m.DeviceLen, err)
				}
			}
		})
	}
}

// BenchmarkEngine_Insert inserts a 4096-token key the tree holds: as a
// request that held the whole prefix (cached: no actions), and as one
// that computed it afresh (dup: one action frees its 4096 duplicate
// slots).
func BenchmarkEngine_Insert(b *testing.B) {
	for _, mode := range []string{"cached", "dup"} {
		for _, k := range engineKinds {
			b.Run(mode+"/"+k.name, func(b *testing.B) {
				e := newEngine(b, k.new, core.Config{PageSize: 16})
				key := seq(1, benchKey)
				if _, _, err := e.Insert(core.InsertParams{Tokens: key, Slots: seqSlots(0, benchKey)}); err != nil {
					b.Fatal(err)
				}
				p := core.InsertParams{Tokens: key, Slots: seqSlots(0, benchKey), PrevPrefixLen: benchKey}
				wantActs := 0
				if mode == "dup" {
					p.Slots, p.PrevPrefixLen, wantActs = seqSlots(benchKey, benchKey), 0, 1
				}
				b.ReportAllocs()
				b.SetBytes(8 * benchKey)
				for b.Loop() {
					res, acts, err := e.Insert(p)
					if err != nil || res.PrefixLen != benchKey || len(acts) != wantActs {
						b.Fatal(res, len(acts), err)
					}
				}
			})
		}
	}
}

// BenchmarkEngine_SmallCalls measures the fixed cost of a call on each
// engine, where the arrays are too small to matter: a stats call (as
// Evictable makes), a match of 16 cached tokens, and a lock with its
// unlock. The wire engines' excess over direct is the codec and the
// dispatcher (and for wasm, the boundary and the guest's slower code).
func BenchmarkEngine_SmallCalls(b *testing.B) {
	for _, call := range []string{"stats", "match16", "lock+unlock"} {
		for _, k := range engineKinds {
			b.Run(call+"/"+k.name, func(b *testing.B) {
				e := newEngine(b, k.new, core.Config{PageSize: 16})
				key := seq(1, 16)
				if _, _, err := e.Insert(core.InsertParams{Tokens: key, Slots: seqSlots(0, 16)}); err != nil {
					b.Fatal(err)
				}
				m, err := e.Match(nil, core.Namespace{}, key)
				if err != nil {
					b.Fatal(err)
				}
				node, dst := m.LastDevice, make([]int32, 0, 16)
				b.ReportAllocs()
				switch call {
				case "stats":
					for b.Loop() {
						if n, err := e.Evictable(core.Full); err != nil || n != 16 {
							b.Fatal(n, err)
						}
					}
				case "match16":
					for b.Loop() {
						if m, err := e.Match(dst[:0], core.Namespace{}, key); err != nil || m.DeviceLen != 16 {
							b.Fatal(m.DeviceLen, err)
						}
					}
				case "lock+unlock":
					for b.Loop() {
						rc, err := e.Lock(node, 0)
						if err != nil {
							b.Fatal(err)
						}
						if err := e.Unlock(node, rc, false); err != nil {
							b.Fatal(err)
						}
					}
				}
			})
		}
	}
}

// BenchmarkWasm_Compile compiles radixkv.wasm in a new runtime: cold
// (empty cache), from a warm in-memory cache, and from a warm directory
// cache opened afresh (as a new process would).
func BenchmarkWasm_Compile(b *testing.B) {
	ctx := context.Background()
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			r, err := newWasmRuntime(ctx, wazero.NewCompilationCache())
			if err != nil {
				b.Fatal(err)
			}
			_ = r.Close(ctx)
		}
	})
	b.Run("cached", func(b *testing.B) {
		cache := wazero.NewCompilationCache()
		defer cache.Close(ctx)
		warm, err := newWasmRuntime(ctx, cache)
		if err != nil {
			b.Fatal(err)
		}
		_ = warm.rt.Close(ctx) // keep the cache
		for b.Loop() {
			r, err := newWasmRuntime(ctx, cache)
			if err != nil {
				b.Fatal(err)
			}
			_ = r.rt.Close(ctx)
		}
	})
	b.Run("dir", func(b *testing.B) {
		dir := b.TempDir()
		warm, err := NewWasmRuntime(ctx, WasmRuntimeConfig{CacheDir: dir})
		if err != nil {
			b.Fatal(err)
		}
		_ = warm.Close(ctx)
		for b.Loop() {
			r, err := NewWasmRuntime(ctx, WasmRuntimeConfig{CacheDir: dir})
			if err != nil {
				b.Fatal(err)
			}
			_ = r.Close(ctx)
		}
	})
}

// BenchmarkWasm_Instantiate creates a WebAssembly engine on the shared
// runtime (module instance, _initialize, guest buffer, cache instance)
// and closes it.
func BenchmarkWasm_Instantiate(b *testing.B) {
	if _, err := SharedWasmRuntime(); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		e, err := NewWasmEngine(core.Config{PageSize: 16})
		if err != nil {
			b.Fatal(err)
		}
		if err := e.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

var traceOnce = sync.OnceValues(func() ([]workload.Request, error) {
	for _, p := range []string{
		"../../../shared/traces/mooncake_synthetic_trace.jsonl", // repository at ../main
		"../../shared/traces/mooncake_synthetic_trace.jsonl",
	} {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		defer f.Close()
		return workload.ReadMooncake(f, p)
	}
	return nil, os.ErrNotExist
})

// BenchmarkEngine_Replay replays the shared Mooncake trace through each
// engine the way a serving engine drives it (match, lock, allocate with
// eviction, insert, free duplicates and the ragged tail, unlock) and
// reports tokens/s. It skips when the trace is absent.
func BenchmarkEngine_Replay(b *testing.B) {
	reqs, err := traceOnce()
	if err != nil {
		b.Skipf("shared trace not available: %v", err)
	}
	var tokens int64
	for _, r := range reqs {
		tokens += int64(len(r.Tokens))
	}
	for _, k := range engineKinds {
		b.Run(k.name, func(b *testing.B) {
			var hit float64
			for b.Loop() {
				e, err := k.new(core.Config{PageSize: 16})
				if err != nil {
					b.Fatal(err)
				}
				if hit, err = replay(e, reqs, 1_000_000); err != nil {
					b.Fatal(err)
				}
				_ = e.Close()
			}
			b.ReportMetric(float64(tokens)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
			b.ReportMetric(hit, "hit-rate")
		})
	}
}

// replay runs reqs through e with a free list of capacity slots and
// returns the hit rate; it checks the slot accounting at the end.
func replay(e Engine, reqs []workload.Request, capacity int) (float64, error) {
	free := make([]int32, capacity)
	for i := range free {
		free[i] = int32(capacity - 1 - i)
	}
	page := e.Config().PageSize
	var matched, slots []int32
	var acts []core.Action
	var in, hit int64
	for k := range reqs {
		req := &reqs[k]
		var ns core.Namespace
		if req.Namespace != "" {
			ns.CacheSalt = req.Namespace
		}
		tokens := req.Tokens
		m, err := e.Match(matched[:0], ns, tokens)
		if err != nil {
			return 0, fmt.Errorf("request %d: match: %w", k, err)
		}
		matched = m.Indices
		rc, err := e.Lock(m.LastDevice, 0)
		if err != nil {
			return 0, fmt.Errorf("request %d: lock: %w", k, err)
		}
		need := len(tokens) - m.DeviceLen
		if short := need - len(free); short > 0 {
			var freed int
			acts, freed, err = e.Evict(core.Full, short, acts[:0])
			if err != nil {
				return 0, fmt.Errorf("request %d: evict: %w", k, err)
			}
			for _, a := range acts {
				free = append(free, a.Slots...)
			}
			clear(acts)
			if need > len(free) {
				return 0, fmt.Errorf("request %d: %d slots needed, %d free after evicting %d", k, need, len(free), freed)
			}
		}
		slots = append(slots[:0], matched...)
		top := len(free) - need
		slots = append(slots, free[top:]...)
		free = free[:top]
		aligned := len(tokens) / page * page
		_, ins, err := e.Insert(core.InsertParams{Namespace: ns, Tokens: tokens[:aligned], Slots: slots[:aligned], PrevPrefixLen: m.DeviceLen})
		if err != nil {
			return 0, fmt.Errorf("request %d: insert: %w", k, err)
		}
		for _, a := range ins {
			free = append(free, a.Slots...)
		}
		free = append(free, slots[aligned:]...)
		if err := e.Unlock(m.LastDevice, rc, false); err != nil {
			return 0, fmt.Errorf("request %d: unlock: %w", k, err)
		}
		in += int64(len(tokens))
		hit += int64(m.DeviceLen)
	}
	ev, err1 := e.Evictable(core.Full)
	pr, err2 := e.Protected(core.Full)
	if err1 != nil || err2 != nil || ev+pr+len(free) != capacity {
		return 0, fmt.Errorf("accounting: %d evictable + %d protected + %d free != %d (%v %v)", ev, pr, len(free), capacity, err1, err2)
	}
	return float64(hit) / float64(max(in, 1)), nil
}

// TestEngines_ReplayAgree replays the head of the shared trace, each
// prompt cut to its first four blocks, through every engine with a small
// pool (so it evicts) and requires the same hit rate; it skips when the
// trace is absent.
func TestEngines_ReplayAgree(t *testing.T) {
	reqs, err := traceOnce()
	if err != nil {
		t.Skipf("shared trace not available: %v", err)
	}
	reqs = append([]workload.Request(nil), reqs[:min(len(reqs), 400)]...)
	for i := range reqs {
		reqs[i].Tokens = reqs[i].Tokens[:min(len(reqs[i].Tokens), 2048)]
	}
	var hits []float64
	for _, k := range engineKinds {
		e := newEngine(t, k.new, core.Config{PageSize: 16})
		hit, err := replay(e, reqs, 40_000)
		if err != nil {
			t.Fatalf("%s: %v", k.name, err)
		}
		hits = append(hits, hit)
	}
	t.Logf("hit rates %v", hits)
	for i := 1; i < len(hits); i++ {
		if hits[i] != hits[0] {
			t.Fatalf("hit rates differ: %v", hits)
		}
	}
	if hits[0] == 0 {
		t.Fatal("no hits: the replay shares nothing")
	}
}
