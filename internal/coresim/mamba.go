package coresim

import (
	"fmt"

	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/core/flops"
	"github.com/radixkv/radixkv/workload"
)

// MambaConfig configures a hybrid replay through the unified tree with
// the {full, mamba} components: a Full KV pool, a small pool of recurrent
// states, and a Mamba policy deciding which states are admitted and which
// are evicted.
type MambaConfig struct {
	// Capacity is the device KV pool in tokens; PageSize the tree's page.
	Capacity, PageSize int
	// States is the Mamba state pool (≥ 3: a request holds its matched
	// state and the one it is saving while it asks for another).
	States int
	// Policy is the Mamba policy: "lru" (or empty) or "marconi" (the
	// tree's utility eviction, see core.Config.MambaPolicy).
	Policy string
	// Admission picks where a request checkpoints its state: "chunk"
	// (every Chunk tokens and at the end, vLLM+-style), "branch" (the
	// branch point its speculative match found, MambaBranchingSeqlen, and
	// the end: Marconi's admission), or "leaf" (the end only). Empty
	// means chunk under lru, branch under marconi.
	Admission string
	// Chunk is the chunk admission's interval in tokens (a multiple of
	// PageSize; default 512, rounded up to pages).
	Chunk int
	// Model is the hybrid geometry for FLOP accounting and marconi
	// (default flops.Model7BHybrid).
	Model flops.Model
	// Alpha, when not negative, fixes marconi's weight. Negative tunes it
	// online: 0 until TuneWindow requests after the first state eviction,
	// then the best of MambaAlphaGrid by FLOPs saved on a replay of the
	// last TuneWindow requests through fresh shadow trees (each warmed up
	// with the TuneWindow requests before them), and again every
	// RetuneEvery requests when that is positive.
	Alpha       float64
	TuneWindow  int // default 500
	RetuneEvery int
	// SanityEvery runs the tree's sanity check every SanityEvery requests
	// and at the end; 0 never.
	SanityEvery int
}

// MambaAlphaGrid is the alphas online tuning tries: 0, 0.25, ..., 2.
var MambaAlphaGrid = []float64{0, 0.25, 0.5, 0.75, 1, 1.25, 1.5, 1.75, 2}

// MambaStats summarises a hybrid replay.
type MambaStats struct {
	Requests    int
	InputTokens int64
	// Hits counts requests that resumed from a cached state; HitTokens
	// sums the prefixes they resumed from (the match of a Mamba tree ends
	// on a state); HitRate is HitTokens / InputTokens.
	Hits      int
	HitTokens int64
	HitRate   float64
	// FLOPsSaved is the prefill FLOPs the hits saved (the whole model over
	// each hit); FLOPsTotal what prefilling every input from scratch costs.
	FLOPsSaved, FLOPsTotal float64
	// Admitted counts states the tree adopted; Branches those at branch
	// points; StateEvictions states freed by evictions (Mamba walks, and
	// leaves a Full eviction removed).
	Admitted, Branches, StateEvictions int64
	// FullEvictedTokens counts KV slots freed by evictions.
	FullEvictedTokens int64
	// Alpha is marconi's weight at the end; Tunes how many times it was
	// tuned, TunedAt the request after which it last was (-1: never).
	Alpha   float64
	Tunes   int
	TunedAt int
}

// mambaSim is a hybrid replay's state.
type mambaSim struct {
	cfg        MambaConfig
	admission  string
	tree       *core.Tree
	free       []int32 // Full slots
	states     []int32 // free state slots
	matched    []int32
	slots      []int32
	acts       []core.Action
	points     []int
	st         MambaStats
	sawEvicted bool
}

