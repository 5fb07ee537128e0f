package core

import "testing"

// TestLRFU_FrequencyOutranksRecency: with a time scale of 100 ticks, a
// prefix matched five times outranks a newer one used once, which lru
// would keep instead.
func TestLRFU_FrequencyOutranksRecency(t *testing.T) {
	for _, pol := range []string{"lrfu", "lru"} {
		tr, err := New(Config{PageSize: 1, Policy: pol})
		if err != nil {
			t.Fatal(err)
		}
		tr.adapt.horizon = 100
		ins := func(key []uint32, base int32) {
			t.Helper()
			r, err := tr.Match(nil, Namespace{}, key)
			if err != nil {
				t.Fatal(err)
			}
			slots := make([]int32, len(key))
			for j := range slots {
				slots[j] = base + int32(j)
			}
			if _, _, err := tr.Insert(InsertParams{Tokens: key, Slots: append(r.Indices, slots[r.DeviceLen:]...), PrevPrefixLen: r.DeviceLen}); err != nil {
				t.Fatal(err)
			}
		}
		for range 5 {
			ins([]uint32{1, 2}, 0)
		}
		ins([]uint32{7, 8}, 10)
		acts, _, err := tr.Evict(Full, 1, nil)
		if err != nil || len(acts) != 1 {
			t.Fatalf("%s: evict: %v, %v", pol, acts, err)
		}
		want := map[string]int32{"lrfu": 11, "lru": 0}[pol] // lrfu trims: the new leaf's end
		if acts[0].Slots[0] != want {
			t.Fatalf("%s evicted %v; want slot %d first", pol, acts, want)
		}
		if err := tr.SanityCheck(); err != nil {
			t.Fatal(err)
		}
	}
}
