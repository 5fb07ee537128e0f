package core

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/radixkv/radixkv/core/flops"
)

// Marconi (Pan et al., MLSys 2025; ../shared/SNAPSHOTS.md §10) evicts the
// recurrent state whose utility
//
//	S = norm(recency) + alpha · norm(FLOPs saved per byte)
//
// is lowest. recency is 1/(now - stamp + 1), the stamp being the tick of
// the state's own last use (a match refreshes only the state it ends on,
// not its ancestors'). FLOPs saved are what the state saves over resuming
// from its nearest state-bearing ancestor (flops.Model.SavedFLOPs from the
// ancestor's depth to the node's); bytes are the state's, plus the edge's
// attention KV when the state sits on an evictable leaf, which goes whole.
// Both terms are min-max normalised over the candidates (a flat range is
// 1). Candidates are the unlocked, unpinned device states; branch points
// (two or more children) are kept while any other candidate exists.
// Ties go to the less recent member of the recency list.
//
// Admission (checkpointing only at branch points and after the last
// decoded token) is the host's side: it decides which prefixes it inserts
// with a state; MatchResult.MambaBranchingSeqlen names the branch point.

// MambaPolicyNames lists the Mamba eviction policies.
func MambaPolicyNames() []string { return []string{"lru", "marconi"} }

// MaxMambaAlpha bounds Config.MambaAlpha.
const MaxMambaAlpha = 8

// marconiConfig is the validated marconi part of a Config.
type marconiConfig struct {
	on    bool
	model flops.Model
	alpha float64
	bytes float64 // model.StateBytes()
}

// marconiScratch holds the victim scan's buffers, reused across steps.
type marconiScratch struct {
	idx      []int32
	rec, eff []float64
}

// validateMamba checks the Mamba policy fields of c for component set set.
func (c Config) validateMamba(set ComponentSet) (marconiConfig, error) {
	var m marconiConfig
	name := strings.ToLower(strings.TrimSpace(c.MambaPolicy))
	if name != "" && !set.Has(Mamba) {
		return m, fmt.Errorf("%w: Mamba policy %q set without the mamba component", ErrInvalidConfig, c.MambaPolicy)
	}
	switch name {
	case "", "lru":
	case "marconi":
		m.on = true
	default:
		return m, fmt.Errorf("%w: Mamba policy %q (known: %s)", ErrUnknownPolicy, c.MambaPolicy, strings.Join(MambaPolicyNames(), ", "))
	}
	if !m.on && (c.MambaModel != (flops.Model{}) || c.MambaAlpha != 0) {
		return m, fmt.Errorf("%w: Mamba model %+v / alpha %v set without the marconi Mamba policy", ErrInvalidConfig, c.MambaModel, c.MambaAlpha)
	}
	if !m.on {
		return m, nil
	}
	m.model = c.MambaModel
	if m.model == (flops.Model{}) {
		m.model = flops.Model7BHybrid
	}
	if !m.model.Valid() {
		return m, fmt.Errorf("%w: Mamba model %+v needs at least one SSM layer, d and n of at least 1, and every count at most %d", ErrInvalidConfig, m.model, flops.MaxDim)
	}
	if err := checkAlpha(c.MambaAlpha); err != nil {
		return m, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	m.alpha = c.MambaAlpha
	m.bytes = m.model.StateBytes()
	return m, nil
}

func checkAlpha(a float64) error {
	if math.IsNaN(a) || a < 0 || a > MaxMambaAlpha {
		return fmt.Errorf("Mamba alpha %v outside [0, %d]", a, MaxMambaAlpha)
	}
	return nil
}

// MambaPolicy returns the tree's Mamba eviction policy: "lru" or
// "marconi" ("" without the Mamba component).
func (t *Tree) MambaPolicy() string {
	switch {
	case !t.cfg.set.Has(Mamba):
		return ""
	case t.cfg.mar.on:
		return "marconi"
	}
	return "lru"
}

// MambaAlpha returns marconi's weight (0 under lru).
func (t *Tree) MambaAlpha() float64 { return t.cfg.mar.alpha }

// SetMambaAlpha changes marconi's weight, as a host's online tuning does.
// Errors: ErrBroken, ErrInvalidArgument (not marconi, or alpha outside
// [0, MaxMambaAlpha]); nothing changes on error.
func (t *Tree) SetMambaAlpha(alpha float64) error {
	if err := t.checkUsable(); err != nil {
		return err
	}
	if !t.cfg.mar.on {
		return fmt.Errorf("%w: SetMambaAlpha needs the marconi Mamba policy (the tree's is %q)", ErrInvalidArgument, t.MambaPolicy())
	}
	if err := checkAlpha(alpha); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	t.cfg.mar.alpha = alpha
	return nil
}

// marconiVictim returns the candidate state of lowest utility for the
// open Mamba walk, or nilIdx when none is left. It scans the device
// recency list from the least recent member; the buffers are the tree's,
// so a step allocates nothing once they have grown.
func (t *Tree) marconiVictim() int32 {
	s := &t.mar
	for pass := 0; pass < 2; pass++ {
		s.idx = s.idx[:0]
		for i := t.list(tierDevice, Mamba).tail; i != nilIdx; i = t.lruLk(i, tierDevice, Mamba).prev {
			n := &t.nodes[i]
			if n.lock[Mamba] != 0 || n.pin != nilIdx || t.walk.handed[i] == n.gen {
				continue
			}
			if pass == 0 && len(n.children) > 1 {
				continue
			}
			s.idx = append(s.idx, i)
		}
		if len(s.idx) > 0 {
			break
		}
	}
	if len(s.idx) == 0 {
		return nilIdx
	}
	s.rec, s.eff = s.rec[:0], s.eff[:0]
	for _, i := range s.idx {
		rec, eff := t.marconiTerms(i)
		s.rec = append(s.rec, rec)
		s.eff = append(s.eff, eff)
	}
	normalise(s.rec)
	normalise(s.eff)
	best, bestS := 0, math.Inf(1)
	for k := range s.idx {
		if u := s.rec[k] + float64(t.cfg.mar.alpha*s.eff[k]); u < bestS {
			best, bestS = k, u
		}
	}
	return s.idx[best]
}

// marconiTerms returns node i's raw recency and FLOPs saved per byte.
func (t *Tree) marconiTerms(i int32) (rec, eff float64) {
	m := &t.cfg.mar
	n := &t.nodes[i]
	rec = 1 / float64(t.tick-n.mstamp+1)
	// One walk to the root: the node's depth, and how far above it the
	// nearest state-bearing ancestor ends.
	depth, gap := len(n.key), -1
	for j := n.parent; j != rootIdx; j = t.nodes[j].parent {
		if gap < 0 && t.nodes[j].dev[Mamba] != nil {
			gap = depth
		}
		depth += len(t.nodes[j].key)
	}
	above := 0
	if gap >= 0 {
		above = (depth - gap) / t.cfg.width
	}
	depth /= t.cfg.width
	bytes := m.bytes
	if n.dpos >= 0 {
		bytes += m.model.KVBytes(len(n.key) / t.cfg.width)
	}
	return rec, m.model.SavedFLOPs(depth, above) / bytes
}

// normalise maps v onto [0, 1] by min-max; a flat range gives 1.
func normalise(v []float64) {
	lo, hi := slices.Min(v), slices.Max(v)
	for k, x := range v {
		if hi == lo {
			v[k] = 1
		} else {
			v[k] = (x - lo) / (hi - lo)
		}
	}
}
