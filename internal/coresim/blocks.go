package coresim

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/radixkv/radixkv/core/blockcache"
	"github.com/radixkv/radixkv/core/snapshot"
	"github.com/radixkv/radixkv/workload"
)

// ErrCanary reports a matched block whose content is not the prefix the
// lookup claimed: the cache handed out a block another sequence wrote.
var ErrCanary = errors.New("coresim: block canary mismatch")

// BlocksConfig configures a replay through the block cache.
type BlocksConfig struct {
	// Capacity is the device KV pool in tokens; the pool has
	// Capacity/BlockSize blocks.
	Capacity int
	// BlockSize is the block size in tokens (the tree's page size).
	BlockSize int
	// States is the SSM state pool in states; 0 runs without snapshots
	// (a model without recurrent layers).
	States int
	// TierStates is the spill tier in states (a host blob store); 0 has no
	// tier: snapshot victims are dropped.
	TierStates int
	// Output appends each request's OutputLength decoded tokens (ids from
	// OutputToken) before the sequence is cached.
	Output bool
	// OutputToken names the j-th decoded token of request k.
	OutputToken func(k, j int) uint32
	// SanityEvery runs Cache.Check every SanityEvery requests and at the
	// end; 0 never.
	SanityEvery int

	// Policy is the snapshot policy (States > 0): "lru" (or empty) saves
	// the finish-leaf state only and evicts by the seed's order; "marconi"
	// also checkpoints the branch point a speculative match finds inside a
	// cached run, evicts by Marconi's utility and tunes its alpha once.
	Policy string
	// Admission overrides the policy's admission: "leaf" or "branch"
	// (leaf plus branch points); empty follows Policy.
	Admission string
	// Model is the hybrid geometry for FLOP accounting and Marconi
	// (default snapshot.Model7BHybrid).
	Model snapshot.Model
	// TuneWindow is the number of requests, from the first state eviction,
	// that Marconi replays for each alpha in 0, 0.1, ..., 2.0 before
	// keeping the one that saves the most FLOPs (default 500). Alpha, when
	// not negative, fixes alpha instead (no tuning); set it to -1 to tune.
	TuneWindow int
	Alpha      float64
	// Engine, when set, is the block cache the replay drives (for example
	// a host/native engine, through the ABI); it must be empty, with the
	// block size of BlockSize. The marconi policy and branch admission
	// need the core cache (a speculative match and a clone are not ABI
	// ops), and SanityEvery checks only the core cache.
	Engine BlockEngine
}

// BlocksStats summarises a block-cache replay.
type BlocksStats struct {
	Requests      int
	InputTokens   int64 // prompt tokens
	OutputTokens  int64 // decoded tokens appended (Output)
	MatchedTokens int64 // KV hit: whole matched blocks
	HitRate       float64
	Evictions     int   // eviction calls (the pool was short)
	EvictedBlocks int64 // blocks freed, partial ones included
	Unused        int64 // computed blocks the cache already held (duplicates)
	CachedBlocks  int   // blocks the cache holds at the end
	FreeBlocks    int
	CanaryChecked int64 // matched blocks whose content was verified

	// SSM snapshots (States > 0).
	Snapshots *SnapshotStats
}

// SnapshotStats are the snapshot side of a hybrid replay: how much of the
// KV hit also had a recurrent state to resume from.
type SnapshotStats struct {
	Hits, TierHits, Misses int
	// AnchorTokens is the sum of the anchors resumed from (the effective
	// hit of a hybrid model); RecomputeTokens the KV-matched tokens past
	// the anchor that had to be recomputed for the state.
	AnchorTokens, RecomputeTokens int64
	Saves, Displaced              int64
	Evictions, Spills, Drops      int64
	FaultIns, FaultMisses         int64
	Resident, Tiered              int
	EffectiveHitRate              float64 // AnchorTokens / InputTokens
	// Branches counts branch-point checkpoints admitted; FLOPsSaved the
	// prefill FLOPs that snapshot hits saved (the whole model over the
	// anchor); Alpha the Marconi weight in force at the end, TunedAt the
	// request after which it was tuned (-1: never).
	Branches   int64
	FLOPsSaved float64
	Alpha      float64
	TunedAt    int
}

