package coresim

import (
	"errors"
	"fmt"
	"math"

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
	// ServiceRate, when positive, models a scheduler queue and turns on
	// scheduler-aware protection (core.Tree.Protect): one FIFO server
	// prefills ServiceRate input tokens per second, requests arrive at
	// their timestamps (milliseconds), and each request that has arrived
	// but not yet started has its prefix protected until it starts. 0
	// replays without a queue.
	ServiceRate float64
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
	// With a ServiceRate: Protections is the number of queued requests
	// protected, ProtectedTokens the tokens their protections covered when
	// they were made, and QueueMean / QueueMax the number of requests
	// waiting when a request started.
	Protections     int
	ProtectedTokens int64
	QueueMean       float64
	QueueMax        int
}

// sim is the replay's state; its buffers are reused across requests.
type sim struct {
	cfg     Config
	tree    *core.Tree
	q       queue
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
	if !(cfg.ServiceRate >= 0) || math.IsInf(cfg.ServiceRate, 0) {
		return Stats{}, fmt.Errorf("coresim: service rate %v must be a finite rate ≥ 0 (tokens per second; 0: no queue)", cfg.ServiceRate)
	}
	if cfg.SanityEvery < 0 {
		return Stats{}, fmt.Errorf("coresim: SanityEvery %d is negative", cfg.SanityEvery)
	}
	tree, err := core.New(core.Config{PageSize: cfg.PageSize, Policy: cfg.Policy})
	if err != nil {
		return Stats{}, fmt.Errorf("coresim: %w", err)
	}
	s := &sim{cfg: cfg, tree: tree, free: identity(cfg.Capacity)}
	one := s.request
	if cfg.ServiceRate > 0 {
		s.q = queue{reqs: reqs, serial: make([]uint64, len(reqs)), rate: cfg.ServiceRate}
		one = s.queuedRequest
	}
	if err := s.replay(reqs, one); err != nil {
		return s.finish(), err
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
	if st.Requests > 0 && s.cfg.ServiceRate > 0 {
		st.QueueMean = float64(s.q.waitSum) / float64(st.Requests)
	}
	st.CachedTokens, _ = s.tree.TotalSize()
	st.FreeSlots = len(s.free)
	return st
}

// identity returns the free list of a pool of n slots.
func identity(n int) []int32 {
	free := make([]int32, n)
	for k := range free {
		free[k] = int32(k)
	}
	return free
}

// replay runs each request through one, checking the tree's sanity every
// cfg.SanityEvery requests.
func (s *sim) replay(reqs []workload.Request, one func(k int, req *workload.Request) error) error {
	for k := range reqs {
		if err := one(k, &reqs[k]); err != nil {
			return err
		}
		if s.cfg.SanityEvery > 0 && (k+1)%s.cfg.SanityEvery == 0 {
			if err := s.tree.SanityCheck(); err != nil {
				return fmt.Errorf("coresim: after request %d: %w", k, err)
			}
		}
	}
	return nil
}

// namespaceOf maps a trace request's namespace to a cache salt.
func namespaceOf(req *workload.Request) core.Namespace {
	var ns core.Namespace
	if req.Namespace != "" {
		ns.CacheSalt = req.Namespace
	}
	return ns
}

// request runs one request through match, lock, allocate, insert, unlock.
func (s *sim) request(k int, req *workload.Request) error {
	ns := namespaceOf(req)
	res, err := s.tree.Match(s.matched[:0], ns, req.Tokens)
	if err != nil {
		return fmt.Errorf("coresim: request %d: match: %w", k, err)
	}
	s.matched = res.Indices
	if err := s.serve(k, ns, req.Tokens, res, s.room, s.execInsert); err != nil {
		return err
	}
	s.st.MatchedTokens += int64(res.DeviceLen)
	return nil
}

// serve runs a matched request on the device: it locks the cached
// prefix, makes room for the fresh slots (room) and takes them, inserts
// the aligned sequence and executes the insert's actions (exec), returns
// the ragged tail, which is computed but never cached, and unlocks.
func (s *sim) serve(k int, ns core.Namespace, tokens []uint32, res core.MatchResult,
	room func(k, need int) error, exec func(k int, acts []core.Action) error) error {
	t := s.tree
	m := res.DeviceLen
	rcpt, err := t.Lock(res.LastDevice, 0)
	if err != nil {
		return fmt.Errorf("coresim: request %d: lock: %w", k, err)
	}
	need := len(tokens) - m
	if err := room(k, need); err != nil {
		// Leave the tree consistent for a caller that inspects it.
		_ = t.Unlock(res.LastDevice, rcpt, false)
		return err
	}
	// The request's slots: its cached prefix, then fresh ones.
	slots := append(s.slots[:0], s.matched[:m]...)
	top := len(s.free) - need
	slots = append(slots, s.free[top:]...)
	s.free = s.free[:top]
	s.slots = slots

	aligned := len(tokens) / t.PageSize() * t.PageSize()
	_, acts, err := t.Insert(core.InsertParams{Namespace: ns, Tokens: tokens[:aligned], Slots: slots[:aligned], PrevPrefixLen: m})
	if err != nil {
		return fmt.Errorf("coresim: request %d: insert: %w", k, err)
	}
	if err := exec(k, acts); err != nil {
		return err
	}
	s.free = append(s.free, slots[aligned:]...)
	if err := t.Unlock(res.LastDevice, rcpt, false); err != nil {
		return fmt.Errorf("coresim: request %d: unlock: %w", k, err)
	}
	s.st.Requests++
	s.st.InputTokens += int64(len(tokens))
	return nil
}

// room evicts until need slots are free.
func (s *sim) room(k, need int) error {
	short := need - len(s.free)
	if short <= 0 {
		return nil
	}
	if err := s.evict(k, short); err != nil {
		return err
	}
	return s.capacityErr(k, need)
}

// capacityErr reports a request the pool cannot serve even after eviction.
func (s *sim) capacityErr(k, need int) error {
	if need <= len(s.free) {
		return nil
	}
	return fmt.Errorf("%w: request %d needs %d fresh slots but only %d are free after eviction; capacity %d, %d held locked",
		ErrCapacity, k, need, len(s.free), s.cfg.Capacity, s.tree.Protected(core.Full))
}

// execInsert executes an insert's actions: duplicate frees only.
func (s *sim) execInsert(k int, acts []core.Action) error {
	for _, a := range acts {
		switch a.Kind {
		case core.ActionFreeDeviceKV, core.ActionFreeDeviceKVFullOnly:
			s.free = append(s.free, a.Slots...)
			s.st.DuplicateTokens += int64(len(a.Slots))
		default:
			return fmt.Errorf("coresim: request %d: unexpected insert action %v", k, a)
		}
	}
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
