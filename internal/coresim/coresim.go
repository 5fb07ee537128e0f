package coresim

import (
	"errors"
	"fmt"

	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/workload"
)

// ErrCapacity reports a request that needs more free slots than the pool
// can give, even after evicting everything that is not locked.
var ErrCapacity = errors.New("coresim: device pool too small")

// ErrAccounting reports slots lost or duplicated between the free list and
// the tree.
var ErrAccounting = errors.New("coresim: slot accounting mismatch")

// Config configures a replay.
type Config struct {
	// Capacity is the number of device KV slots (one per cached token).
	Capacity int
	// PageSize is the tree's page size in tokens (≥ 1).
	PageSize int
	// Policy is the eviction policy name (see core.PolicyNames); empty
	// means lru.
	Policy string
	// SanityEvery runs core.Tree.SanityCheck after every SanityEvery-th
	// request and at the end; 0 never runs it (it scans the whole tree).
	SanityEvery int
}

// Stats summarises a replay.
type Stats struct {
	// Requests is the number of requests replayed.
	Requests int
	// InputTokens is the sum of the requests' input lengths.
	InputTokens int64
	// MatchedTokens is the sum of the device prefix hits.
	MatchedTokens int64
	// HitRate is MatchedTokens / InputTokens (0 when there is no input).
	HitRate float64
	// Evictions is the number of eviction calls (requests that found the
	// free list short).
	Evictions int
	// EvictedNodes and EvictedTokens count the leaves evicted and the
	// device slots their eviction freed.
	EvictedNodes  int
	EvictedTokens int64
	// DuplicateTokens counts incoming slots that insert reported as
	// duplicates of cached data (ActionFreeDeviceKV).
	DuplicateTokens int64
	// CachedTokens is the device slots the tree holds at the end.
	CachedTokens int
	// FreeSlots is the length of the free list at the end.
	FreeSlots int
}

// sim is the replay's state; its buffers are reused across requests.
type sim struct {
	cfg     Config
	tree    *core.Tree
	free    []int32 // a stack of free slot indices
	matched []int32
	slots   []int32
	acts    []core.Action
	st      Stats
}

// Run replays reqs in order through a fresh tree with a pool of
// cfg.Capacity slots and returns the statistics. On error the returned
// Stats cover the requests completed before it. Errors: an invalid cfg
// (wrapping core's config errors), ErrCapacity, ErrAccounting, and any
// error the tree returns (wrapped with the request's index).
func Run(cfg Config, reqs []workload.Request) (Stats, error) {
	if cfg.Capacity < 0 || int64(cfg.Capacity) > 1<<31 {
		return Stats{}, fmt.Errorf("coresim: capacity %d out of range [0, 2^31]", cfg.Capacity)
	}
	if cfg.SanityEvery < 0 {
		return Stats{}, fmt.Errorf("coresim: SanityEvery %d is negative", cfg.SanityEvery)
	}
	tree, err := core.New(core.Config{PageSize: cfg.PageSize, Policy: cfg.Policy})
	if err != nil {
		return Stats{}, fmt.Errorf("coresim: %w", err)
	}
	s := &sim{cfg: cfg, tree: tree, free: make([]int32, cfg.Capacity)}
	for k := range s.free {
		s.free[k] = int32(k)
	}
	for k := range reqs {
		if err := s.request(k, &reqs[k]); err != nil {
			return s.finish(), err
		}
		if cfg.SanityEvery > 0 && (k+1)%cfg.SanityEvery == 0 {
			if err := tree.SanityCheck(); err != nil {
				return s.finish(), fmt.Errorf("coresim: after request %d: %w", k, err)
			}
		}
	}
	st := s.finish()
	if cfg.SanityEvery > 0 {
		if err := tree.SanityCheck(); err != nil {
			return st, fmt.Errorf("coresim: at the end: %w", err)
		}
	}
	if held := tree.Evictable(core.Full) + tree.Protected(core.Full); len(s.free)+held != cfg.Capacity {
		return st, fmt.Errorf("%w: %d free + %d held by the tree (%d evictable, %d protected) != capacity %d",
			ErrAccounting, len(s.free), held, tree.Evictable(core.Full), tree.Protected(core.Full), cfg.Capacity)
	}
	return st, nil
}

