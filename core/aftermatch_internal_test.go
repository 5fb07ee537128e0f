package core

import (
	"fmt"
	"math/rand"
	"reflect"
	"testing"
)

// sameTrees fails unless a and b hold the same nodes with the same
// contents (both sane).
func sameTrees(t *testing.T, step int, a, b *Tree) {
	t.Helper()
	for _, tr := range []*Tree{a, b} {
		if err := tr.SanityCheck(); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
	}
	na, nb := a.Nodes(), b.Nodes()
	if !reflect.DeepEqual(na, nb) {
		t.Fatalf("step %d: nodes differ:\n%v\n%v", step, na, nb)
	}
	for _, id := range na {
		ia, _ := a.Inspect(id)
		ib, _ := b.Inspect(id)
		if !reflect.DeepEqual(ia, ib) {
			t.Fatalf("step %d: node %v differs:\n%+v\n%+v", step, id, ia, ib)
		}
	}
}

// TestInsertAfterMatch_Differential runs one workload on two trees in
// lockstep: one inserts with AfterMatch after each match, the other
// plainly. Between a match and its insert the workload sometimes changes
// the tree (another insert, an eviction, a match of other tokens, a
// reset), after which the promise must not be used. Results, actions and
// trees must be identical after every step, and the skip must be taken
// exactly when the tree is unchanged since the match.
func TestInsertAfterMatch_Differential(t *testing.T) {
	for _, page := range []int{1, 2, 4} {
		for _, pol := range []string{"lru", "lfu"} {
			t.Run(fmt.Sprintf("page%d/%s", page, pol), func(t *testing.T) {
				cfg := Config{PageSize: page, Policy: pol}
				a, err := New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := New(cfg)
				rng := rand.New(rand.NewSource(int64(page)))
				seq := func() []uint32 {
					q := make([]uint32, 1+rng.Intn(24))
					for i := range q {
						q[i] = uint32(rng.Intn(3))
					}
					return q
				}
				next := int32(0)
				slotsFor := func(idx []int32, n int) []int32 {
					s := append([]int32(nil), idx...)
					for len(s) < n {
						s = append(s, next)
						next++
					}
					return s
				}
				nss := []Namespace{{}, {CacheSalt: "x"}}
				skipped := 0
				for step := range 1500 {
					ns := nss[rng.Intn(2)]
					buf := seq()
					bufB := append([]uint32(nil), buf...)
					ra, erra := a.Match(nil, ns, buf)
					rb, errb := b.Match(nil, ns, bufB)
					if erra != nil || errb != nil || !reflect.DeepEqual(ra, rb) {
						t.Fatalf("step %d: match %+v %v / %+v %v", step, ra, erra, rb, errb)
					}
					before := a.shape
					changed := false
					switch rng.Intn(8) {
					case 0: // another insert
						o := seq()
						p := InsertParams{Namespace: nss[rng.Intn(2)], Tokens: o, Slots: slotsFor(nil, len(o))}
						_, aa, e1 := a.Insert(p)
						_, ab, e2 := b.Insert(p)
						if e1 != nil || e2 != nil || !reflect.DeepEqual(aa, ab) {
							t.Fatalf("step %d: side insert %v %v", step, e1, e2)
						}
						changed = a.shape != before
					case 1: // an eviction
						want := 1 + rng.Intn(8)
						aa, fa, e1 := a.Evict(Full, want, nil)
						ab, fb, e2 := b.Evict(Full, want, nil)
						if fa != fb || !reflect.DeepEqual(aa, ab) || (e1 == nil) != (e2 == nil) {
							t.Fatalf("step %d: evict %d %v / %d %v", step, fa, e1, fb, e2)
						}
						changed = a.shape != before
					case 2: // a match of other tokens: the last match moves
						o := seq()
						a.Match(nil, ns, o)
						b.Match(nil, ns, append([]uint32(nil), o...))
						changed = true
					case 3:
						if rng.Intn(20) == 0 {
							a.Reset()
							b.Reset()
							changed = a.shape != before
						}
					}
					// The insert: a prefix of the match's tokens (or all of
					// them), slots starting with the match's indices.
					k := len(buf)
					if rng.Intn(3) == 0 {
						k = rng.Intn(len(buf) + 1)
					}
					idx := ra.Indices
					if len(idx) > k/page*page {
						idx = idx[:k/page*page]
					}
					sl := slotsFor(idx, k)
					pa := InsertParams{Namespace: ns, Tokens: buf[:k], Slots: sl, PrevPrefixLen: min(ra.DeviceLen, k/page*page), AfterMatch: true}
					pb := pa
					pb.Tokens, pb.AfterMatch = bufB[:k], false
					if changed {
						// A broken promise must not matter once the tree
						// changed: the walk compares.
						for i := range buf[:k] {
							buf[i] = uint32(rng.Intn(3))
						}
						copy(bufB, buf)
						pb.PrevPrefixLen, pa.PrevPrefixLen = 0, 0
					}
					a.ins.proven = 0 // an empty insert returns before resetting it
					resA, actA, e1 := a.Insert(pa)
					resB, actB, e2 := b.Insert(pb)
					if (e1 == nil) != (e2 == nil) || !reflect.DeepEqual(resA, resB) || !reflect.DeepEqual(actA, actB) {
						t.Fatalf("step %d: insert %+v %v %v / %+v %v %v", step, resA, actA, e1, resB, actB, e2)
					}
					// The promise is used exactly when nothing changed and
					// the match compared something.
					used := a.ins.proven > 0
					if changed && used {
						t.Fatalf("step %d: the insert used a match from before a change", step)
					}
					if used {
						skipped++
					}
					sameTrees(t, step, a, b)
				}
				if skipped < 150 {
					t.Fatalf("the skip was taken in only %d inserts", skipped)
				}
			})
		}
	}
}

