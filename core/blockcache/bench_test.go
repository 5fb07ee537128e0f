package blockcache_test

import (
	"testing"

	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/core/blockcache"
)

const (
	benchLen   = 4096
	benchBlock = 16
	benchBatch = 256 // inserts per tree before it is rebuilt outside the timer
)

func key(base uint32, n int) []uint32 {
	k := make([]uint32, n)
	for j := range k {
		k[j] = base + uint32(j)
	}
	return k
}

func ids(base, n int) []uint32 {
	s := make([]uint32, n)
	for j := range s {
		s[j] = uint32(base + j)
	}
	return s
}

func slots(base, n int) []int32 {
	s := make([]int32, n)
	for j := range s {
		s[j] = int32(base + j)
	}
	return s
}

func newFacade(b *testing.B) *blockcache.Cache {
	c, err := blockcache.New(blockcache.Config{BlockSize: benchBlock})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

func newTree(b *testing.B) *core.Tree {
	t, err := core.New(core.Config{PageSize: benchBlock})
	if err != nil {
		b.Fatal(err)
	}
	return t
}

// BenchmarkCompare puts the facade next to the unified tree in one run:
// a lookup of a fully cached 4096-token sequence (the facade's includes
// its references and the snapshot index lookup; lookup+release gives them
// back in the same iteration) and the insert of a new 4096-token
// sequence, at block 16.
// The ratio blocks/tree of each op is the figure to quote.
func BenchmarkCompare(b *testing.B) {
	seq := key(1, benchLen)
	b.Run("op=lookup/impl=tree", func(b *testing.B) {
		t := newTree(b)
		if _, _, err := t.Insert(core.InsertParams{Tokens: seq, Slots: slots(0, benchLen)}); err != nil {
			b.Fatal(err)
		}
		dst := make([]int32, 0, benchLen)
		b.ReportAllocs()
		for b.Loop() {
			r, err := t.Match(dst[:0], core.Namespace{}, seq)
			if err != nil || r.DeviceLen != benchLen {
				b.Fatal(r.DeviceLen, err)
			}
		}
	})
	b.Run("op=lookup/impl=blocks", func(b *testing.B) {
		c := newFacade(b)
		if _, err := c.Insert(seq, ids(0, benchLen/benchBlock), nil, benchLen, 0); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() { // the references pile up; a uint32 holds them
			m, err := c.Lookup(seq, 0, 0)
			if err != nil || m.MatchedTokens != benchLen {
				b.Fatal(m.MatchedTokens, err)
			}
		}
	})
	b.Run("op=lookup+release/impl=blocks", func(b *testing.B) {
		c := newFacade(b)
		if _, err := c.Insert(seq, ids(0, benchLen/benchBlock), nil, benchLen, 0); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			m, err := c.Lookup(seq, 0, 0)
			if err != nil || m.MatchedTokens != benchLen {
				b.Fatal(m.MatchedTokens, err)
			}
			if err := c.ReleaseMatched(seq, m.MatchedTokens, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	keys := make([][]uint32, benchBatch)
	for k := range keys {
		keys[k] = key(uint32(k)*benchLen, benchLen)
	}
	b.Run("op=insert/impl=tree", func(b *testing.B) {
		t := newTree(b)
		s := slots(0, benchLen)
		k := 0
		b.ReportAllocs()
		for b.Loop() {
			if k == benchBatch {
				b.StopTimer()
				t = newTree(b)
				k = 0
				b.StartTimer()
			}
			if _, _, err := t.Insert(core.InsertParams{Tokens: keys[k], Slots: s}); err != nil {
				b.Fatal(err)
			}
			k++
		}
	})
	b.Run("op=insert/impl=blocks", func(b *testing.B) {
		c := newFacade(b)
		k := 0
		b.ReportAllocs()
		for b.Loop() {
			if k == benchBatch {
				b.StopTimer()
				c = newFacade(b)
				k = 0
				b.StartTimer()
			}
			if _, err := c.Insert(keys[k], ids(k*benchLen, benchLen/benchBlock), nil, 0, 0); err != nil {
				b.Fatal(err)
			}
			k++
		}
	})
}