// RunMamba replays reqs through a fresh {full, mamba} tree and returns
// the statistics. Errors: an invalid cfg, ErrCapacity, ErrAccounting and
// any error the tree returns.
func RunMamba(cfg MambaConfig, reqs []workload.Request) (MambaStats, error) {
	s, err := newMambaSim(cfg)
	if err != nil {
		return MambaStats{}, err
	}
	tune := s.cfg.Policy == "marconi" && cfg.Alpha < 0
	t0, next := -1, -1
	for k := range reqs {
		if err := s.request(k, &reqs[k]); err != nil {
			return s.finish(), err
		}
		if s.cfg.SanityEvery > 0 && (k+1)%s.cfg.SanityEvery == 0 {
			if err := s.tree.SanityCheck(); err != nil {
				return s.finish(), fmt.Errorf("coresim: after request %d: %w", k, err)
			}
		}
		if tune && t0 < 0 && s.sawEvicted {
			t0, next = k, k+s.cfg.TuneWindow
		}
		if tune && k == next {
			w := s.cfg.TuneWindow
			alpha, err := TuneMambaAlpha(s.cfg, reqs[max(0, k+1-2*w):k+1-w], reqs[k+1-w:k+1])
			if err != nil {
				return s.finish(), err
			}
			if err := s.tree.SetMambaAlpha(alpha); err != nil {
				return s.finish(), err
			}
			s.st.Tunes++
			s.st.TunedAt = k
			next = -1
			if s.cfg.RetuneEvery > 0 {
				next = k + s.cfg.RetuneEvery
			}
		}
	}
	st := s.finish()
	if s.cfg.SanityEvery > 0 {
		if err := s.tree.SanityCheck(); err != nil {
			return st, fmt.Errorf("coresim: at the end: %w", err)
		}
	}
	if held := s.tree.Evictable(core.Full) + s.tree.Protected(core.Full); len(s.free)+held != s.cfg.Capacity {
		return st, fmt.Errorf("%w: %d free + %d held KV slots != capacity %d", ErrAccounting, len(s.free), held, s.cfg.Capacity)
	}
	if held := s.tree.Evictable(core.Mamba) + s.tree.Protected(core.Mamba); len(s.states)+held != s.cfg.States {
		return st, fmt.Errorf("%w: %d free + %d held states != %d", ErrAccounting, len(s.states), held, s.cfg.States)
	}
	return st, nil
}

func newMambaSim(cfg MambaConfig) (*mambaSim, error) {
	if cfg.Capacity < 0 || int64(cfg.Capacity) > 1<<31 {
		return nil, fmt.Errorf("coresim: capacity %d out of range [0, 2^31]", cfg.Capacity)
	}
	if cfg.States < 3 || cfg.States > 1<<24 {
		return nil, fmt.Errorf("coresim: state pool %d out of range [3, 2^24]", cfg.States)
	}
	if cfg.SanityEvery < 0 || cfg.TuneWindow < 0 || cfg.RetuneEvery < 0 || cfg.Chunk < 0 {
		return nil, fmt.Errorf("coresim: SanityEvery %d, TuneWindow %d, RetuneEvery %d and Chunk %d must not be negative",
			cfg.SanityEvery, cfg.TuneWindow, cfg.RetuneEvery, cfg.Chunk)
	}
	if cfg.Policy == "" {
		cfg.Policy = "lru"
	}
	if cfg.Model == (flops.Model{}) {
		cfg.Model = flops.Model7BHybrid
	}
	if cfg.TuneWindow == 0 {
		cfg.TuneWindow = 500
	}
	adm := cfg.Admission
	if adm == "" {
		adm = "chunk"
		if cfg.Policy == "marconi" {
			adm = "branch"
		}
	}
	if adm != "chunk" && adm != "branch" && adm != "leaf" {
		return nil, fmt.Errorf("coresim: unknown admission %q (chunk, branch or leaf)", cfg.Admission)
	}
	tc := core.Config{PageSize: cfg.PageSize, Components: []core.Component{core.Full, core.Mamba}, MambaPolicy: cfg.Policy}
	if cfg.Policy == "marconi" {
		tc.MambaModel, tc.MambaAlpha = cfg.Model, max(cfg.Alpha, 0)
	} else if !cfg.Model.Valid() {
		return nil, fmt.Errorf("coresim: model %+v is not a valid hybrid geometry", cfg.Model)
	}
	tree, err := core.New(tc)
	if err != nil {
		return nil, fmt.Errorf("coresim: %w", err)
	}
	if cfg.Chunk == 0 {
		cfg.Chunk = 512
	}
	cfg.Chunk = (cfg.Chunk + cfg.PageSize - 1) / cfg.PageSize * cfg.PageSize
	s := &mambaSim{cfg: cfg, admission: adm, tree: tree, free: identity(cfg.Capacity), states: identity(cfg.States)}
	s.st.TunedAt = -1
	return s, nil
}

