package core

import "testing"

// TestBranch_ThetaLearnsFromGhosts: a probationer recreated soon after its
// eviction lowers θ (and grows W), a reused leaf recreated so raises θ
// (and shrinks W), each by a step of an eighth plus one.
func TestBranch_ThetaLearnsFromGhosts(t *testing.T) {
	tr, err := New(Config{PageSize: 1, Policy: "branch"})
	if err != nil {
		t.Fatal(err)
	}
	slot := int32(0)
	ins := func(key []uint32) {
		t.Helper()
		r, err := tr.Match(nil, Namespace{}, key)
		if err != nil {
			t.Fatal(err)
		}
		slots := append([]int32{}, r.Indices...)
		for len(slots) < len(key) {
			slots = append(slots, slot)
			slot++
		}
		if _, _, err := tr.Insert(InsertParams{Tokens: key, Slots: slots, PrevPrefixLen: r.DeviceLen}); err != nil {
			t.Fatal(err)
		}
	}
	evict := func() {
		t.Helper()
		if _, freed, err := tr.Evict(Full, 2, nil); err != nil || freed != 2 {
			t.Fatalf("evict freed %d, %v", freed, err)
		}
	}
	a, b := []uint32{1, 2}, []uint32{3, 4}
	ins(a)
	ins(b)
	if tr.branch.theta != branchOne || tr.branch.births != 2 {
		t.Fatalf("start: θ %d, births %d; want %d, 2", tr.branch.theta, tr.branch.births, branchOne)
	}
	evict() // a: the older probationer
	ins(a)  // its ghost: a probationer came back
	theta := int64(branchOne - (branchOne/8 + 1))
	if tr.branch.theta != theta || tr.branch.window != 1 || tr.branch.returns != 1 {
		t.Fatalf("after a probationer's return: θ %d, W %d, returns %d; want %d, 1, 1", tr.branch.theta, tr.branch.window, tr.branch.returns, theta)
	}
	evict() // b: still on probation, so before the recreated (reused) a
	evict() // a, reused
	ins(a)
	theta += theta/8 + 1
	if tr.branch.theta != theta || tr.branch.window != 0 || tr.branch.returns != 1 {
		t.Fatalf("after a reused leaf's return: θ %d, W %d, returns %d; want %d, 0, 1", tr.branch.theta, tr.branch.window, tr.branch.returns, theta)
	}
	if err := tr.SanityCheck(); err != nil {
		t.Fatal(err)
	}
}
