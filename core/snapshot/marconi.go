package snapshot

import (
	"fmt"
	"math"
	"slices"

	"github.com/radixkv/radixkv/core/flops"
)

// Model is the layer geometry of a hybrid model (see package flops, which
// holds the FLOP and byte counts the Marconi order uses).
type Model = flops.Model

// Model7BHybrid is the 7B Attention-Mamba2 hybrid of the Marconi paper.
var Model7BHybrid = flops.Model7BHybrid

// MarconiConfig selects the Marconi victim order.
type MarconiConfig struct {
	// Model gives the FLOP and byte counts.
	Model Model
	// Alpha weighs FLOP efficiency against recency; 0 is recency only. It
	// can be tuned later with Index.SetAlpha. In [0, MaxAlpha].
	Alpha float64
}

// forest keeps, for the Marconi order, each entry's tokens and its parent:
// the deepest other entry (resident or tiered) whose prefix it extends.
type forest struct {
	cfg      MarconiConfig
	toks     map[uint64][]uint32
	parent   map[uint64]uint64   // absent: a top-level entry
	children map[uint64][]uint64 // by parent key
	top      []uint64            // top-level entries
}

func newForest(cfg MarconiConfig) *forest {
	return &forest{cfg: cfg, toks: map[uint64][]uint32{}, parent: map[uint64]uint64{}, children: map[uint64][]uint64{}}
}

func (f *forest) clone() *forest {
	g := &forest{cfg: f.cfg, toks: make(map[uint64][]uint32, len(f.toks)), parent: make(map[uint64]uint64, len(f.parent)),
		children: make(map[uint64][]uint64, len(f.children)), top: slices.Clone(f.top)}
	for k, v := range f.toks {
		g.toks[k] = v // never mutated after insert
	}
	for k, v := range f.parent {
		g.parent[k] = v
	}
	for k, v := range f.children {
		g.children[k] = slices.Clone(v)
	}
	return g
}

func (f *forest) getList(parent uint64, has bool) []uint64 {
	if !has {
		return f.top
	}
	return f.children[parent]
}

func (f *forest) setList(parent uint64, has bool, l []uint64) {
	switch {
	case !has:
		f.top = l
	case len(l) == 0:
		delete(f.children, parent)
	default:
		f.children[parent] = l
	}
}

// extends reports whether entry c's tokens start with x's and are longer.
func (f *forest) extends(c, x uint64, xAdapter, cAdapter uint64) bool {
	ct, xt := f.toks[c], f.toks[x]
	return cAdapter == xAdapter && len(ct) > len(xt) && slices.Equal(ct[:len(xt)], xt)
}

// add links the new entry e (already in the index, tokens toks).
func (x *Index) forestAdd(e *entry, toks []uint32) {
	f := x.mar
	f.toks[e.key] = slices.Clone(toks)
	// The parent: the deepest other entry of this adapter that prefixes it.
	x.hashes = appendPrefixHashes(x.hashes[:0], toks, len(toks), e.adapter)
	par, has := uint64(0), false
	top, _ := slices.BinarySearch(x.lens, len(toks))
	for j := top - 1; j >= 0; j-- {
		c := x.lens[j]
		if p, ok := x.byKey[x.hashes[c]]; ok && x.entries[p].tokens == c && x.entries[p].adapter == e.adapter && x.entries[p].key != e.key {
			par, has = x.entries[p].key, true
			break
		}
	}
	if has {
		f.parent[e.key] = par
	}
	// Siblings that extend the new entry become its children.
	sib := f.getList(par, has)
	var keep, mine []uint64
	for _, c := range sib {
		cp := x.byKey[c]
		if f.extends(c, e.key, e.adapter, x.entries[cp].adapter) {
			mine = append(mine, c)
			f.parent[c] = e.key
		} else {
			keep = append(keep, c)
		}
	}
	f.setList(par, has, append(keep, e.key))
	if len(mine) > 0 {
		f.children[e.key] = mine
	}
}