// TestInsertAfterMatch_Refused: the promise is refused for another buffer,
// a longer token list, another namespace, and after any change of the
// tree's shape, including a split made by a later match.
func TestInsertAfterMatch_Refused(t *testing.T) {
	tr, _ := New(Config{PageSize: 1})
	tr.Insert(InsertParams{Tokens: []uint32{1, 2, 3, 4}, Slots: []int32{0, 1, 2, 3}})
	proven := func(p InsertParams) int {
		p.AfterMatch = true
		tr.ins.proven = 0
		if _, _, err := tr.Insert(p); err != nil {
			t.Fatal(err)
		}
		return tr.ins.proven
	}
	buf := []uint32{1, 2, 3, 4}
	tr.Match(nil, Namespace{}, buf)
	if n := proven(InsertParams{Tokens: buf[:3], Slots: []int32{0, 1, 2}, PrevPrefixLen: 3}); n != 3 {
		t.Fatalf("a prefix of the match's tokens: proven %d, want 3", n)
	}
	tr.Match(nil, Namespace{}, buf)
	if n := proven(InsertParams{Tokens: append([]uint32(nil), buf...), Slots: []int32{0, 1, 2, 3}}); n != 0 {
		t.Fatalf("another buffer: proven %d", n)
	}
	tr.Match(nil, Namespace{}, buf[:2])
	if n := proven(InsertParams{Tokens: buf[:3], Slots: []int32{0, 1, 2}}); n != 0 {
		t.Fatalf("longer than the match: proven %d", n)
	}
	tr.Match(nil, Namespace{}, buf)
	if n := proven(InsertParams{Namespace: Namespace{CacheSalt: "y"}, Tokens: buf, Slots: []int32{0, 1, 2, 3}}); n != 0 {
		t.Fatalf("another namespace: proven %d", n)
	}
	tr.Match(nil, Namespace{}, buf)
	tr.Match(nil, Namespace{}, []uint32{1, 2, 9}) // splits 1,2 | 3(,4)
	if n := proven(InsertParams{Tokens: buf, Slots: []int32{0, 1, 2, 3}}); n != 0 {
		t.Fatalf("after another match: proven %d", n)
	}
	tr.Match(nil, Namespace{}, buf)
	tr.Insert(InsertParams{Tokens: []uint32{7}, Slots: []int32{7}})
	if n := proven(InsertParams{Tokens: buf, Slots: []int32{0, 1, 2, 3}}); n != 0 {
		t.Fatalf("after an insert: proven %d", n)
	}
	tr.Match(nil, Namespace{}, buf)
	tr.Reset()
	if n := proven(InsertParams{Tokens: buf, Slots: []int32{0, 1, 2, 3}}); n != 0 {
		t.Fatalf("after a reset: proven %d", n)
	}
}
