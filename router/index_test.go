package router

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/events"
)

// model is the naive reference: per worker, per block, per group, a tier
// mask, plus the last parent announced for each block.
type model struct {
	blocks  map[string]map[int64][numGroups]uint8
	parent  map[int64][2]int64 // hash -> (parent, hasParent)
	swa     map[string]int
	mamba   map[string]bool
	workers []string
}

func newModel() *model {
	return &model{blocks: map[string]map[int64][numGroups]uint8{}, parent: map[int64][2]int64{},
		swa: map[string]int{}, mamba: map[string]bool{}}
}

func (m *model) apply(w string, e events.Event) {
	if m.blocks[w] == nil {
		m.blocks[w] = map[int64][numGroups]uint8{}
		m.workers = append(m.workers, w)
		sort.Strings(m.workers)
	}
	g, _ := groupOfSpec(e.SpecKind)
	t := TierOf(e.Medium)
	switch e.Kind {
	case events.BlockStored:
		if g == GroupSWA {
			if e.SlidingWindow > 0 {
				m.swa[w] = (e.SlidingWindow + e.BlockSize - 1) / e.BlockSize
			} else if m.swa[w] == 0 {
				m.swa[w] = 1
			}
		}
		if g == GroupMamba {
			m.mamba[w] = true
		}
		p, hp := e.ParentBlockHash, e.HasParent
		for _, h := range e.BlockHashes {
			v := m.blocks[w][h]
			v[g] |= 1 << t
			m.blocks[w][h] = v
			hpv := int64(0)
			if hp {
				hpv = 1
			}
			m.parent[h] = [2]int64{p, hpv}
			p, hp = h, true
		}
	case events.BlockRemoved:
		for _, h := range e.BlockHashes {
			v, ok := m.blocks[w][h]
			if !ok {
				continue
			}
			v[g] &^= 1 << t
			if v == [numGroups]uint8{} {
				delete(m.blocks[w], h)
			} else {
				m.blocks[w][h] = v
			}
		}
	case events.AllBlocksCleared:
		clear(m.blocks[w])
	}
}

func (m *model) dump() []BlockState {
	var out []BlockState
	for _, w := range m.workers {
		for h, v := range m.blocks[w] {
			p := m.parent[h]
			out = append(out, BlockState{Hash: h, Parent: p[0], HasParent: p[1] == 1, Worker: w, Tiers: v})
		}
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].Hash != out[b].Hash {
			return out[a].Hash < out[b].Hash
		}
		return out[a].Worker < out[b].Worker
	})
	return out
}

// overlap is the naive resumable prefix of worker w.
func (m *model) overlap(w string, hashes []int64) int {
	best := 0
	for k := 1; k <= len(hashes); k++ {
		ok := true
		for i := 0; i < k; i++ {
			if m.blocks[w][hashes[i]][GroupFull] == 0 {
				return best
			}
		}
		if n := m.swa[w]; n > 0 {
			for i := max(0, k-n); i < k; i++ {
				if m.blocks[w][hashes[i]][GroupSWA] == 0 {
					ok = false
				}
			}
		}
		if m.mamba[w] && m.blocks[w][hashes[k-1]][GroupMamba] == 0 {
			ok = false
		}
		if ok {
			best = k
		}
	}
	return best
}

var media = []string{"GPU", "CPU_PINNED", "CPU_TIER2", ""}
var kinds = []string{"", "", "", "full_attention", "sliding_window", "mamba"}

func randomEvent(rng *rand.Rand, universe int) events.Event {
	chain := func(n int) []int64 {
		hs := make([]int64, n)
		for i := range hs {
			hs[i] = int64(rng.IntN(universe)) - int64(universe/2)
		}
		return hs
	}
	switch x := rng.IntN(20); {
	case x < 12:
		e := events.Event{Kind: events.BlockStored, BlockHashes: chain(1 + rng.IntN(5)), BlockSize: 4,
			Medium: media[rng.IntN(len(media))], SpecKind: kinds[rng.IntN(len(kinds))]}
		e.TokenIDs = make([]uint32, 4*len(e.BlockHashes))
		if rng.IntN(2) == 0 {
			e.ParentBlockHash, e.HasParent = int64(rng.IntN(universe)), true
		}
		if e.SpecKind == "sliding_window" && rng.IntN(2) == 0 {
			e.SlidingWindow = 4 * (1 + rng.IntN(3))
		}
		return e
	case x < 19:
		return events.Event{Kind: events.BlockRemoved, BlockHashes: chain(1 + rng.IntN(4)),
			Medium: media[rng.IntN(len(media))], SpecKind: kinds[rng.IntN(len(kinds))]}
	}
	return events.Event{Kind: events.AllBlocksCleared}
}

