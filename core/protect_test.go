package core_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/radixkv/radixkv/core"
)

func seq(base uint32, n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = base + uint32(i)
	}
	return out
}

func slotsFrom(base int32, n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = base + int32(i)
	}
	return out
}

func sane(t *testing.T, tr *core.Tree) {
	t.Helper()
	if err := tr.SanityCheck(); err != nil {
		t.Fatal(err)
	}
}

// TestProtect_EvictsProtectedLast: under every policy, a leaf on a queued
// request's prefix goes after every unprotected leaf, and only when
// nothing else is left; Unprotect restores the policy's own order.
func TestProtect_EvictsProtectedLast(t *testing.T) {
	for _, pol := range core.PolicyNames() {
		t.Run(pol, func(t *testing.T) {
			tr, err := core.New(core.Config{PageSize: 4, Policy: pol})
			if err != nil {
				t.Fatal(err)
			}
			// Three unrelated 8-token requests, a (oldest), b, c.
			keys := [][]uint32{seq(100, 8), seq(200, 8), seq(300, 8)}
			for k, key := range keys {
				if _, _, err := tr.Insert(core.InsertParams{Tokens: key, Slots: slotsFrom(int32(8*k), 8)}); err != nil {
					t.Fatal(err)
				}
			}
			// A queued request shares b's first page only: b's whole leaf is
			// protected (the prefix ends inside it).
			p, err := tr.Protect(core.Namespace{}, append(seq(200, 4), 9, 9, 9, 9))
			if err != nil || p.Len != 4 || tr.Protections() != 1 {
				t.Fatalf("protect: %+v, %v (live %d); want 4 tokens", p, err, tr.Protections())
			}
			sane(t, tr)
			acts, freed, err := tr.Evict(core.Full, 16, nil)
			if err != nil || freed != 16 {
				t.Fatalf("evict 16: freed %d, %v", freed, err)
			}
			for _, a := range acts {
				if slices.Contains(a.Slots, 8) {
					t.Fatalf("evicted the protected leaf while others were left: %v", acts)
				}
			}
			sane(t, tr)
			if r, _ := tr.Match(nil, core.Namespace{}, keys[1]); r.DeviceLen != 8 {
				t.Fatalf("protected request matches %d tokens, want 8", r.DeviceLen)
			}
			// Soft: with nothing else left, the protected leaf goes too.
			if _, freed, err := tr.Evict(core.Full, 8, nil); err != nil || freed != 8 {
				t.Fatalf("evict the protected leaf: freed %d, %v", freed, err)
			}
			sane(t, tr)
			if err := tr.Unprotect(p.Serial); err != nil {
				t.Fatal(err)
			}
			sane(t, tr)
			if err := tr.Unprotect(p.Serial); !errors.Is(err, core.ErrInvalidArgument) {
				t.Fatalf("second unprotect: %v; want ErrInvalidArgument", err)
			}
		})
	}
}

// TestProtect_SurvivesSplits: a split under a protected path (by a match
// or an insert that branches inside it) keeps the counts consistent, and
// Unprotect releases both halves.
func TestProtect_SurvivesSplits(t *testing.T) {
	tr, _ := core.New(core.Config{PageSize: 4})
	key := seq(1, 16)
	if _, _, err := tr.Insert(core.InsertParams{Tokens: key, Slots: slotsFrom(0, 16)}); err != nil {
		t.Fatal(err)
	}
	p1, _ := tr.Protect(core.Namespace{}, key)
	p2, _ := tr.Protect(core.Namespace{}, key[:8])
	if p1.Len != 16 || p2.Len != 8 || p1.Serial == p2.Serial {
		t.Fatalf("protections %+v %+v", p1, p2)
	}
	// Branch at 8 and at 4: two splits of the protected leaf.
	if _, _, err := tr.Insert(core.InsertParams{Tokens: append(seq(1, 8), 50, 51, 52, 53), Slots: slotsFrom(16, 12)}); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Match(nil, core.Namespace{}, append(seq(1, 4), 70, 71, 72, 73)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := tr.Insert(core.InsertParams{Tokens: append(seq(1, 4), 70, 71, 72, 73), Slots: slotsFrom(28, 8)}); err != nil {
		t.Fatal(err)
	}
	sane(t, tr)
	// The unprotected branches go first.
	acts, _, err := tr.Evict(core.Full, 8, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range acts {
		if len(a.Slots) > 0 && a.Slots[0] < 16 {
			t.Fatalf("evicted part of the protected path first: %v", acts)
		}
	}
	for _, s := range []uint64{p2.Serial, p1.Serial} {
		if err := tr.Unprotect(s); err != nil {
			t.Fatal(err)
		}
		sane(t, tr)
	}
	if tr.Protections() != 0 {
		t.Fatalf("%d protections left", tr.Protections())
	}
}

// TestProtect_Errors: refused calls change nothing.
func TestProtect_Errors(t *testing.T) {
	tr, _ := core.New(core.Config{PageSize: 4})
	if _, _, err := tr.Insert(core.InsertParams{Tokens: seq(1, 8), Slots: slotsFrom(0, 8)}); err != nil {
		t.Fatal(err)
	}
	if err := tr.Unprotect(1); !errors.Is(err, core.ErrInvalidArgument) {
		t.Fatalf("unprotect of a serial never issued: %v", err)
	}
	if err := tr.EvictStart(core.Full, 4); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Protect(core.Namespace{}, seq(1, 8)); !errors.Is(err, core.ErrEvictionInFlight) {
		t.Fatalf("protect during a walk: %v", err)
	}
	tr.EvictEnd()
	if tr.Protections() != 0 {
		t.Fatal("a refused protect left a protection")
	}
	// A prefix the cache does not hold, and one shorter than a page.
	for _, key := range [][]uint32{seq(500, 8), seq(1, 3), nil} {
		p, err := tr.Protect(core.Namespace{}, key)
		if err != nil || p.Len != 0 {
			t.Fatalf("protect %v: %+v, %v; want 0 tokens", key, p, err)
		}
		if err := tr.Unprotect(p.Serial); err != nil {
			t.Fatal(err)
		}
	}
	sane(t, tr)
	// Reset drops every protection; serials go on.
	p, _ := tr.Protect(core.Namespace{}, seq(1, 8))
	tr.Reset()
	if tr.Protections() != 0 {
		t.Fatal("reset kept a protection")
	}
	if err := tr.Unprotect(p.Serial); !errors.Is(err, core.ErrInvalidArgument) {
		t.Fatalf("unprotect after reset: %v", err)
	}
	q, _ := tr.Protect(core.Namespace{}, nil)
	if q.Serial <= p.Serial {
		t.Fatalf("serial %d reused after reset (last %d)", q.Serial, p.Serial)
	}
}

func ExampleTree_Protect() {
	tr, _ := core.New(core.Config{PageSize: 4})
	_, _, _ = tr.Insert(core.InsertParams{Tokens: []uint32{1, 2, 3, 4, 5, 6, 7, 8}, Slots: []int32{0, 1, 2, 3, 4, 5, 6, 7}})
	// A request waiting in the scheduler's queue shares the first page.
	p, _ := tr.Protect(core.Namespace{}, []uint32{1, 2, 3, 4, 9, 9, 9, 9})
	fmt.Println("protected tokens:", p.Len)
	// ... it is admitted: release the protection.
	fmt.Println(tr.Unprotect(p.Serial), tr.Protections())
	// Output:
	// protected tokens: 4
	// <nil> 0
}