// BlockEngine is what RunBlocks drives: a block cache with its snapshot
// index. host/native's engines implement it (their BlocksEngine and
// SnapshotEngine methods), so a replay can go through the ABI; without
// one RunBlocks uses core/blockcache directly.
type BlockEngine interface {
	BlocksLookup(tokens []uint32, session, adapter uint64) (blockcache.Match, error)
	BlocksInsert(tokens, table, disks []uint32, matched int, adapter uint64) (blockcache.Acquired, error)
	BlocksRelease(tokens []uint32, matched int, adapter uint64) error
	BlocksEvict(want int) (blockcache.Evicted, error)
	BlocksStats() (blockcache.Stats, error)
	SnapshotInsert(kind snapshot.Kind, tokens []uint32, adapter uint64, slot int32, session uint64) (snapshot.Displaced, error)
	SnapshotEvict(toTier bool, minTokens int) (snapshot.TierEvict, bool, error)
	SnapshotPromote(key, adapter uint64, slot int32, session uint64) error
	SnapshotForget(key, adapter uint64) error
	SnapshotStats() (snapshot.Stats, float64, error)
}

// coreBlocks is the BlockEngine of a core/blockcache cache.
type coreBlocks struct{ c *blockcache.Cache }

func (b coreBlocks) BlocksLookup(tokens []uint32, session, adapter uint64) (blockcache.Match, error) {
	return b.c.Lookup(tokens, session, adapter)
}
func (b coreBlocks) BlocksInsert(tokens, table, disks []uint32, matched int, adapter uint64) (blockcache.Acquired, error) {
	return b.c.Insert(tokens, table, disks, matched, adapter)
}
func (b coreBlocks) BlocksRelease(tokens []uint32, matched int, adapter uint64) error {
	return b.c.ReleaseMatched(tokens, matched, adapter)
}
func (b coreBlocks) BlocksEvict(want int) (blockcache.Evicted, error) { return b.c.Evict(want), nil }
func (b coreBlocks) BlocksStats() (blockcache.Stats, error)           { return b.c.Stats(), nil }
func (b coreBlocks) SnapshotInsert(kind snapshot.Kind, tokens []uint32, adapter uint64, slot int32, session uint64) (snapshot.Displaced, error) {
	switch kind {
	case snapshot.Tail:
		return b.c.InsertTailSnapshot(tokens, adapter, slot, session)
	case snapshot.Sibling:
		return b.c.InsertTailSiblingSnapshot(tokens, adapter, slot, session)
	}
	return b.c.InsertIntermediateSnapshot(tokens, adapter, slot, session)
}
func (b coreBlocks) SnapshotEvict(toTier bool, minTokens int) (snapshot.TierEvict, bool, error) {
	if toTier {
		return b.c.Snapshots().EvictToTier(minTokens)
	}
	slot, ok := b.c.Snapshots().EvictLRU()
	return snapshot.TierEvict{Slot: slot}, ok, nil
}
func (b coreBlocks) SnapshotPromote(key, adapter uint64, slot int32, session uint64) error {
	return b.c.Snapshots().Promote(key, adapter, slot, session)
}
func (b coreBlocks) SnapshotForget(key, adapter uint64) error {
	return b.c.Snapshots().Forget(key, adapter)
}
func (b coreBlocks) SnapshotStats() (snapshot.Stats, float64, error) {
	return b.c.Snapshots().Stats(), b.c.Snapshots().Alpha(), nil
}

type blockSim struct {
	cfg      BlocksConfig
	c        *blockcache.Cache // the core cache; nil when replaying through an Engine
	be       BlockEngine       // what the replay calls: coreBlocks{c} or the Engine
	free     []uint32
	content  []uint64 // canary: chained hash of the prefix each block holds
	adapters map[string]uint64
	states   []int32           // free state slots
	blobs    map[uint64]blob   // the tier's blob store
	blobFIFO []fifoEntry       // spill order, for the tier's own eviction
	spills   uint64            // spill sequence numbers
	lost     map[uint64]uint64 // tiered entries whose blob the tier dropped -> adapter
	st       BlocksStats
	ss       SnapshotStats
	seq      []uint32 // the current request's sequence
}