// TestIndexEqualsUnion: after every message of a random stream from
// several workers, the index equals the union of the workers' block sets
// (the naive model), every worker's overlap of random queries equals the
// model's, and the internal invariants hold.
func TestIndexEqualsUnion(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		rng := rand.New(rand.NewPCG(seed, 99))
		r, err := New(Config{})
		require.NoError(t, err)
		m := newModel()
		seqs := map[string]uint64{}
		for step := 0; step < 300; step++ {
			w := fmt.Sprintf("w%d", rng.IntN(4))
			var b events.Batch
			for k := rng.IntN(4); k >= 0; k-- {
				b.Events = append(b.Events, randomEvent(rng, 24))
			}
			out, err := r.Ingest(Message{Worker: w, Seq: seqs[w], Batch: b})
			require.NoError(t, err)
			require.Equal(t, Applied, out)
			seqs[w]++
			for _, e := range b.Events {
				m.apply(w, e)
			}
			require.NoError(t, r.Check())
			require.Equal(t, m.dump(), r.Dump(), "seed %d step %d", seed, step)
			q := make([]int64, 1+rng.IntN(6))
			for i := range q {
				q[i] = int64(rng.IntN(24)) - 12
			}
			d, err := r.Route(Request{BlockHashes: q})
			require.NoError(t, err)
			for _, s := range d.Scores {
				require.Equal(t, m.overlap(s.Worker, q), s.Overlap, "seed %d step %d worker %s q %v", seed, step, s.Worker, q)
			}
		}
	}
}

// TestIndexMatchesCoreTrees runs real core trees as workers: random
// inserts and evictions, their events carried through a random wire
// format, and after every step each worker's overlap of a random request
// equals what that worker's own tree matches.
func TestIndexMatchesCoreTrees(t *testing.T) {
	const page, nw = 4, 3
	rng := rand.New(rand.NewPCG(7, 7))
	formats := []events.Format{events.VLLMArray, events.VLLMMap, events.SGLangArray, events.SGLangMap}
	for _, conv := range []core.HashConvention{core.HashSGLang, core.HashVLLM} {
		r, err := New(Config{})
		require.NoError(t, err)
		trees := make([]*core.Tree, nw)
		seqs := make([]uint64, nw)
		for i := range trees {
			trees[i], err = core.New(core.Config{PageSize: page, KVEvents: true, HashConvention: conv})
			require.NoError(t, err)
		}
		prompts := func() []uint32 {
			// a few shared stems, random continuations
			stem := uint32(rng.IntN(3))
			n := page * (1 + rng.IntN(6))
			toks := make([]uint32, n)
			for i := range toks {
				if i < 8 {
					toks[i] = stem*100 + uint32(i)
				} else {
					toks[i] = uint32(rng.IntN(3))
				}
			}
			return toks
		}
		next := int32(0)
		hits := 0
		for step := 0; step < 400; step++ {
			w := rng.IntN(nw)
			tr := trees[w]
			if rng.IntN(4) == 0 {
				_, _, err := tr.Evict(core.Full, 1+rng.IntN(12), nil)
				require.NoError(t, err)
			} else {
				toks := prompts()
				res, err := tr.Match(nil, core.Namespace{}, toks)
				require.NoError(t, err)
				slots := append([]int32(nil), res.Indices...)
				for len(slots) < len(toks) {
					slots = append(slots, next)
					next++
				}
				_, _, err = tr.Insert(core.InsertParams{Tokens: toks, Slots: slots, PrevPrefixLen: res.DeviceLen})
				require.NoError(t, err)
			}
			evs, err := events.FromCoreEvents(tr.TakeEvents(nil))
			require.NoError(t, err)
			f := formats[rng.IntN(len(formats))]
			p, err := events.Encode(f, &events.Batch{TS: float64(step), Events: evs})
			require.NoError(t, err)
			b, err := events.Decode(p, f.Dialect)
			require.NoError(t, err)
			_, err = r.Ingest(Message{Worker: fmt.Sprintf("w%d", w), Seq: seqs[w], Batch: b})
			require.NoError(t, err)
			seqs[w]++
			require.NoError(t, r.Check())

			q := prompts()
			hashes, err := events.BlockHashes(nil, conv, "", q, page)
			require.NoError(t, err)
			d, err := r.Route(Request{BlockHashes: hashes})
			require.NoError(t, err)
			for _, s := range d.Scores {
				var k int
				fmt.Sscanf(s.Worker, "w%d", &k)
				res, err := trees[k].Match(nil, core.Namespace{}, q)
				require.NoError(t, err)
				require.Equal(t, res.DeviceLen/page, s.Overlap, "conv %v step %d worker %s", conv, step, s.Worker)
				require.Equal(t, s.Overlap, s.DeviceBlocks)
				hits += s.Overlap
			}
		}
		st := r.Stats()
		require.Greater(t, hits, 100)
		var removed uint64
		for _, w := range st.Workers {
			removed += w.Removed
		}
		require.Greater(t, removed, uint64(50))
		t.Logf("%v: %d overlap blocks found, %d blocks removed, index %d blocks", conv, hits, removed, st.Blocks)
	}
}