// forestRemove unlinks key: its children move to its parent.
func (x *Index) forestRemove(key uint64) {
	f := x.mar
	par, has := f.parent[key]
	sib := f.getList(par, has)
	sib = slices.DeleteFunc(slices.Clone(sib), func(k uint64) bool { return k == key })
	for _, c := range f.children[key] {
		if has {
			f.parent[c] = par
		} else {
			delete(f.parent, c)
		}
		sib = append(sib, c)
	}
	f.setList(par, has, sib)
	delete(f.children, key)
	delete(f.parent, key)
	delete(f.toks, key)
}

func (x *Index) kids(key uint64) int { return len(x.mar.children[key]) }

// marconiVictim picks the resident entry of lowest utility
// S = norm(recency) + Alpha*norm(FLOPs saved per byte), among entries with
// at most one child (a branch point is kept while any other entry is
// resident); recency is 1/(clock - stamp + 1), min-max normalisation over
// the candidates (a flat range is 1); ties go to the older stamp.
func (x *Index) marconiVictim() int {
	f := x.mar
	var cand []int
	for pass := 0; pass < 2 && len(cand) == 0; pass++ {
		for p := range x.entries {
			e := &x.entries[p]
			if !e.tiered && (pass == 1 || x.kids(e.key) <= 1) {
				cand = append(cand, p)
			}
		}
	}
	if len(cand) == 0 {
		return -1
	}
	rec := make([]float64, len(cand))
	eff := make([]float64, len(cand))
	bytes := f.cfg.Model.StateBytes()
	for i, p := range cand {
		e := &x.entries[p]
		rec[i] = 1 / float64(x.clock-e.stamp+1)
		par := 0
		if pk, ok := f.parent[e.key]; ok {
			par = x.entries[x.byKey[pk]].tokens
		}
		eff[i] = f.cfg.Model.SavedFLOPs(e.tokens, par) / bytes
	}
	normalise(rec)
	normalise(eff)
	best := -1
	var bestS float64
	for i, p := range cand {
		s := rec[i] + float64(f.cfg.Alpha*eff[i])
		if best < 0 || s < bestS || (s == bestS && x.entries[p].stamp < x.entries[best].stamp) {
			best, bestS = p, s
		}
	}
	return best
}

// normalise maps v onto [0, 1] by min-max; all equal gives 1.
func normalise(v []float64) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range v {
		lo, hi = min(lo, x), max(hi, x)
	}
	for i, x := range v {
		if hi == lo {
			v[i] = 1
		} else {
			v[i] = (x - lo) / (hi - lo)
		}
	}
}

// SetAlpha changes the Marconi weight (online tuning). ErrInvalidArgument
// outside [0, MaxAlpha] or without the Marconi order.
func (x *Index) SetAlpha(alpha float64) error {
	if x.mar == nil {
		return fmt.Errorf("%w: SetAlpha needs Config.Marconi", ErrInvalidArgument)
	}
	if math.IsNaN(alpha) || alpha < 0 || alpha > MaxAlpha {
		return fmt.Errorf("%w: alpha %v outside [0, %d]", ErrInvalidArgument, alpha, MaxAlpha)
	}
	x.mar.cfg.Alpha = alpha
	return nil
}

// Alpha returns the Marconi weight (0 without the Marconi order).
func (x *Index) Alpha() float64 {
	if x.mar == nil {
		return 0
	}
	return x.mar.cfg.Alpha
}

// Clone returns an independent copy of the index (for replaying a window
// with other settings, as Marconi's alpha tuning does).
func (x *Index) Clone() *Index {
	y := *x
	y.entries = slices.Clone(x.entries)
	y.byKey = make(map[uint64]int32, len(x.byKey))
	for k, v := range x.byKey {
		y.byKey[k] = v
	}
	y.bySlot = make(map[int32]uint64, len(x.bySlot))
	for k, v := range x.bySlot {
		y.bySlot[k] = v
	}
	y.lens = slices.Clone(x.lens)
	y.lenN = make(map[int]int, len(x.lenN))
	for k, v := range x.lenN {
		y.lenN[k] = v
	}
	y.hashes = nil
	if x.mar != nil {
		y.mar = x.mar.clone()
	}
	return &y
}