// RunBlocks replays reqs through a fresh core/blockcache cache the way a
// block-table engine drives it: look up (references the hit), take fresh
// blocks for the rest of the sequence (evicting when the pool is short),
// write and insert them, and release the sequence's references when it
// finishes; with States, resume from the deepest snapshot and save the
// finish-leaf state. Every matched block is checked against a canary of
// the prefix it must hold. Deterministic.
func RunBlocks(cfg BlocksConfig, reqs []workload.Request) (BlocksStats, error) {
	if cfg.BlockSize <= 0 || cfg.Capacity < cfg.BlockSize || cfg.States < 0 || cfg.TierStates < 0 || cfg.SanityEvery < 0 {
		return BlocksStats{}, fmt.Errorf("coresim: block replay needs a positive block size, a capacity of at least one block, and non-negative state pools (got %+v)", cfg)
	}
	if cfg.Output && cfg.OutputToken == nil {
		return BlocksStats{}, fmt.Errorf("coresim: Output needs an OutputToken function")
	}
	if cfg.Model == (snapshot.Model{}) {
		cfg.Model = snapshot.Model7BHybrid
	}
	if cfg.TuneWindow == 0 {
		cfg.TuneWindow = 500
	}
	bcfg := blockcache.Config{BlockSize: cfg.BlockSize}
	switch cfg.Policy {
	case "", "lru":
		cfg.Policy = "lru"
	case "marconi":
		alpha := max(cfg.Alpha, 0)
		bcfg.Snapshots.Marconi = &snapshot.MarconiConfig{Model: cfg.Model, Alpha: alpha}
	default:
		return BlocksStats{}, fmt.Errorf("coresim: unknown snapshot policy %q (known: lru, marconi)", cfg.Policy)
	}
	switch cfg.Admission {
	case "":
		cfg.Admission = "leaf"
		if cfg.Policy == "marconi" {
			cfg.Admission = "branch"
		}
	case "leaf", "branch":
	default:
		return BlocksStats{}, fmt.Errorf("coresim: unknown admission %q (known: leaf, branch)", cfg.Admission)
	}
	if cfg.TuneWindow < 0 {
		return BlocksStats{}, fmt.Errorf("coresim: TuneWindow %d is negative", cfg.TuneWindow)
	}
	var c *blockcache.Cache
	var be BlockEngine = cfg.Engine
	if be == nil {
		var err error
		if c, err = blockcache.New(bcfg); err != nil {
			return BlocksStats{}, fmt.Errorf("coresim: %w", err)
		}
		be = coreBlocks{c}
	} else if cfg.Policy == "marconi" || cfg.Admission == "branch" {
		return BlocksStats{}, fmt.Errorf("coresim: the marconi policy and branch admission need the core block cache, not an Engine")
	}
	n := cfg.Capacity / cfg.BlockSize
	s := &blockSim{cfg: cfg, c: c, be: be, content: make([]uint64, n), adapters: map[string]uint64{}, blobs: map[uint64]blob{}, lost: map[uint64]uint64{}}
	for b := n - 1; b >= 0; b-- {
		s.free = append(s.free, uint32(b))
	}
	for k := cfg.States - 1; k >= 0; k-- {
		s.states = append(s.states, int32(k))
	}
	s.ss.TunedAt = -1
	tune := cfg.Policy == "marconi" && cfg.Alpha < 0 && cfg.States > 0
	var frozen *blockSim // the sim at the first state eviction, for tuning
	t0 := -1
	for k := range reqs {
		if tune && t0 < 0 && s.c.Snapshots().Stats().Evictions > 0 { // tune implies the core cache
			t0, frozen = k, s.clone()
		}
		if err := s.one(k, reqs); err != nil {
			return s.finish(), err
		}
		if tune && t0 >= 0 && k+1 == t0+cfg.TuneWindow {
			alpha, err := tuneAlpha(frozen, reqs[t0:k+1], t0)
			if err != nil {
				return s.finish(), err
			}
			if err := s.c.Snapshots().SetAlpha(alpha); err != nil {
				return s.finish(), err
			}
			s.ss.TunedAt, tune, frozen = k, false, nil
		}
		if c != nil && cfg.SanityEvery > 0 && (k+1)%cfg.SanityEvery == 0 {
			if err := c.Check(); err != nil {
				return s.finish(), fmt.Errorf("coresim: after request %d: %w", k, err)
			}
		}
	}
	st := s.finish()
	if c != nil && cfg.SanityEvery > 0 {
		if err := c.Check(); err != nil {
			return st, fmt.Errorf("coresim: at the end: %w", err)
		}
	}
	cs, err := be.BlocksStats()
	if err != nil {
		return st, fmt.Errorf("coresim: stats: %w", err)
	}
	if cs.Referenced != 0 || len(s.free)+cs.Blocks != n {
		return st, fmt.Errorf("%w: %d free + %d cached blocks != %d, %d still referenced", ErrAccounting, len(s.free), cs.Blocks, n, cs.Referenced)
	}
	return st, nil
}

