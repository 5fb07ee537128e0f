package core_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/radixkv/radixkv/core"
)

// benchKeyLen is the request length of the match and insert benchmarks.
const benchKeyLen = 4096

// benchKey returns n tokens starting at base (distinct bases give keys
// that differ from their first token).
func benchKey(base uint32, n int) []uint32 {
	k := make([]uint32, n)
	for j := range k {
		k[j] = base + uint32(j)
	}
	return k
}

// benchSlots returns n slot indices starting at base.
func benchSlots(base int32, n int) []int32 {
	s := make([]int32, n)
	for j := range s {
		s[j] = base + int32(j)
	}
	return s
}

func newBenchTree(b *testing.B, page int) *core.Tree {
	b.Helper()
	return newSetTree(b, benchSets[0], page)
}

// benchSet is a component set of the match and insert benchmarks, with the
// parameters the issue fixes for the comparison: [Full, SWA] with a
// 4096-token window and [Full, Mamba] with 64-token chunks. Each
// benchmark runs the sets as its innermost level, one after the other, so
// their ratios to [Full] come from the same run.
type benchSet struct {
	name string
	cfg  core.Config
}

var benchSets = []benchSet{
	{"set=full", core.Config{}},
	{"set=full+swa", core.Config{Components: []core.Component{core.Full, core.SWA}, SWAWindow: 4096}},
	{"set=full+mamba", core.Config{Components: []core.Component{core.Full, core.Mamba}, MambaChunkSize: 64}},
}

func newSetTree(b *testing.B, set benchSet, page int) *core.Tree {
	b.Helper()
	cfg := set.cfg
	cfg.PageSize = page
	t, err := core.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return t
}

func mustInsert(b *testing.B, t *core.Tree, p core.InsertParams) []core.Action {
	b.Helper()
	_, acts, err := t.Insert(p)
	if err != nil {
		b.Fatal(err)
	}
	return acts
}

// reportPerToken adds the ns/token metric for tokens handled per op.
func reportPerToken(b *testing.B, tokens int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(tokens), "ns/token")
}

// BenchmarkFloor is the physical floor of a match of 4096 cached tokens:
// compare the key with an equal copy and copy 4096 slot indices into an
// existing buffer. Match ns/op divided by this ns/op is the match/floor
// ratio.
func BenchmarkFloor(b *testing.B) {
	q := benchKey(1, benchKeyLen)
	k := slices.Clone(q)
	vals := benchSlots(0, benchKeyLen)
	dst := make([]int32, benchKeyLen)
	b.ReportAllocs()
	for b.Loop() {
		if !slices.Equal(q, k) {
			b.Fatal("keys differ")
		}
		copy(dst, vals)
	}
	reportPerToken(b, benchKeyLen)
}

// BenchmarkMatch matches a 4096-token request against a tree that caches
// all of it (cached=100%) or its first half (cached=50%: the request
// shares 2048 tokens with two cached 4096-token sequences that diverge
// there, so the steady-state walk ends on a branching node with no split;
// in Mamba trees that node also holds a state, as a branch checkpoint
// would, so every set matches 2048 tokens). The innermost level is the
// component set.
func BenchmarkMatch(b *testing.B) {
	for _, page := range []int{1, 16} {
		for _, cached := range []int{100, 50} {
			for _, set := range benchSets {
				b.Run(fmt.Sprintf("page=%d/cached=%d%%/%s", page, cached, set.name), func(b *testing.B) {
					t := newSetTree(b, set, page)
					key := benchKey(1, benchKeyLen)
					mustInsert(b, t, core.InsertParams{Tokens: key, Slots: benchSlots(0, benchKeyLen)})
					q := key
					want := benchKeyLen
					if cached == 50 {
						half := benchKeyLen / 2
						other := append(slices.Clone(key[:half]), benchKey(1<<20, half)...)
						mustInsert(b, t, core.InsertParams{Tokens: other, Slots: benchSlots(benchKeyLen, benchKeyLen), PrevPrefixLen: 0, MambaSlot: 1})
						mustInsert(b, t, core.InsertParams{Tokens: key[:half], Slots: benchSlots(0, half), PrevPrefixLen: half, MambaSlot: 2})
						q = append(slices.Clone(key[:half]), benchKey(1<<21, half)...)
						want = half
					}
					dst := make([]int32, 0, benchKeyLen)
					// One warm-up match performs any split.
					if r, err := t.Match(dst, core.Namespace{}, q); err != nil || r.DeviceLen != want {
						b.Fatalf("warm-up match: %d atoms, %v; want %d", r.DeviceLen, err, want)
					}
					b.ReportAllocs()
					for b.Loop() {
						r, err := t.Match(dst[:0], core.Namespace{}, q)
						if err != nil || r.DeviceLen != want {
							b.Fatalf("match: %d atoms, %v", r.DeviceLen, err)
						}
					}
					reportPerToken(b, benchKeyLen)
				})
			}
		}
	}
}

