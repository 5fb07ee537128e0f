package core_test

import (
	"errors"
	"testing"

	"github.com/radixkv/radixkv/core"
)

// TestInsertMatchedSlots: the slots a Match appended are trusted
// (MatchedSlots) only with AfterMatch, in the very buffer and while the
// tree's shape is unchanged; slots past them, slots in another buffer and
// slots after the tree changed are checked for negative values as ever,
// and a refused insert changes nothing.
func TestInsertMatchedSlots(t *testing.T) {
	ns := core.Namespace{CacheSalt: "m"}
	toks := make([]uint32, 8)
	for i := range toks {
		toks[i] = uint32(i + 1)
	}
	setUp := func(t *testing.T) (*core.Tree, []int32) {
		tr, err := core.New(core.Config{PageSize: 2})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := tr.Insert(core.InsertParams{Namespace: ns, Tokens: toks[:4], Slots: []int32{0, 1, 2, 3}}); err != nil {
			t.Fatal(err)
		}
		m, err := tr.Match(make([]int32, 0, 8), ns, toks)
		if err != nil || len(m.Indices) != 4 {
			t.Fatalf("match: %v %v", m.Indices, err)
		}
		return tr, m.Indices
	}
	insert := func(tr *core.Tree, slots []int32, k int) error {
		_, err := tr.BeginInsert(core.InsertParams{Namespace: ns, Tokens: toks, Slots: slots, PrevPrefixLen: 4, AfterMatch: true, MatchedSlots: k})
		return err
	}
	refused := func(t *testing.T, tr *core.Tree, err error) {
		t.Helper()
		if !errors.Is(err, core.ErrInvalidArgument) {
			t.Fatalf("want invalid argument, got %v", err)
		}
		if ev := tr.Evictable(core.Full); ev != 4 {
			t.Fatalf("refused insert changed the tree: %d evictable", ev)
		}
		if err := tr.SanityCheck(); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("trusted", func(t *testing.T) {
		tr, idx := setUp(t)
		if err := insert(tr, append(idx, 10, 11, 12, 13), 4); err != nil {
			t.Fatal(err)
		}
		if err := tr.SanityCheck(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("negative past the trusted slots", func(t *testing.T) {
		tr, idx := setUp(t)
		refused(t, tr, insert(tr, append(idx, 10, -1, 12, 13), 4))
		refused(t, tr, insert(tr, append(idx, 10, 11, 12, -1), 8)) // more trusted than the match appended
	})
	t.Run("another buffer", func(t *testing.T) {
		tr, _ := setUp(t)
		refused(t, tr, insert(tr, []int32{-1, 1, 2, 3, 10, 11, 12, 13}, 4))
	})
	t.Run("tree changed since", func(t *testing.T) {
		tr, idx := setUp(t)
		if _, _, err := tr.Insert(core.InsertParams{Namespace: ns, Tokens: []uint32{9, 9}, Slots: []int32{50, 51}}); err != nil {
			t.Fatal(err)
		}
		s := append(idx, 10, 11, 12, 13)
		s[0] = -1
		err := insert(tr, s, 4)
		if !errors.Is(err, core.ErrInvalidArgument) {
			t.Fatalf("want invalid argument, got %v", err)
		}
	})
	t.Run("without AfterMatch", func(t *testing.T) {
		tr, idx := setUp(t)
		s := append(idx, 10, 11, 12, 13)
		s[0] = -1
		_, err := tr.BeginInsert(core.InsertParams{Namespace: ns, Tokens: toks, Slots: s, PrevPrefixLen: 4, MatchedSlots: 4})
		refused(t, tr, err)
	})
}