// one runs request k.
func (s *blockSim) one(k int, reqs []workload.Request) error {
	s.seq = append(s.seq[:0], reqs[k].Tokens...)
	if s.cfg.Output {
		for j := range reqs[k].OutputLength {
			s.seq = append(s.seq, s.cfg.OutputToken(k, j))
		}
		s.st.OutputTokens += int64(reqs[k].OutputLength)
	}
	return s.request(k, &reqs[k], s.seq)
}

// tuneAlpha replays window (starting at request t0) from the frozen sim
// once per alpha in 0, 0.1, ..., 2.0 and returns the one whose replay
// saved the most FLOPs (ties: the smaller alpha), as Marconi does once.
func tuneAlpha(frozen *blockSim, window []workload.Request, t0 int) (float64, error) {
	best, bestSaved := 0.0, -1.0
	for i := 0; i <= 20; i++ {
		alpha := float64(i) / 10
		sim := frozen.clone()
		if err := sim.c.Snapshots().SetAlpha(alpha); err != nil {
			return 0, err
		}
		before := sim.ss.FLOPsSaved
		// The window's requests keep their indices (decoded token ids).
		reqs := make([]workload.Request, t0+len(window))
		copy(reqs[t0:], window)
		for k := t0; k < len(reqs); k++ {
			if err := sim.one(k, reqs); err != nil {
				return 0, fmt.Errorf("coresim: tuning alpha %.1f: %w", alpha, err)
			}
		}
		if saved := sim.ss.FLOPsSaved - before; saved > bestSaved {
			best, bestSaved = alpha, saved
		}
	}
	return best, nil
}

// clone copies the sim's whole state.
func (s *blockSim) clone() *blockSim {
	d := *s
	d.c = s.c.Clone()
	d.be = coreBlocks{d.c}
	d.free = slices.Clone(s.free)
	d.content = slices.Clone(s.content)
	d.adapters = maps.Clone(s.adapters)
	d.states = slices.Clone(s.states)
	d.blobs = maps.Clone(s.blobs)
	d.blobFIFO = slices.Clone(s.blobFIFO)
	d.lost = maps.Clone(s.lost)
	d.seq = nil
	return &d
}

func (s *blockSim) finish() BlocksStats {
	st := s.st
	if st.InputTokens > 0 {
		st.HitRate = float64(st.MatchedTokens) / float64(st.InputTokens)
	}
	cs, _ := s.be.BlocksStats()
	st.CachedBlocks, st.FreeBlocks = cs.Blocks, len(s.free)
	if s.cfg.States > 0 {
		ss := s.ss
		is, alpha, _ := s.be.SnapshotStats()
		ss.Saves, ss.Evictions, ss.Spills, ss.Drops = int64(is.Saves), int64(is.Evictions), int64(is.Spills), int64(is.Drops)
		ss.Resident, ss.Tiered = is.ResidentEntries, is.TieredEntries
		ss.Alpha = alpha
		if st.InputTokens > 0 {
			ss.EffectiveHitRate = float64(ss.AnchorTokens) / float64(st.InputTokens)
		}
		st.Snapshots = &ss
	}
	return st
}

func (s *blockSim) adapter(ns string) uint64 {
	if ns == "" {
		return 0
	}
	id, ok := s.adapters[ns]
	if !ok {
		id = uint64(len(s.adapters) + 1)
		s.adapters[ns] = id
	}
	return id
}

