package snapshot

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// ref is a deliberately naive index: a slice of entries kept in insertion
// order, every query a linear scan that rehashes each entry's own prefix
// the way the reference module does, the victim found by comparing every
// pair of criteria directly.
type ref struct {
	cfg              Config
	es               []refEntry
	clock, live, sin uint64
	st               Stats
}

type refEntry struct {
	Entry
	toks []uint32
}

func (r *ref) ttl() uint64 {
	if r.cfg.LeaseTTL == 0 {
		return DefaultLeaseTTL
	}
	return uint64(r.cfg.LeaseTTL)
}

func (r *ref) find(key uint64) int {
	for i := range r.es {
		if r.es[i].Key == key {
			return i
		}
	}
	return -1
}

func (r *ref) del(i int) { r.es = slices.Delete(r.es, i, i+1) }

func (r *ref) lookup(toks []uint32, matched int, session, adapter uint64) (Match, error) {
	if matched < 0 || matched > len(toks) {
		return Match{}, ErrInvalidArgument
	}
	if session != 0 {
		r.live, r.sin = session, 0
	}
	r.st.Lookups++
	best := -1
	for i, e := range r.es {
		if e.Tokens > matched || e.Adapter != adapter || Hash(toks[:e.Tokens], adapter) != e.Key {
			continue
		}
		if e.Kind == Tail && (session == 0 || e.Session != session) {
			continue
		}
		if best < 0 || e.Tokens > r.es[best].Tokens {
			best = i
		}
	}
	if best < 0 {
		r.st.RecomputeOnMiss += uint64(matched)
		return Match{Slot: -1}, nil
	}
	e := &r.es[best]
	r.clock++
	e.Stamp = r.clock
	r.st.Hits++
	r.st.AnchorTokens += uint64(e.Tokens)
	r.st.RecomputeOnHit += uint64(matched - e.Tokens)
	if e.Tiered {
		r.st.TierHits++
	}
	return Match{Found: true, Tiered: e.Tiered, Slot: e.Slot, Key: e.Key, Tokens: e.Tokens, Kind: e.Kind}, nil
}

func (r *ref) insert(toks []uint32, adapter uint64, slot int32, session uint64, kind Kind) (Displaced, error) {
	if kind == Tail && session == 0 || len(toks) == 0 || slot < 0 {
		return Displaced{}, ErrInvalidArgument
	}
	key := Hash(toks, adapter)
	swept := func(e refEntry) bool {
		return kind == Tail && e.Session == session && e.Kind != Plain && e.Key != key
	}
	for _, e := range r.es {
		if !e.Tiered && e.Slot == slot && e.Key != key && !swept(e) {
			return Displaced{}, ErrSlotInUse
		}
	}
	var d Displaced
	give := func(e refEntry) {
		if e.Tiered {
			d.Blobs = append(d.Blobs, e.Key)
		} else if e.Slot != slot {
			d.Slots = append(d.Slots, e.Slot)
		}
	}
	for i := 0; i < len(r.es); {
		if swept(r.es[i]) {
			give(r.es[i])
			r.st.Swept++
			r.del(i)
			continue
		}
		i++
	}
	r.clock++
	ne := refEntry{Entry{Key: key, Adapter: adapter, Session: session, Tokens: len(toks), Slot: slot, Stamp: r.clock, Kind: kind}, slices.Clone(toks)}
	if i := r.find(key); i >= 0 {
		give(r.es[i])
		r.es[i] = ne
		r.st.Overwrites++
		return d, nil
	}
	r.es = append(r.es, ne)
	r.st.Saves++
	return d, nil
}

// parent returns the index of the deepest other entry of e's adapter
// whose tokens prefix e's, or -1.
func (r *ref) parent(i int) int {
	best := -1
	for j, c := range r.es {
		if j != i && c.Adapter == r.es[i].Adapter && len(c.toks) < len(r.es[i].toks) && slices.Equal(r.es[i].toks[:len(c.toks)], c.toks) &&
			(best < 0 || len(c.toks) > len(r.es[best].toks)) {
			best = j
		}
	}
	return best
}