// insertBatch is how many distinct keys an insert benchmark inserts into
// one tree before it empties the tree outside the timer.
const insertBatch = 256

// BenchmarkInsert inserts 4096 new tokens (a key whose first page is new,
// so it becomes a new leaf under the root; in SWA trees with its SWA
// data, in Mamba trees with a state). Every insertBatch inserts the tree
// is Reset with the timer stopped. The innermost level is the component
// set.
func BenchmarkInsert(b *testing.B) {
	for _, page := range []int{1, 16} {
		for _, set := range benchSets {
			b.Run(fmt.Sprintf("page=%d/%s", page, set.name), func(b *testing.B) {
				t := newSetTree(b, set, page)
				insertBatches(b, t)
				reportPerToken(b, benchKeyLen)
			})
		}
	}
}

// BenchmarkInsertCached inserts a 4096-token sequence the tree already
// holds: prev=all is a request that matched (and locked) all of it, so
// nothing is freed; prev=0 is one that matched nothing and computed all of
// it again, so insert hands all 4096 incoming slots back as duplicates
// (and, in Mamba trees, reports that a state already covers it). The
// innermost level is the component set.
func BenchmarkInsertCached(b *testing.B) {
	for _, page := range []int{1, 16} {
		for _, prev := range []string{"all", "0"} {
			for _, set := range benchSets {
				b.Run(fmt.Sprintf("page=%d/prev=%s/%s", page, prev, set.name), func(b *testing.B) {
					t := newSetTree(b, set, page)
					key := benchKey(1, benchKeyLen)
					mustInsert(b, t, core.InsertParams{Tokens: key, Slots: benchSlots(0, benchKeyLen)})
					p := core.InsertParams{Tokens: key, Slots: benchSlots(benchKeyLen, benchKeyLen), MambaSlot: 1}
					if prev == "all" {
						p.PrevPrefixLen = benchKeyLen
					}
					b.ReportAllocs()
					for b.Loop() {
						if _, _, err := t.Insert(p); err != nil {
							b.Fatal(err)
						}
					}
					reportPerToken(b, benchKeyLen)
				})
			}
		}
	}
}

// evictTreeTokens is the size of the tree BenchmarkEvict1M empties.
const evictTreeTokens = 1 << 20

// evictLayout lists the sequences of the eviction benchmark's tree:
// 64 shared 1024-token prefixes (two pages of 512 each) under which leaves
// of 512 to 4096 tokens hang, with lengths from a fixed cycle, until the
// tree holds evictTreeTokens tokens.
func evictLayout() (seqs [][]uint32, prevs []int) {
	lengths := []int{512, 2048, 1024, 4096, 1536, 3072, 768, 2560}
	total := 0
	for k := 0; total < evictTreeTokens; k++ {
		prefix := k % 64
		seq := benchKey(uint32(prefix)*1024, 1024)
		prev := 0
		if k >= 64 {
			prev = 1024 // the prefix is already cached
		} else {
			total += 1024
		}
		n := min(lengths[k%len(lengths)], evictTreeTokens-total)
		seq = append(seq, benchKey(1<<24+uint32(k)*4096, n)...)
		total += n
		seqs = append(seqs, seq)
		prevs = append(prevs, prev)
	}
	return seqs, prevs
}

// BenchmarkEvict1M evicts every token of a 1M-token tree (about 500
// leaves of 512 to 4096 tokens under 64 shared prefixes). Building the tree
// is outside the timer, so this benchmark takes much longer than its
// reported time.
func BenchmarkEvict1M(b *testing.B) {
	const page = 16
	t := newBenchTree(b, page)
	seqs, prevs := evictLayout()
	slots := benchSlots(0, 1024+4096)
	build := func() {
		t.Reset()
		for k, s := range seqs {
			mustInsert(b, t, core.InsertParams{Tokens: s, Slots: slots, PrevPrefixLen: prevs[k]})
		}
		if got := t.Evictable(core.Full); got != evictTreeTokens {
			b.Fatalf("tree holds %d tokens, want %d", got, evictTreeTokens)
		}
	}
	acts := make([]core.Action, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		build()
		b.StartTimer()
		var freed int
		var err error
		acts, freed, err = t.Evict(core.Full, evictTreeTokens, acts[:0])
		if err != nil || freed != evictTreeTokens {
			b.Fatalf("evicted %d tokens, %v", freed, err)
		}
	}
	b.ReportMetric(float64(len(acts)), "nodes/op")
	reportPerToken(b, evictTreeTokens)
}

