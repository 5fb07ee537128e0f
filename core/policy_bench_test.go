package core_test

import (
	"fmt"
	"testing"

	"github.com/radixkv/radixkv/core"
)

// BenchmarkPolicyCost compares the lrfu, admit, branch and lhd policies' cost with lru's in one
// run: a 4096-token match of a cached key, a 4096-token insert of a new
// key, and the eviction of a 1M-token tree. The policy is the innermost
// level, so each pair runs back to back.
func BenchmarkPolicyCost(b *testing.B) {
	const page = 16
	pols := []string{"lru", "lrfu", "admit", "branch", "lhd"}
	newTree := func(b *testing.B, p string) *core.Tree {
		t, err := core.New(core.Config{PageSize: page, Policy: p})
		if err != nil {
			b.Fatal(err)
		}
		return t
	}
	for _, p := range pols {
		b.Run(fmt.Sprintf("op=match/policy=%s", p), func(b *testing.B) {
			t := newTree(b, p)
			key := benchKey(1, benchKeyLen)
			mustInsert(b, t, core.InsertParams{Tokens: key, Slots: benchSlots(0, benchKeyLen)})
			dst := make([]int32, 0, benchKeyLen)
			b.ReportAllocs()
			for b.Loop() {
				if r, err := t.Match(dst[:0], core.Namespace{}, key); err != nil || r.DeviceLen != benchKeyLen {
					b.Fatalf("match: %d atoms, %v", r.DeviceLen, err)
				}
			}
			reportPerToken(b, benchKeyLen)
		})
	}
	for _, p := range pols {
		b.Run(fmt.Sprintf("op=insert/policy=%s", p), func(b *testing.B) {
			t := newTree(b, p)
			insertBatches(b, t)
			reportPerToken(b, benchKeyLen)
		})
	}
	for _, p := range pols {
		b.Run(fmt.Sprintf("op=evict1M/policy=%s", p), func(b *testing.B) {
			t := newTree(b, p)
			seqs, prevs := evictLayout()
			slots := benchSlots(0, 1024+4096)
			acts := make([]core.Action, 0, 1024)
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				t.Reset()
				for k, s := range seqs {
					mustInsert(b, t, core.InsertParams{Tokens: s, Slots: slots, PrevPrefixLen: prevs[k]})
				}
				b.StartTimer()
				var freed int
				var err error
				acts, freed, err = t.Evict(core.Full, evictTreeTokens, acts[:0])
				if err != nil || freed != evictTreeTokens {
					b.Fatalf("evicted %d tokens, %v", freed, err)
				}
			}
			reportPerToken(b, evictTreeTokens)
		})
	}
}