func (s *mambaSim) finish() MambaStats {
	st := s.st
	if st.InputTokens > 0 {
		st.HitRate = float64(st.HitTokens) / float64(st.InputTokens)
	}
	st.Alpha = s.tree.MambaAlpha()
	return st
}

// TuneMambaAlpha replays warm and then window through a fresh shadow tree
// per alpha of MambaAlphaGrid (cfg's pools, page, admission and model, the
// marconi policy) and returns the one that saved the most FLOPs over
// window (ties: the smaller alpha). The warm-up stands in for the live
// tree's contents (a tree has no snapshot to replay from). A host tuning
// its own tree online calls it on its recent requests and applies the
// result with core.Tree.SetMambaAlpha (or the ABI's mamba_set_alpha).
// Errors: as RunMamba's.
func TuneMambaAlpha(cfg MambaConfig, warm, window []workload.Request) (float64, error) {
	cfg.Policy = "marconi"
	best, bestSaved := 0.0, -1.0
	for _, alpha := range MambaAlphaGrid {
		c := cfg
		c.Alpha, c.SanityEvery, c.RetuneEvery = alpha, 0, 0
		s, err := newMambaSim(c)
		if err != nil {
			return 0, err
		}
		var before float64
		for k := range len(warm) + len(window) {
			if k == len(warm) {
				before = s.st.FLOPsSaved
			}
			r := &warm[min(k, len(warm)-1)]
			if k >= len(warm) {
				r = &window[k-len(warm)]
			}
			if err := s.request(k, r); err != nil {
				return 0, fmt.Errorf("coresim: tuning alpha %g: %w", alpha, err)
			}
		}
		if saved := s.st.FLOPsSaved - before; saved > bestSaved {
			best, bestSaved = alpha, saved
		}
	}
	return best, nil
}