func (r *ref) marconiVictim() int {
	m := r.cfg.Marconi
	kids := func(i int) int {
		n := 0
		for j := range r.es {
			if r.parent(j) == i {
				n++
			}
		}
		return n
	}
	var cand []int
	for pass := 0; pass < 2 && len(cand) == 0; pass++ {
		for i, e := range r.es {
			if !e.Tiered && (pass == 1 || kids(i) <= 1) {
				cand = append(cand, i)
			}
		}
	}
	if len(cand) == 0 {
		return -1
	}
	var rec, eff []float64
	for _, i := range cand {
		rec = append(rec, 1/float64(r.clock-r.es[i].Stamp+1))
		par := 0
		if p := r.parent(i); p >= 0 {
			par = r.es[p].Tokens
		}
		eff = append(eff, m.Model.SavedFLOPs(r.es[i].Tokens, par)/m.Model.StateBytes())
	}
	norm := func(v []float64, k int) float64 {
		lo, hi := slices.Min(v), slices.Max(v)
		if lo == hi {
			return 1
		}
		return (v[k] - lo) / (hi - lo)
	}
	best := 0
	score := func(k int) float64 { return norm(rec, k) + float64(m.Alpha*norm(eff, k)) }
	for k := range cand {
		if sk, sb := score(k), score(best); sk < sb || sk == sb && r.es[cand[k]].Stamp < r.es[cand[best]].Stamp {
			best = k
		}
	}
	return cand[best]
}

func (r *ref) victim() int {
	if r.cfg.Marconi != nil {
		return r.marconiVictim()
	}
	var res []int
	for i, e := range r.es {
		if !e.Tiered {
			res = append(res, i)
		}
	}
	if len(res) == 0 {
		return -1
	}
	if r.cfg.GlobalLRU {
		best := res[0]
		for _, i := range res {
			if r.es[i].Stamp < r.es[best].Stamp {
				best = i
			}
		}
		return best
	}
	lease := r.live != 0 && !r.cfg.NoLease && r.sin < r.ttl()
	leased := func(e refEntry) bool { return lease && e.Session == r.live && e.Kind != Plain }
	pool := []int{}
	for _, i := range res {
		if !leased(r.es[i]) {
			pool = append(pool, i)
		}
	}
	if len(pool) == 0 {
		pool = res
	}
	fresh := func(s uint64) uint64 {
		var f uint64
		for _, i := range res {
			if r.es[i].Session == s && r.es[i].Stamp > f {
				f = r.es[i].Stamp
			}
		}
		return f
	}
	var stamps, toks []uint64
	for _, i := range res {
		stamps = append(stamps, r.es[i].Stamp)
		toks = append(toks, uint64(r.es[i].Tokens))
	}
	norm := func(v uint64, all []uint64) float64 {
		lo, hi := slices.Min(all), slices.Max(all)
		if lo == hi {
			return 0
		}
		return float64(v-lo) / float64(hi-lo)
	}
	score := func(e refEntry) float64 {
		return norm(e.Stamp, stamps) + float64(r.cfg.Alpha*norm(uint64(e.Tokens), toks))
	}
	best := pool[0]
	for _, i := range pool[1:] {
		a, b := r.es[i], r.es[best]
		fa, fb := fresh(a.Session), fresh(b.Session)
		sa, sb := score(a), score(b)
		if fa < fb || fa == fb && (sa < sb || sa == sb && a.Stamp < b.Stamp) {
			best = i
		}
	}
	return best
}

func (r *ref) evictLRU() (int32, bool) {
	i := r.victim()
	if i < 0 {
		return -1, false
	}
	s := r.es[i].Slot
	r.del(i)
	r.st.Evictions++
	r.sin++
	return s, true
}

func (r *ref) evictToTier(gate int) (TierEvict, bool, error) {
	if gate < 0 {
		return TierEvict{}, false, ErrInvalidArgument
	}
	i := r.victim()
	if i < 0 {
		return TierEvict{}, false, nil
	}
	e := &r.es[i]
	ev := TierEvict{Outcome: Spill, Slot: e.Slot, Key: e.Key, Adapter: e.Adapter, Tokens: e.Tokens}
	r.st.Evictions++
	r.sin++
	if gate > 0 && e.Tokens < gate {
		ev.Outcome = Drop
		r.st.Drops++
		r.del(i)
		return ev, true, nil
	}
	e.Tiered, e.Slot = true, -1
	r.st.Spills++
	return ev, true, nil
}

func (r *ref) tiered(key, adapter uint64) (int, error) {
	i := r.find(key)
	switch {
	case i < 0:
		return 0, ErrUnknownKey
	case r.es[i].Adapter != adapter:
		return 0, ErrWrongAdapter
	case !r.es[i].Tiered:
		return 0, ErrResident
	}
	return i, nil
}

func (r *ref) promote(key, adapter uint64, slot int32, session uint64) error {
	if slot < 0 {
		return ErrInvalidArgument
	}
	i, err := r.tiered(key, adapter)
	if err != nil {
		return err
	}
	for _, e := range r.es {
		if !e.Tiered && e.Slot == slot {
			return ErrSlotInUse
		}
	}
	e := &r.es[i]
	e.Tiered, e.Slot = false, slot
	if session != 0 && e.Kind == Plain {
		e.Session = session
	}
	r.st.FaultIns++
	return nil
}