// BenchmarkSetOverhead measures the cost of the auxiliary components as
// ratios to [Full] taken in the same run: every iteration runs a batch of
// the same operation on a tree of each set in turn (starting with a
// different set each time), timing each batch, so that load on a shared
// machine hits every set alike. It reports the ns/op of each set and the
// ratios swa/full and mamba/full (the target: under 1.5).
func BenchmarkSetOverhead(b *testing.B) {
	const batch = 32 // divides insertBatch
	// An opFn runs its k-th operation; k = -1 asks for untimed upkeep.
	type opFn func(k int)
	ops := []struct {
		name string
		prep func(b *testing.B, set benchSet) opFn
	}{}
	for _, page := range []int{1, 16} {
		for _, cached := range []int{100, 50} {
			ops = append(ops, struct {
				name string
				prep func(b *testing.B, set benchSet) opFn
			}{fmt.Sprintf("match/page=%d/cached=%d%%", page, cached), func(b *testing.B, set benchSet) opFn {
				t := newSetTree(b, set, page)
				key := benchKey(1, benchKeyLen)
				mustInsert(b, t, core.InsertParams{Tokens: key, Slots: benchSlots(0, benchKeyLen)})
				q, want := key, benchKeyLen
				if cached == 50 {
					half := benchKeyLen / 2
					other := append(slices.Clone(key[:half]), benchKey(1<<20, half)...)
					mustInsert(b, t, core.InsertParams{Tokens: other, Slots: benchSlots(benchKeyLen, benchKeyLen), MambaSlot: 1})
					mustInsert(b, t, core.InsertParams{Tokens: key[:half], Slots: benchSlots(0, half), PrevPrefixLen: half, MambaSlot: 2})
					q, want = append(slices.Clone(key[:half]), benchKey(1<<21, half)...), half
				}
				dst := make([]int32, 0, benchKeyLen)
				if r, err := t.Match(dst, core.Namespace{}, q); err != nil || r.DeviceLen != want {
					b.Fatalf("warm-up match: %d atoms, %v; want %d", r.DeviceLen, err, want)
				}
				return func(k int) {
					if k < 0 {
						return
					}
					if r, err := t.Match(dst[:0], core.Namespace{}, q); err != nil || r.DeviceLen != want {
						b.Fatalf("match: %d atoms, %v", r.DeviceLen, err)
					}
				}
			}})
		}
	}
	for _, page := range []int{1, 16} {
		ops = append(ops, struct {
			name string
			prep func(b *testing.B, set benchSet) opFn
		}{fmt.Sprintf("insert/page=%d", page), func(b *testing.B, set benchSet) opFn {
			t := newSetTree(b, set, page)
			keys := make([][]uint32, insertBatch)
			for k := range keys {
				keys[k] = benchKey(uint32(k)*benchKeyLen, benchKeyLen)
			}
			slots := benchSlots(0, benchKeyLen)
			return func(k int) {
				k %= insertBatch
				if k < 0 {
					t.Reset() // untimed: the caller passes -1 between batches
					return
				}
				if _, _, err := t.Insert(core.InsertParams{Tokens: keys[k], Slots: slots, MambaSlot: int32(k)}); err != nil {
					b.Fatal(err)
				}
			}
		}})
	}
	for _, op := range ops {
		b.Run(op.name, func(b *testing.B) {
			fns := make([]opFn, len(benchSets))
			for s, set := range benchSets {
				fns[s] = op.prep(b, set)
			}
			elapsed := make([]time.Duration, len(benchSets))
			calls := make([]int, len(benchSets))
			round := 0
			for b.Loop() {
				for j := range benchSets {
					s := (round + j) % len(benchSets)
					if calls[s]%insertBatch == 0 {
						fns[s](-1) // an insert benchmark empties its tree here
					}
					t0 := time.Now()
					for range batch {
						fns[s](calls[s])
						calls[s]++
					}
					elapsed[s] += time.Since(t0)
				}
				round++
			}
			per := func(s int) float64 { return float64(elapsed[s].Nanoseconds()) / float64(calls[s]) }
			for s, set := range benchSets {
				b.ReportMetric(per(s), strings.TrimPrefix(set.name, "set=")+"-ns/op")
			}
			b.ReportMetric(per(1)/per(0), "swa/full")
			b.ReportMetric(per(2)/per(0), "mamba/full")
		})
	}
}

// insertBatches times inserts of insertBatch distinct keys of benchKeyLen
// tokens into t (each with a Mamba state, which trees without Mamba
// ignore), resetting t with the timer stopped whenever the batch is used up.
func insertBatches(b *testing.B, t *core.Tree) {
	keys := make([][]uint32, insertBatch)
	for k := range keys {
		keys[k] = benchKey(uint32(k)*benchKeyLen, benchKeyLen)
	}
	slots := benchSlots(0, benchKeyLen)
	k := 0
	b.ReportAllocs()
	for b.Loop() {
		if k == insertBatch {
			b.StopTimer()
			t.Reset()
			k = 0
			b.StartTimer()
		}
		if _, _, err := t.Insert(core.InsertParams{Tokens: keys[k], Slots: slots, MambaSlot: int32(k)}); err != nil {
			b.Fatal(err)
		}
		k++
	}
}