// request runs one request: a speculative match (whose end is the state it
// resumes from and whose branching length is Marconi's branch point), a
// lock, the KV slots it needs, then one insert per admitted checkpoint,
// each holding a lock on what it cached so far.
func (s *mambaSim) request(k int, req *workload.Request) error {
	t := s.tree
	ns := namespaceOf(req)
	toks := req.Tokens
	page := t.PageSize()
	aligned := len(toks) / page * page
	res, err := t.Match(s.matched[:0], ns, toks)
	if err != nil {
		return fmt.Errorf("coresim: request %d: match: %w", k, err)
	}
	s.matched = res.Indices
	m := res.DeviceLen
	s.st.Requests++
	s.st.InputTokens += int64(len(toks))
	s.st.FLOPsTotal += s.cfg.Model.PrefillFLOPs(len(toks))
	if m > 0 {
		s.st.Hits++
		s.st.HitTokens += int64(m)
		s.st.FLOPsSaved += s.cfg.Model.PrefillFLOPs(m)
	}
	last := res.LastDevice
	rcpt, err := t.Lock(last, 0)
	if err != nil {
		return fmt.Errorf("coresim: request %d: lock: %w", k, err)
	}
	if need := aligned - m; need > len(s.free) {
		if err := s.evict(k, core.Full, need-len(s.free)); err != nil {
			return err
		}
		if need > len(s.free) {
			_ = t.Unlock(last, rcpt, false)
			return fmt.Errorf("%w: request %d needs %d fresh slots, %d free after eviction", ErrCapacity, k, need, len(s.free))
		}
	}
	slots := append(s.slots[:0], s.matched[:m]...)
	top := len(s.free) - (aligned - m)
	slots = append(slots, s.free[top:]...)
	s.free = s.free[:top]
	s.slots = slots

	pts := s.points[:0]
	switch s.admission {
	case "chunk":
		for p := (m/s.cfg.Chunk + 1) * s.cfg.Chunk; p < aligned; p += s.cfg.Chunk {
			pts = append(pts, p)
		}
	case "branch":
		if b := res.MambaBranchingSeqlen; b > m && b < aligned {
			pts = append(pts, b)
		}
	}
	if aligned > m {
		pts = append(pts, aligned)
	}
	s.points = pts
	prev := m
	for _, p := range pts {
		st, err := s.allocState(k)
		if err != nil {
			_ = t.Unlock(last, rcpt, false)
			return err
		}
		r, acts, err := t.Insert(core.InsertParams{Namespace: ns, Tokens: toks[:p], Slots: slots[:p], PrevPrefixLen: prev, MambaSlot: st})
		if err != nil {
			return fmt.Errorf("coresim: request %d: insert %d: %w", k, p, err)
		}
		if err := s.execFrees(k, acts, false); err != nil {
			return err
		}
		if r.MambaExist {
			s.states = append(s.states, st)
		} else {
			s.st.Admitted++
			if p != aligned && s.admission == "branch" {
				s.st.Branches++
			}
		}
		nr, err := t.Lock(r.LastDevice, 0)
		if err != nil {
			return fmt.Errorf("coresim: request %d: lock %d: %w", k, p, err)
		}
		if err := t.Unlock(last, rcpt, false); err != nil {
			return fmt.Errorf("coresim: request %d: unlock: %w", k, err)
		}
		last, rcpt, prev = r.LastDevice, nr, p
	}
	if err := t.Unlock(last, rcpt, false); err != nil {
		return fmt.Errorf("coresim: request %d: unlock: %w", k, err)
	}
	return nil
}

// allocState takes a state slot, evicting one cached state when the pool
// is empty.
func (s *mambaSim) allocState(k int) (int32, error) {
	if len(s.states) == 0 {
		if err := s.evict(k, core.Mamba, 1); err != nil {
			return -1, err
		}
		if len(s.states) == 0 {
			return -1, fmt.Errorf("%w: request %d: no state slot free and none evictable (pool %d)", ErrCapacity, k, s.cfg.States)
		}
	}
	st := s.states[len(s.states)-1]
	s.states = s.states[:len(s.states)-1]
	return st, nil
}

// evict asks the tree to free want of component c and takes back what it
// frees.
func (s *mambaSim) evict(k int, c core.Component, want int) error {
	acts, _, err := s.tree.Evict(c, want, s.acts[:0])
	s.acts = acts[:0]
	if err != nil {
		return fmt.Errorf("coresim: request %d: evict %s: %w", k, c, err)
	}
	s.sawEvicted = s.sawEvicted || c == core.Mamba
	err = s.execFrees(k, acts, true)
	clear(acts)
	return err
}

// execFrees returns the slots actions free to their pools; evicted
// counts them as evictions (not insert duplicates).
func (s *mambaSim) execFrees(k int, acts []core.Action, evicted bool) error {
	for _, a := range acts {
		switch {
		case a.Kind == core.ActionFreeDeviceKV || a.Kind == core.ActionFreeDeviceKVFullOnly ||
			a.Kind == core.ActionFreeDeviceSlots && a.Component == core.Full:
			s.free = append(s.free, a.Slots...)
			if evicted {
				s.st.FullEvictedTokens += int64(len(a.Slots))
			}
		case a.Kind == core.ActionFreeDeviceSlots && a.Component == core.Mamba:
			s.states = append(s.states, a.Slots...)
			if evicted {
				s.st.StateEvictions += int64(len(a.Slots))
			}
		default:
			return fmt.Errorf("coresim: request %d: unexpected action %v", k, a)
		}
	}
	return nil
}