func canary(h uint64, block []uint32) uint64 {
	for _, t := range block {
		h = (h ^ uint64(t)) * 0x100000001b3
	}
	return h
}

func (s *blockSim) request(k int, req *workload.Request, seq []uint32) error {
	bs, c, be := s.cfg.BlockSize, s.c, s.be
	ad := s.adapter(req.Namespace)
	prompt := seq[:len(req.Tokens)]
	m, err := be.BlocksLookup(prompt, 0, ad)
	if err != nil {
		return fmt.Errorf("coresim: request %d: lookup: %w", k, err)
	}
	full := m.MatchedTokens / bs
	h := uint64(0)
	for i := range full {
		h = canary(h, prompt[i*bs:(i+1)*bs])
		if s.content[m.Blocks[i]] != h {
			return fmt.Errorf("%w: request %d block %d (id %d)", ErrCanary, k, i, m.Blocks[i])
		}
		s.st.CanaryChecked++
	}
	branchAt := 0
	if s.cfg.States > 0 {
		if err := s.resume(k, m); err != nil {
			return err
		}
		// Marconi's input-reuse admission: a prefix that ends inside a
		// cached run is shared by two sequences; checkpoint the state there.
		if s.cfg.Admission == "branch" {
			if at, inside := c.Branch(prompt, ad); inside && at < len(prompt) {
				branchAt = at
			}
		}
	}
	need := (len(seq)+bs-1)/bs - full
	if short := need - len(s.free); short > 0 {
		ev, err := be.BlocksEvict(short)
		if err != nil {
			return fmt.Errorf("coresim: request %d: evict: %w", k, err)
		}
		s.st.Evictions++
		s.st.EvictedBlocks += int64(len(ev.Blocks))
		s.free = append(s.free, ev.Blocks...)
	}
	if need > len(s.free) {
		_ = be.BlocksRelease(prompt, m.MatchedTokens, ad)
		return fmt.Errorf("%w: request %d needs %d fresh blocks but only %d are free after eviction (%d blocks of %d tokens)",
			ErrCapacity, k, need, len(s.free), s.cfg.Capacity/bs, bs)
	}
	table := append(m.Blocks[:full:full], s.free[len(s.free)-need:]...)
	s.free = s.free[:len(s.free)-need]
	// Prefill (and decode) writes the fresh blocks.
	for i := full; i < len(table); i++ {
		end := min((i+1)*bs, len(seq))
		s.content[table[i]] = canary(h, seq[i*bs:end])
		if end-i*bs == bs {
			h = s.content[table[i]]
		}
	}
	if branchAt > 0 {
		slot, err := s.stateSlot(k)
		if err != nil {
			return err
		}
		d, err := be.SnapshotInsert(snapshot.Plain, prompt[:branchAt], ad, slot, 0)
		if err != nil {
			return fmt.Errorf("coresim: request %d: branch checkpoint: %w", k, err)
		}
		s.states = append(s.states, d.Slots...)
		s.ss.Displaced += int64(len(d.Slots))
		s.dropBlobs(d.Blobs)
		s.ss.Branches++
	}
	a, err := be.BlocksInsert(seq, table, nil, m.MatchedTokens, ad)
	if err != nil {
		return fmt.Errorf("coresim: request %d: insert: %w", k, err)
	}
	if s.cfg.States > 0 { // the finish-leaf state
		slot, err := s.stateSlot(k)
		if err != nil {
			return err
		}
		d, err := be.SnapshotInsert(snapshot.Plain, seq, ad, slot, 0)
		if err != nil {
			return fmt.Errorf("coresim: request %d: snapshot: %w", k, err)
		}
		s.states = append(s.states, d.Slots...)
		s.ss.Displaced += int64(len(d.Slots))
		s.dropBlobs(d.Blobs)
	}
	adopted := make(map[uint32]bool, len(a.Blocks))
	for _, b := range a.Blocks {
		adopted[b] = true
	}
	for _, b := range table[full:] {
		if !adopted[b] {
			s.free = append(s.free, b)
		}
	}
	s.st.Unused += int64(len(a.Unused))
	s.free = append(s.free, a.Released...)
	// The sequence finished: give back its references.
	if err := be.BlocksRelease(seq, min(len(seq)/bs, len(table))*bs, ad); err != nil {
		return fmt.Errorf("coresim: request %d: release: %w", k, err)
	}
	s.st.Requests++
	s.st.InputTokens += int64(len(prompt))
	s.st.MatchedTokens += int64(full * bs)
	return nil
}

