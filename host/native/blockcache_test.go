package native

import (
	"sync"
	"testing"

	"github.com/radixkv/radixkv/core/blockcache"
	"github.com/stretchr/testify/require"
)

// TestBlockCache_Hammer runs sequences from several goroutines over one
// shared cache and block pool: each looks up a prompt that shares a
// system prefix, takes fresh blocks for the rest (evicting when short),
// inserts, and releases. At the end every block is free or cached, never
// both, and the cache is sane.
func TestBlockCache_Hammer(t *testing.T) {
	const (
		bs      = 4
		pool    = 256
		workers = 4
	)
	iters := 300
	if raceEnabled {
		iters = 60
	}
	bc, err := NewBlockCache(blockcache.Config{BlockSize: bs})
	require.NoError(t, err)
	var mu sync.Mutex // the host's block pool
	free := make([]uint32, 0, pool)
	for i := range pool {
		free = append(free, uint32(i))
	}
	take := func(n int) []uint32 {
		mu.Lock()
		defer mu.Unlock()
		if short := n - len(free); short > 0 {
			mu.Unlock()
			ev := bc.Evict(short)
			mu.Lock()
			free = append(free, ev.Blocks...)
		}
		if len(free) < n {
			return nil
		}
		out := append([]uint32(nil), free[len(free)-n:]...)
		free = free[:len(free)-n]
		return out
	}
	give := func(bs []uint32) {
		mu.Lock()
		free = append(free, bs...)
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := uint32(w*7919 + 1)
			for i := range iters {
				x = x*1103515245 + 12345
				n := 8 + int(x>>8)%40
				toks := make([]uint32, n)
				for j := range toks {
					toks[j] = uint32(j)
					if j >= 8 {
						toks[j] = (x >> uint(j%16)) & 3
					}
				}
				m, err := bc.Lookup(toks, uint64(w+1), 0)
				if err != nil {
					t.Error(err)
					return
				}
				full := m.MatchedTokens / bs
				need := (n+bs-1)/bs - full
				fresh := take(need)
				if fresh == nil {
					if err := bc.ReleaseMatched(toks, m.MatchedTokens, 0); err != nil {
						t.Error(err)
					}
					continue
				}
				table := append(append([]uint32(nil), m.Blocks[:full]...), fresh...)
				a, err := bc.Insert(toks, table, nil, m.MatchedTokens, 0)
				if err != nil {
					t.Error(i, err)
					return
				}
				adopted := map[uint32]bool{}
				for _, b := range a.Blocks {
					adopted[b] = true
				}
				var back []uint32
				for _, b := range fresh {
					if !adopted[b] {
						back = append(back, b)
					}
				}
				give(append(back, a.Released...))
				if err := bc.ReleaseMatched(toks, min(n/bs, len(table))*bs, 0); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	require.NoError(t, bc.Check())
	st := bc.Stats()
	require.Zero(t, st.Referenced, "every sequence released its blocks")
	require.NotZero(t, st.EvictedBlocks, "the pool ran short")
	require.Equal(t, pool, len(free)+st.Blocks, "blocks lost or duplicated")
}
