package core

import (
	"math/rand/v2"
	"testing"
)

// TestBuildHeap_PlainKeys: for every policy, buildHeap's entries are the
// ones heapEntry computes through the key function, in the order that
// appending them and calling heapDown from the last parent leaves, so a
// plain key read can never change an eviction order.
func TestBuildHeap_PlainKeys(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 13))
	for _, p := range policies {
		tr, err := New(Config{PageSize: 1, Policy: p.name})
		if err != nil {
			t.Fatal(err)
		}
		var leaves []int32
		for range 300 {
			i := tr.alloc(0, nil)
			n := &tr.nodes[i]
			// Few distinct values, so that ties on a and b are common.
			n.lastAccess, n.creation = rng.Int64N(8), rng.Int64N(8)
			n.hits, n.priority = rng.Int64N(4), rng.Int64N(4)-2
			n.queued = int32(rng.IntN(5) / 4)
			n.gen = rng.Uint32()
			leaves = append(leaves, i)
		}
		for _, k := range []int{0, 1, 2, 3, 7, 64, 300} {
			want := make([]heapEntry, 0, k)
			for _, i := range leaves[:k] {
				want = append(want, tr.heapEntry(i))
			}
			for top := len(want)/2 - 1; top >= 0; top-- {
				heapDown(want, top)
			}
			got := tr.buildHeap(make([]heapEntry, 5), leaves[:k])
			if len(got) != len(want) {
				t.Fatalf("%s, %d leaves: %d entries", p.name, k, len(got))
			}
			for j := range want {
				if got[j] != want[j] {
					t.Fatalf("%s, %d leaves: entry %d is %+v, want %+v", p.name, k, j, got[j], want[j])
				}
			}
		}
	}
}