func (r *ref) forget(key, adapter uint64) error {
	i, err := r.tiered(key, adapter)
	if err != nil {
		return err
	}
	r.del(i)
	r.st.Reaps++
	return nil
}

func (r *ref) endSession(s uint64) (Displaced, error) {
	if s == 0 {
		return Displaced{}, ErrInvalidArgument
	}
	known := r.live == s
	for _, e := range r.es {
		known = known || e.Session == s
	}
	if !known {
		return Displaced{}, ErrUnknownSession
	}
	var d Displaced
	for i := 0; i < len(r.es); {
		e := &r.es[i]
		if e.Session == s && e.Kind == Sibling {
			e.Kind = Plain
		}
		if e.Session == s && e.Kind == Tail {
			if e.Tiered {
				d.Blobs = append(d.Blobs, e.Key)
			} else {
				d.Slots = append(d.Slots, e.Slot)
			}
			r.st.Swept++
			r.del(i)
			continue
		}
		i++
	}
	if r.live == s {
		r.live, r.sin = 0, 0
	}
	return d, nil
}

func (r *ref) entries() []Entry {
	out := []Entry{}
	for _, e := range r.es {
		out = append(out, e.Entry)
	}
	slices.SortFunc(out, func(a, b Entry) int {
		if a.Key < b.Key {
			return -1
		}
		return 1
	})
	return out
}

func sameErr(t *testing.T, want, got error, step int, op string) {
	t.Helper()
	if want == nil {
		require.NoError(t, got, "step %d %s", step, op)
		return
	}
	require.True(t, errors.Is(got, want), "step %d %s: want %v, got %v", step, op, want, got)
}

// TestIndex_Model drives the index and the naive reference with the same
// random commands, compares every result, the entries and the counters,
// runs Check after every step, and plays the host: every slot it hands the
// index is given back exactly once (by a displacement, an eviction, a
// spill or a drop) and never while an entry still holds it.
func TestIndex_Model(t *testing.T) {
	cfgs := []Config{{}, {Alpha: 1.5}, {LeaseTTL: 3}, {NoLease: true}, {GlobalLRU: true}, {Alpha: 8, LeaseTTL: 1},
		{Marconi: &MarconiConfig{Model: Model7BHybrid}}, {Marconi: &MarconiConfig{Model: Model7BHybrid, Alpha: 1}},
		{Marconi: &MarconiConfig{Model: Model{SSMLayers: 2, AttnLayers: 1, MLPLayers: 1, D: 8, N: 4}, Alpha: 4}}}
	for ci, cfg := range cfgs {
		for seed := range uint64(12) {
			runModel(t, cfg, seed+uint64(ci)*1000, 600)
		}
	}
}

