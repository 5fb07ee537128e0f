package core_test

import (
	"testing"

	"github.com/radixkv/radixkv/core"
)

// TestLRFU_TrimsTheEnd: lrfu frees only the pages a Full-only walk still
// wants, from the end of the leaf, so the front stays matchable.
func TestLRFU_TrimsTheEnd(t *testing.T) {
	tr, err := core.New(core.Config{PageSize: 4, Policy: "lrfu"})
	if err != nil {
		t.Fatal(err)
	}
	key := []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	slots := []int32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
	if _, _, err := tr.Insert(core.InsertParams{Tokens: key, Slots: slots}); err != nil {
		t.Fatal(err)
	}
	acts, freed, err := tr.Evict(core.Full, 3, nil)
	if err != nil || freed != 4 {
		t.Fatalf("evict 3 atoms: freed %d, %v; want one page (4)", freed, err)
	}
	if len(acts) != 1 || len(acts[0].Slots) != 4 || acts[0].Slots[0] != 12 {
		t.Fatalf("evict freed %v; want the last page, slots 12..15", acts)
	}
	r, err := tr.Match(nil, core.Namespace{}, key)
	if err != nil || r.DeviceLen != 12 {
		t.Fatalf("match after the trim: %d atoms, %v; want 12", r.DeviceLen, err)
	}
	if err := tr.SanityCheck(); err != nil {
		t.Fatal(err)
	}
	// Under lru the same walk takes the whole leaf.
	lru, _ := core.New(core.Config{PageSize: 4})
	if _, _, err := lru.Insert(core.InsertParams{Tokens: key, Slots: slots}); err != nil {
		t.Fatal(err)
	}
	if _, freed, _ := lru.Evict(core.Full, 3, nil); freed != 16 {
		t.Fatalf("lru freed %d; want the whole leaf", freed)
	}
}

// TestTrim_IsNoAccess: the front a trim leaves keeps the leaf's place in
// the recency order, so the next walk goes on with it, not with a newer
// leaf (split stamps fresh ticks; a trim must not count as a use).
func TestTrim_IsNoAccess(t *testing.T) {
	for _, pol := range []string{"admit", "lrfu", "branch", "lhd"} {
		tr, err := core.New(core.Config{PageSize: 4, Policy: pol})
		if err != nil {
			t.Fatal(err)
		}
		old := []uint32{1, 2, 3, 4, 5, 6, 7, 8}
		newer := []uint32{9, 10, 11, 12, 13, 14, 15, 16}
		if _, _, err := tr.Insert(core.InsertParams{Tokens: old, Slots: []int32{0, 1, 2, 3, 4, 5, 6, 7}}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := tr.Insert(core.InsertParams{Tokens: newer, Slots: []int32{8, 9, 10, 11, 12, 13, 14, 15}}); err != nil {
			t.Fatal(err)
		}
		if _, freed, err := tr.Evict(core.Full, 4, nil); err != nil || freed != 4 {
			t.Fatalf("%s: first trim freed %d, %v", pol, freed, err)
		}
		acts, freed, err := tr.Evict(core.Full, 4, nil)
		if err != nil || freed != 4 || len(acts) != 1 || acts[0].Slots[0] != 0 {
			t.Fatalf("%s: second walk freed %d (%v, %v); want the old leaf's front, slots 0..3", pol, freed, acts, err)
		}
		if r, _ := tr.Match(nil, core.Namespace{}, newer); r.DeviceLen != 8 {
			t.Fatalf("%s: the newer leaf lost pages: %d cached", pol, r.DeviceLen)
		}
		if err := tr.SanityCheck(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAdmit_ProbationFirst: admit evicts a never-reused leaf before an
// older reused one (lru would take the older), and a leaf recreated from
// its ghost counts as reused.
func TestAdmit_ProbationFirst(t *testing.T) {
	tr, err := core.New(core.Config{PageSize: 4, Policy: "admit"})
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := []uint32{1, 2, 3, 4}, []uint32{5, 6, 7, 8}, []uint32{9, 10, 11, 12}
	ins := func(k []uint32, s int32) {
		t.Helper()
		if _, _, err := tr.Insert(core.InsertParams{Tokens: k, Slots: []int32{s, s + 1, s + 2, s + 3}}); err != nil {
			t.Fatal(err)
		}
	}
	evictOne := func() int32 {
		t.Helper()
		acts, freed, err := tr.Evict(core.Full, 4, nil)
		if err != nil || freed != 4 || len(acts) != 1 {
			t.Fatalf("evict: %v, %d, %v", acts, freed, err)
		}
		return acts[0].Slots[0]
	}
	ins(a, 0)
	if _, err := tr.Match(nil, core.Namespace{}, a); err != nil { // a is reused
		t.Fatal(err)
	}
	ins(b, 4) // a newer probationer
	if s := evictOne(); s != 4 {
		t.Fatalf("evicted slot %d; want b (slot 4), the probationer", s)
	}
	// b is recreated from its ghost, so it is reused; a probationer came
	// back, so W grew by one tick.
	ins(b, 4)
	ins(c, 8) // a new probationer, inside the window for now
	// Time passes.
	if _, err := tr.Match(nil, core.Namespace{}, a); err != nil {
		t.Fatal(err)
	}
	if s := evictOne(); s != 8 {
		t.Fatalf("evicted slot %d; want c (slot 8), past its window: b came back, so it is reused (lru would take b)", s)
	}
	if err := tr.SanityCheck(); err != nil {
		t.Fatal(err)
	}
}
