package coresim_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/internal/coresim"
	"github.com/radixkv/radixkv/workload"
)

// seq returns the tokens lo..hi-1.
func seq(lo, hi uint32) []uint32 {
	var out []uint32
	for v := lo; v < hi; v++ {
		out = append(out, v)
	}
	return out
}

func req(parts ...[]uint32) workload.Request {
	var toks []uint32
	for _, p := range parts {
		toks = append(toks, p...)
	}
	return workload.Request{InputLength: len(toks), Tokens: toks}
}

// TestRun_HandChecked replays five requests through a pool of 32 slots with
// pages of 4 tokens under LRU:
//
//	r0 0..15              miss      tree: A[0..15]                       free 16
//	r1 0..7 100..107      hit 8     split: P[0..7] ─ A'[8..15], B[100..]  free 8
//	r2 0..15 200 201      hit 16    ragged tail of 2 allocated and freed  free 8
//	r3 300..315           miss      short by 8: evicts B (older than A')  free 0
//	r4 0..7 100..107      hit 8     short by 8: evicts A' (P is locked)   free 0
//
// Input 16+16+18+16+16 = 82 tokens, matched 0+8+16+0+8 = 32.
func TestRun_HandChecked(t *testing.T) {
	reqs := []workload.Request{
		req(seq(0, 16)),
		req(seq(0, 8), seq(100, 108)),
		req(seq(0, 16), seq(200, 202)),
		req(seq(300, 316)),
		req(seq(0, 8), seq(100, 108)),
	}
	st, err := coresim.Run(coresim.Config{Capacity: 32, PageSize: 4, Policy: "lru", SanityEvery: 1}, reqs)
	if err != nil {
		t.Fatal(err)
	}
	want := coresim.Stats{
		Requests:      5,
		InputTokens:   82,
		MatchedTokens: 32,
		HitRate:       32.0 / 82.0,
		Evictions:     2,
		EvictedNodes:  2,
		EvictedTokens: 16,
		CachedTokens:  32,
		FreeSlots:     0,
	}
	if st != want {
		t.Errorf("stats:\n got %+v\nwant %+v", st, want)
	}
}

// TestRun_Namespaces checks that tenants do not share prefixes.
func TestRun_Namespaces(t *testing.T) {
	a := req(seq(0, 16))
	b := a
	b.Namespace = "tenant-1"
	st, err := coresim.Run(coresim.Config{Capacity: 64, PageSize: 4, SanityEvery: 1}, []workload.Request{a, b, a, b})
	if err != nil {
		t.Fatal(err)
	}
	if st.MatchedTokens != 32 || st.CachedTokens != 32 {
		t.Errorf("matched %d cached %d, want 32 and 32", st.MatchedTokens, st.CachedTokens)
	}
}

func TestRun_RequestLargerThanCapacity(t *testing.T) {
	cfg := coresim.Config{Capacity: 32, PageSize: 4}
	_, err := coresim.Run(cfg, []workload.Request{req(seq(0, 40))})
	if !errors.Is(err, coresim.ErrCapacity) {
		t.Fatalf("40 tokens in 32 slots: got %v, want ErrCapacity", err)
	}
	t.Log(err)
	if !strings.Contains(err.Error(), "request 0 needs 40 fresh slots") {
		t.Errorf("message does not name the request and its need: %v", err)
	}

	// The second request matches 24 cached tokens, which it locks, and
	// needs 9 more: only 8 are free and nothing else is evictable.
	st, err := coresim.Run(cfg, []workload.Request{req(seq(0, 24)), req(seq(0, 33))})
	if !errors.Is(err, coresim.ErrCapacity) {
		t.Fatalf("locked prefix: got %v, want ErrCapacity", err)
	}
	t.Log(err)
	if st.Requests != 1 || st.CachedTokens != 24 || st.FreeSlots != 8 {
		t.Errorf("stats after the failure: %+v", st)
	}
}

func TestRun_BadConfig(t *testing.T) {
	for _, cfg := range []coresim.Config{
		{Capacity: 8, PageSize: 4, Policy: "nope"},
		{Capacity: 8, PageSize: 0},
		{Capacity: -1, PageSize: 4},
		{Capacity: 8, PageSize: 4, SanityEvery: -1},
	} {
		if _, err := coresim.Run(cfg, nil); err == nil {
			t.Errorf("%+v: no error", cfg)
		}
	}
	if _, err := coresim.Run(coresim.Config{Capacity: 8, PageSize: 4, Policy: "nope"}, nil); !errors.Is(err, core.ErrUnknownPolicy) {
		t.Errorf("unknown policy: got %v", err)
	}
}

// TestRun_AllPolicies replays a generated workload under every policy with
// a sanity check after each request, twice, and requires equal results.
func TestRun_AllPolicies(t *testing.T) {
	gc := workload.DefaultGenConfig()
	gc.Requests = 300
	if testing.Short() {
		gc.Requests = 60
	}
	gc.Tenants = 3
	reqs, err := workload.Generate(gc)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range core.PolicyNames() {
		cfg := coresim.Config{Capacity: 60000, PageSize: 16, Policy: p, SanityEvery: 1}
		a, err := coresim.Run(cfg, reqs)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		cfg.SanityEvery = 0
		b, err := coresim.Run(cfg, reqs)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if a != b {
			t.Errorf("%s: not deterministic:\n%+v\n%+v", p, a, b)
		}
		if a.EvictedNodes == 0 || a.MatchedTokens == 0 {
			t.Errorf("%s: workload too easy: %+v", p, a)
		}
		t.Logf("%-8s hit %.4f evicted %d nodes / %d tokens", p, a.HitRate, a.EvictedNodes, a.EvictedTokens)
	}
}