// resume accounts for the snapshot a hybrid request resumes from, faulting
// a spilled one back in.
func (s *blockSim) resume(k int, m blockcache.Match) error {
	sn := m.Snapshot
	full := int64(m.MatchedTokens / s.cfg.BlockSize * s.cfg.BlockSize)
	if !sn.Found {
		s.ss.Misses++
		s.ss.RecomputeTokens += full
		return nil
	}
	if sn.Tiered {
		s.ss.TierHits++
		slot, err := s.stateSlot(k)
		if err != nil {
			return err
		}
		b, ok := s.blobs[sn.Key]
		if !ok { // the blob aged out of the tier: forget the entry, recompute
			s.states = append(s.states, slot)
			s.ss.FaultMisses++
			s.ss.Misses++
			s.ss.RecomputeTokens += full
			if err := s.be.SnapshotForget(sn.Key, s.lost[sn.Key]); err != nil {
				return fmt.Errorf("coresim: request %d: forget: %w", k, err)
			}
			delete(s.lost, sn.Key)
			return nil
		}
		delete(s.blobs, sn.Key)
		if err := s.be.SnapshotPromote(sn.Key, b.adapter, slot, 0); err != nil {
			return fmt.Errorf("coresim: request %d: promote: %w", k, err)
		}
		s.ss.FaultIns++
	}
	s.ss.Hits++
	s.ss.FLOPsSaved += s.cfg.Model.PrefillFLOPs(sn.Tokens)
	s.ss.AnchorTokens += int64(sn.Tokens)
	s.ss.RecomputeTokens += full - int64(sn.Tokens)
	return nil
}

// stateSlot takes a free state slot, reclaiming one from the index when
// none is free: spill to the tier when there is one, else drop.
func (s *blockSim) stateSlot(k int) (int32, error) {
	if n := len(s.states); n > 0 {
		slot := s.states[n-1]
		s.states = s.states[:n-1]
		return slot, nil
	}
	if s.cfg.TierStates == 0 {
		ev, ok, err := s.be.SnapshotEvict(false, 0)
		if err != nil || !ok {
			return 0, fmt.Errorf("%w: request %d: no state slot free or evictable (%d states): %v", ErrCapacity, k, s.cfg.States, err)
		}
		return ev.Slot, nil
	}
	ev, ok, err := s.be.SnapshotEvict(true, 0)
	if err != nil || !ok {
		return 0, fmt.Errorf("%w: request %d: no state slot free or evictable (%d states): %v", ErrCapacity, k, s.cfg.States, err)
	}
	if ev.Outcome == snapshot.Spill {
		// A full tier loses its oldest blob; the entry learns it on its
		// next hit (a fault-in miss), as a real blob store would report.
		for len(s.blobs) >= s.cfg.TierStates && len(s.blobFIFO) > 0 {
			old := s.blobFIFO[0]
			s.blobFIFO = s.blobFIFO[1:]
			if b, ok := s.blobs[old.key]; ok && b.seq == old.seq {
				delete(s.blobs, old.key)
				s.lost[old.key] = b.adapter
			}
		}
		s.spills++
		s.blobs[ev.Key] = blob{seq: s.spills, adapter: ev.Adapter}
		s.blobFIFO = append(s.blobFIFO, fifoEntry{ev.Key, s.spills})
		delete(s.lost, ev.Key)
	}
	return ev.Slot, nil
}

// dropBlobs deletes the blobs of entries that became resident again or
// went away.
func (s *blockSim) dropBlobs(keys []uint64) {
	for _, key := range keys {
		delete(s.blobs, key)
		delete(s.lost, key)
	}
}

type blob struct {
	seq     uint64
	adapter uint64
}

type fifoEntry struct {
	key, seq uint64
}