// finish fills the derived fields of the statistics.
func (s *sim) finish() Stats {
	st := s.st
	if st.InputTokens > 0 {
		st.HitRate = float64(st.MatchedTokens) / float64(st.InputTokens)
	}
	st.CachedTokens, _ = s.tree.TotalSize()
	st.FreeSlots = len(s.free)
	return st
}

// request runs one request through match, lock, allocate, insert, unlock.
func (s *sim) request(k int, req *workload.Request) error {
	t := s.tree
	var ns core.Namespace
	if req.Namespace != "" {
		ns.CacheSalt = req.Namespace
	}
	tokens := req.Tokens
	res, err := t.Match(s.matched[:0], ns, tokens)
	if err != nil {
		return fmt.Errorf("coresim: request %d: match: %w", k, err)
	}
	s.matched = res.Indices
	m := res.DeviceLen
	rcpt, err := t.Lock(res.LastDevice, 0)
	if err != nil {
		return fmt.Errorf("coresim: request %d: lock: %w", k, err)
	}

	need := len(tokens) - m
	if short := need - len(s.free); short > 0 {
		if err := s.evict(k, short); err != nil {
			// Leave the tree consistent for a caller that inspects it.
			_ = t.Unlock(res.LastDevice, rcpt, false)
			return err
		}
		if need > len(s.free) {
			err := fmt.Errorf("%w: request %d needs %d fresh slots (%d input tokens, %d matched) but only %d are free after eviction; capacity %d, %d held locked",
				ErrCapacity, k, need, len(tokens), m, len(s.free), s.cfg.Capacity, t.Protected(core.Full))
			_ = t.Unlock(res.LastDevice, rcpt, false)
			return err
		}
	}
	// The request's slots: its cached prefix, then fresh ones.
	slots := append(s.slots[:0], s.matched[:m]...)
	top := len(s.free) - need
	slots = append(slots, s.free[top:]...)
	s.free = s.free[:top]
	s.slots = slots

	aligned := len(tokens) / s.tree.PageSize() * s.tree.PageSize()
	_, acts, err := t.Insert(core.InsertParams{
		Namespace:     ns,
		Tokens:        tokens[:aligned],
		Slots:         slots[:aligned],
		PrevPrefixLen: m,
	})
	if err != nil {
		return fmt.Errorf("coresim: request %d: insert: %w", k, err)
	}
	for _, a := range acts {
		switch a.Kind {
		case core.ActionFreeDeviceKV, core.ActionFreeDeviceKVFullOnly:
			s.free = append(s.free, a.Slots...)
			s.st.DuplicateTokens += int64(len(a.Slots))
		default:
			return fmt.Errorf("coresim: request %d: unexpected insert action %v", k, a)
		}
	}
	// The ragged tail was computed but is never cached.
	s.free = append(s.free, slots[aligned:]...)

	if err := t.Unlock(res.LastDevice, rcpt, false); err != nil {
		return fmt.Errorf("coresim: request %d: unlock: %w", k, err)
	}
	s.st.Requests++
	s.st.InputTokens += int64(len(tokens))
	s.st.MatchedTokens += int64(m)
	return nil
}

// evict asks the tree for want more device slots and returns what it frees
// to the free list.
func (s *sim) evict(k, want int) error {
	acts, freed, err := s.tree.Evict(core.Full, want, s.acts[:0])
	s.acts = acts[:0]
	if err != nil {
		return fmt.Errorf("coresim: request %d: evict: %w", k, err)
	}
	s.st.Evictions++
	s.st.EvictedTokens += int64(freed)
	for _, a := range acts {
		if a.Kind != core.ActionFreeDeviceSlots || a.Component != core.Full {
			return fmt.Errorf("coresim: request %d: unexpected eviction action %v", k, a)
		}
		s.st.EvictedNodes++
		s.free = append(s.free, a.Slots...)
	}
	clear(acts) // drop references to the freed slot arrays
	return nil
}
