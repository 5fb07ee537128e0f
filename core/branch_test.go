package core_test

import (
	"testing"

	"github.com/radixkv/radixkv/core"
)

// TestBranch_KeepsReturningBranches: under a prefix whose new tails came
// back, branch keeps a never-reused tail that admit (and lru) would evict
// first, and takes a tail of a branch whose tails never came back instead.
func TestBranch_KeepsReturningBranches(t *testing.T) {
	a := []uint32{1, 2, 3, 4}
	b := []uint32{5, 6, 7, 8}
	cat := func(p []uint32, x uint32) []uint32 { return append(append([]uint32{}, p...), x, x+1, x+2, x+3) }
	for _, c := range []struct {
		policy string
		victim int32 // first slot of the first leaf a 4-atom walk frees
	}{{"admit", 12}, {"lru", 12}, {"branch", 28}} {
		tr, err := core.New(core.Config{PageSize: 4, Policy: c.policy})
		if err != nil {
			t.Fatal(err)
		}
		slot := int32(0)
		use := func(key []uint32) {
			t.Helper()
			if _, err := tr.Match(nil, core.Namespace{}, key); err != nil {
				t.Fatal(err)
			}
			slots := make([]int32, len(key))
			for i := range slots {
				slots[i] = slot
				slot++
			}
			if _, _, err := tr.Insert(core.InsertParams{Tokens: key, Slots: slots}); err != nil {
				t.Fatal(err)
			}
		}
		use(cat(a, 10)) // slots 0-7: a, then its first tail
		use(cat(a, 20)) // slots 8-15: a's second tail at 12-15
		use(cat(a, 10)) // a's first tail comes back (16-23 are duplicates)
		use(cat(b, 30)) // slots 24-31: b, then a tail at 28-31
		use(cat(b, 40)) // b's tails never come back
		use(cat(b, 50))
		acts, freed, err := tr.Evict(core.Full, 4, nil)
		if err != nil || freed != 4 || len(acts) != 1 || len(acts[0].Slots) != 4 {
			t.Fatalf("%s: evict freed %d (%v, %v)", c.policy, freed, acts, err)
		}
		// The oldest never-reused tail is a's second one (12-15): admit
		// and lru take it; branch keeps it, since a's tails came back,
		// and takes b's oldest tail.
		if got := acts[0].Slots[0]; got != c.victim {
			t.Errorf("%s evicted slots %v; want the leaf at %d", c.policy, acts[0].Slots, c.victim)
		}
		if err := tr.SanityCheck(); err != nil {
			t.Fatal(err)
		}
	}
}