// TestHybridResumable: a worker with an SWA group of a 2-block window and
// one with Mamba states: overlap ends where they can resume.
func TestHybridResumable(t *testing.T) {
	r, err := New(Config{})
	require.NoError(t, err)
	stored := func(w string, kind string, hs ...int64) {
		_, err := r.Ingest(Message{Worker: w, Seq: nextSeq(r, w), Batch: events.Batch{Events: []events.Event{{
			Kind: events.BlockStored, BlockHashes: hs, BlockSize: 4, Medium: "GPU", SpecKind: kind, SlidingWindow: 8}}}})
		require.NoError(t, err)
	}
	stored("swa", "full_attention", 1, 2, 3, 4, 5)
	stored("swa", "sliding_window", 2, 3) // window lost for blocks 4, 5
	stored("mamba", "full_attention", 1, 2, 3, 4, 5)
	stored("mamba", "mamba", 3)
	d, err := r.Route(Request{BlockHashes: []int64{1, 2, 3, 4, 5}})
	require.NoError(t, err)
	got := map[string]int{}
	for _, s := range d.Scores {
		got[s.Worker] = s.Overlap
	}
	require.Equal(t, map[string]int{"swa": 3, "mamba": 3}, got)
}

func nextSeq(r *Router, w string) uint64 {
	s, _, _ := r.NextSeq(w)
	return s
}

func TestBudgetEviction(t *testing.T) {
	budget := int64(50 * (entryBytes + holderBytes))
	r, err := New(Config{BudgetBytes: budget})
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(3, 3))
	for i := 0; i < 200; i++ {
		b := events.Batch{Events: []events.Event{randomEvent(rng, 1000)}}
		_, err := r.Ingest(Message{Worker: "w", Seq: uint64(i), Batch: b})
		require.NoError(t, err)
		require.NoError(t, r.Check())
		st := r.Stats()
		require.LessOrEqual(t, st.Bytes, budget)
	}
	st := r.Stats()
	require.Greater(t, st.Evicted, uint64(0))
	t.Logf("budget %d B: %d blocks, %d B, %d evicted", budget, st.Blocks, st.Bytes, st.Evicted)
}

func TestRouteCost(t *testing.T) {
	r, err := New(Config{PrefillWeight: 2})
	require.NoError(t, err)
	require.NoError(t, r.AddWorker("a"))
	require.NoError(t, r.AddWorker("b"))
	_, err = r.Ingest(Message{Worker: "a", Batch: events.Batch{Events: []events.Event{
		{Kind: events.BlockStored, BlockHashes: []int64{1, 2, 3}, BlockSize: 1, Medium: "GPU"}}}})
	require.NoError(t, err)
	d, err := r.Route(Request{BlockHashes: []int64{1, 2, 3, 4}})
	require.NoError(t, err)
	require.Equal(t, "a", d.Worker)
	require.Equal(t, 2.0, d.Scores[0].Cost) // 2·1 + 0
	require.NoError(t, r.Start("a", 10))
	d, err = r.Route(Request{BlockHashes: []int64{1, 2, 3, 4}})
	require.NoError(t, err)
	require.Equal(t, "b", d.Worker) // 2·4 + 0 < 2·1 + 10
	require.NoError(t, r.Complete("a", 10))
	require.ErrorIs(t, r.Complete("a", 1), ErrInvalid)
	require.ErrorIs(t, r.Start("zz", 1), ErrInvalid)
	_, err = New(Config{PrefillWeight: -1})
	require.ErrorIs(t, err, ErrInvalid)
	empty, _ := New(Config{})
	_, err = empty.Route(Request{})
	require.ErrorIs(t, err, ErrInvalid)
}

// TestBudgetEstimate compares the index's byte estimate with the heap it
// really takes for 100,000 blocks held by two workers each.
func TestBudgetEstimate(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r, _ := New(Config{})
	const n, per = 100000, 50
	for _, w := range []string{"a", "b"} {
		for s := 0; s < n/per; s++ {
			hs := make([]int64, per)
			for j := range hs {
				hs[j] = int64(s*per + j)
			}
			_, err := r.Ingest(Message{Worker: w, Seq: uint64(s), Batch: events.Batch{Events: []events.Event{
				{Kind: events.BlockStored, BlockHashes: hs, BlockSize: 16}}}})
			require.NoError(t, err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	real := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	est := r.Stats().Bytes
	t.Logf("%d blocks × 2 holders: estimate %d B, heap %d B (%.2fx)", n, est, real, float64(real)/float64(est))
	require.InDelta(t, 1.0, float64(real)/float64(est), 0.6)
	runtime.KeepAlive(r)
}
