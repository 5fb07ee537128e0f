package offline_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/internal/coresim"
	"github.com/radixkv/radixkv/internal/offline"
	"github.com/radixkv/radixkv/workload"
)

// smallTrace draws n requests that share prefixes: each extends a random
// earlier request's prefix (or starts afresh) with a few random tokens.
func smallTrace(r *rand.Rand, n int) []workload.Request {
	var reqs []workload.Request
	for range n {
		var toks []uint32
		if len(reqs) > 0 && r.IntN(4) != 0 {
			base := reqs[r.IntN(len(reqs))].Tokens
			toks = append(toks, base[:r.IntN(len(base)+1)]...)
		}
		for range 1 + r.IntN(6) {
			toks = append(toks, uint32(r.IntN(3)))
		}
		req := workload.Request{InputLength: len(toks), Tokens: toks}
		if r.IntN(8) == 0 {
			req.Namespace = "t1"
		}
		reqs = append(reqs, req)
	}
	return reqs
}

// brute is an exhaustive search over every demand-eviction choice in the
// block model: at each request, every set of the minimum number of leaf
// blocks (evicted one leaf at a time) that makes room. It returns the most
// matched tokens any choice reaches, or -1 when a request cannot fit.
// Blocks are named by their whole prefix, so it shares no code with the
// package.
func brute(reqs []workload.Request, page, capacity int) int {
	type state = map[string]bool
	blocks := func(r workload.Request) []string {
		var out []string
		for off := 0; off+page <= len(r.Tokens); off += page {
			out = append(out, fmt.Sprint(r.Namespace, r.Tokens[:off+page]))
		}
		return out
	}
	parentOf := map[string]string{}
	for _, r := range reqs {
		bs := blocks(r)
		for j, b := range bs {
			if j > 0 {
				parentOf[b] = bs[j-1]
			}
		}
	}
	memo := map[string]int{}
	keyOf := func(k int, s state) string {
		var ks []string
		for b := range s {
			ks = append(ks, b)
		}
		slices.Sort(ks)
		return fmt.Sprint(k, ks)
	}
	var solve func(k int, s state) int
	solve = func(k int, s state) int {
		if k == len(reqs) {
			return 0
		}
		key := keyOf(k, s)
		if v, ok := memo[key]; ok {
			return v
		}
		bs := blocks(reqs[k])
		m := 0
		for m < len(bs) && s[bs[m]] {
			m++
		}
		locked := map[string]bool{}
		for _, b := range bs[:m] {
			locked[b] = true
		}
		need := len(reqs[k].Tokens) - m*page
		free := capacity - len(s)*page
		cnt := 0
		if free < need {
			cnt = (need - free + page - 1) / page
		}
		best := -1
		seen := map[string]bool{}
		var choose func(s state, left int)
		choose = func(s state, left int) {
			if left == 0 {
				if id := keyOf(0, s); seen[id] {
					return
				} else {
					seen[id] = true
				}
				next := state{}
				for b := range s {
					next[b] = true
				}
				for _, b := range bs[m:] {
					next[b] = true
				}
				if v := solve(k+1, next); v >= 0 {
					best = max(best, v+m*page)
				}
				return
			}
			hasChild := map[string]bool{}
			for b := range s {
				if p, ok := parentOf[b]; ok {
					hasChild[p] = true
				}
			}
			for b := range s {
				if hasChild[b] || locked[b] {
					continue
				}
				rest := state{}
				for c := range s {
					if c != b {
						rest[c] = true
					}
				}
				choose(rest, left-1)
			}
		}
		choose(s, cnt)
		memo[key] = best
		return best
	}
	return solve(0, state{})
}

// TestBelady_MatchesBruteForce checks the bound against the exhaustive
// search, and that no online policy of core keeps more, on small traces.
func TestBelady_MatchesBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(16, 1))
	checked := 0
	for trial := range 300 {
		page := 1 + r.IntN(2)
		reqs := smallTrace(r, 3+r.IntN(6))
		capacity := 4 + r.IntN(10)
		want := brute(reqs, page, capacity)
		got, err := offline.Belady(offline.Config{Capacity: capacity, PageSize: page}, reqs)
		if want < 0 {
			if err == nil {
				t.Fatalf("trial %d: brute force finds no way to serve the trace, Belady gave %+v", trial, got)
			}
			continue
		}
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		checked++
		if got.MatchedTokens != int64(want) {
			t.Fatalf("trial %d (page %d, capacity %d): Belady matched %d, brute force %d\n%s", trial, page, capacity, got.MatchedTokens, want, dump(reqs))
		}
		for _, p := range core.PolicyNames() {
			st, err := coresim.Run(coresim.Config{Capacity: capacity, PageSize: page, Policy: p, SanityEvery: 1}, reqs)
			if err != nil {
				t.Fatalf("trial %d, %s: %v", trial, p, err)
			}
			if st.MatchedTokens > got.MatchedTokens {
				t.Fatalf("trial %d: online %s matched %d > offline bound %d\n%s", trial, p, st.MatchedTokens, got.MatchedTokens, dump(reqs))
			}
		}
	}
	if checked < 100 {
		t.Fatalf("only %d trials fit their capacity", checked)
	}
}

func dump(reqs []workload.Request) string {
	var b strings.Builder
	for k, r := range reqs {
		fmt.Fprintf(&b, "  r%d %q %v\n", k, r.Namespace, r.Tokens)
	}
	return b.String()
}

// TestBelady_GeneratedWorkloads checks the bound is at least every online
// policy's hit rate on the built-in generator's workloads.
func TestBelady_GeneratedWorkloads(t *testing.T) {
	for seed := uint64(1); seed <= 2; seed++ {
		cfg := workload.DefaultGenConfig()
		cfg.Seed, cfg.Requests = seed, 300
		reqs, err := workload.Generate(cfg)
		if err != nil {
			t.Fatal(err)
		}
		b, err := offline.NewBlocks(reqs, 16)
		if err != nil {
			t.Fatal(err)
		}
		for _, capacity := range []int{50000, 200000} {
			bound, err := b.Belady(capacity)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range core.PolicyNames() {
				st, err := coresim.Run(coresim.Config{Capacity: capacity, PageSize: 16, Policy: p}, reqs)
				if err != nil {
					t.Fatal(err)
				}
				if st.MatchedTokens > bound.MatchedTokens {
					t.Errorf("seed %d capacity %d: %s matched %d > bound %d", seed, capacity, p, st.MatchedTokens, bound.MatchedTokens)
				}
			}
		}
	}
}

func TestBelady_Errors(t *testing.T) {
	if _, err := offline.Belady(offline.Config{Capacity: 10, PageSize: 0}, nil); err == nil {
		t.Error("page size 0 accepted")
	}
	if _, err := offline.Belady(offline.Config{Capacity: -1, PageSize: 1}, nil); err == nil {
		t.Error("negative capacity accepted")
	}
	reqs := []workload.Request{{InputLength: 8, Tokens: make([]uint32, 8)}}
	if _, err := offline.Belady(offline.Config{Capacity: 4, PageSize: 2}, reqs); err == nil {
		t.Error("a request larger than the pool was accepted")
	}
}