func runModel(t *testing.T, cfg Config, seed uint64, steps int) {
	rng := rand.New(rand.NewPCG(seed, 77))
	x, err := New(cfg)
	require.NoError(t, err)
	r := &ref{cfg: cfg}
	// A few conversations sharing prefixes; two adapters.
	bases := make([][]uint32, 4)
	for i := range bases {
		bases[i] = make([]uint32, 40)
		for j := range bases[i] {
			bases[i][j] = uint32(rng.IntN(3))
			if j < 8 {
				bases[i][j] = uint32(j) // a shared system prompt
			}
		}
	}
	held := map[int32]bool{}
	var blobs []uint64 // keys ever spilled
	slot := func() int32 {
		if rng.IntN(10) == 0 {
			return int32(rng.IntN(24)) - 1 // maybe held, maybe negative
		}
		for {
			s := int32(rng.IntN(64))
			if !held[s] {
				return s
			}
		}
	}
	pick := func() ([]uint32, uint64) {
		b := bases[rng.IntN(len(bases))]
		n := rng.IntN(len(b) + 1)
		if rng.IntN(6) == 0 {
			n = 0
		}
		return b[:n], uint64(rng.IntN(2))
	}
	giveBack := func(step int, slots ...int32) {
		for _, s := range slots {
			require.True(t, held[s], "step %d: slot %d handed back but not held", step, s)
			delete(held, s)
		}
	}
	for step := range steps {
		var op string
		switch k := rng.IntN(100); {
		case k < 30:
			op = "lookup"
			toks, ad := pick()
			m := rng.IntN(len(toks) + 2)
			sess := uint64(rng.IntN(4))
			want, werr := r.lookup(toks, m, sess, ad)
			got, gerr := x.Lookup(toks, m, sess, ad)
			sameErr(t, werr, gerr, step, op)
			require.Equal(t, want, got, "step %d lookup", step)
		case k < 60:
			kind := Kind(rng.IntN(3))
			op = "insert " + kind.String()
			toks, ad := pick()
			s := slot()
			sess := uint64(rng.IntN(4))
			want, werr := r.insert(toks, ad, s, sess, kind)
			var got Displaced
			var gerr error
			switch kind {
			case Plain:
				got, gerr = x.Insert(toks, ad, s, sess)
			case Tail:
				got, gerr = x.InsertTail(toks, ad, s, sess)
			case Sibling:
				got, gerr = x.InsertSibling(toks, ad, s, sess)
			}
			sameErr(t, werr, gerr, step, op)
			require.ElementsMatch(t, want.Slots, got.Slots, "step %d %s", step, op)
			require.ElementsMatch(t, want.Blobs, got.Blobs, "step %d %s", step, op)
			if gerr == nil {
				giveBack(step, got.Slots...)
				held[s] = true
			}
		case k < 72:
			op = "evict"
			ws, wok := r.evictLRU()
			gs, gok := x.EvictLRU()
			require.Equal(t, []any{ws, wok}, []any{gs, gok}, "step %d evict", step)
			if gok {
				giveBack(step, gs)
			}
		case k < 84:
			op = "tier"
			gate := rng.IntN(30) - 1
			want, wok, werr := r.evictToTier(gate)
			got, gok, gerr := x.EvictToTier(gate)
			sameErr(t, werr, gerr, step, op)
			require.Equal(t, []any{want, wok}, []any{got, gok}, "step %d tier", step)
			if gok {
				giveBack(step, got.Slot)
				if got.Outcome == Spill {
					blobs = append(blobs, got.Key)
				}
			}
		case k < 92:
			op = "promote"
			key := uint64(rng.Uint64())
			if len(blobs) > 0 && rng.IntN(5) > 0 {
				key = blobs[rng.IntN(len(blobs))]
			}
			ad := uint64(rng.IntN(2))
			s := slot()
			sess := uint64(rng.IntN(4))
			werr := r.promote(key, ad, s, sess)
			gerr := x.Promote(key, ad, s, sess)
			sameErr(t, werr, gerr, step, op)
			if gerr == nil {
				held[s] = true
			}
		case k < 97:
			op = "forget"
			key := uint64(rng.Uint64())
			if len(blobs) > 0 && rng.IntN(5) > 0 {
				key = blobs[rng.IntN(len(blobs))]
			}
			ad := uint64(rng.IntN(2))
			sameErr(t, r.forget(key, ad), x.Forget(key, ad), step, op)
		default:
			op = "end session"
			sess := uint64(rng.IntN(5))
			want, werr := r.endSession(sess)
			got, gerr := x.EndSession(sess)
			sameErr(t, werr, gerr, step, op)
			require.ElementsMatch(t, want.Slots, got.Slots, "step %d %s", step, op)
			require.ElementsMatch(t, want.Blobs, got.Blobs, "step %d %s", step, op)
			if gerr == nil {
				giveBack(step, got.Slots...)
			}
		}
		require.NoError(t, x.Check(), "step %d after %s", step, op)
		require.Equal(t, r.entries(), x.Entries(), "step %d after %s", step, op)
		st := x.Stats()
		st.Entries, st.ResidentEntries, st.TieredEntries, st.LeasedEntries = 0, 0, 0, 0
		require.Equal(t, r.st, st, "step %d after %s", step, op)
		require.Equal(t, r.live, x.LiveSession())
		res := map[int32]bool{}
		for _, e := range x.Entries() {
			if !e.Tiered {
				res[e.Slot] = true
			}
		}
		require.Equal(t, held, res, "step %d: host-held slots differ from resident slots", step)
	}
}

// FuzzIndexModel runs the model test from fuzzed seeds and lengths, in
// every configuration the model test uses.
func FuzzIndexModel(f *testing.F) {
	f.Add(uint64(1), uint16(200), uint8(0))
	f.Add(uint64(99), uint16(400), uint8(6))
	f.Fuzz(func(t *testing.T, seed uint64, steps uint16, cfg uint8) {
		cfgs := []Config{{}, {Alpha: 1.5}, {LeaseTTL: 3}, {NoLease: true}, {GlobalLRU: true}, {Alpha: 8, LeaseTTL: 1},
			{Marconi: &MarconiConfig{Model: Model7BHybrid}}, {Marconi: &MarconiConfig{Model: Model7BHybrid, Alpha: 1}}}
		runModel(t, cfgs[int(cfg)%len(cfgs)], seed, int(steps%500))
	})
}
