package native

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/radixkv/radixkv/core"
)

// ControllerConfig selects the controller's optional behaviour.
type ControllerConfig struct {
	// Canary writes a CanaryBytes record into every slot the controller
	// fills, derived from the namespace, the position and the token
	// prefix, and poisons slots as they are freed. Off, the controller
	// never touches slot bytes.
	Canary bool
	// VerifyMatches checks, on every Arrive and after every FinishChunk
	// re-match, that the slots the tree handed back hold exactly the
	// canary records of that prefix; a mismatch fails the call with
	// ErrCanaryMismatch. Requires Canary.
	VerifyMatches bool
}

// Stats are cumulative counters of a controller.
type Stats struct {
	Requests         uint64 // Arrive calls that returned a request
	Finished         uint64 // Finish calls that completed
	Aborted          uint64 // Abort calls that completed
	ChunkFinishes    uint64 // FinishChunk calls that cached something
	InputTokens      uint64 // tokens of arriving requests
	MatchedTokens    uint64 // device-cached tokens found on arrival
	ComputedTokens   uint64 // tokens given fresh slots by Prefill/Extend
	FreedSlots       uint64 // slots returned to pools by actions and tails
	EvictedNodes     uint64 // tree nodes evicted to make room
	EvictedTokens    uint64 // device atoms those evictions freed
	BytesWritten     uint64 // canary bytes written into slots
	CanaryChecked    uint64 // slots whose canary was verified
	CanaryMismatches uint64 // slots whose canary was wrong

	// Hybrid trees (SWA, Mamba); zero otherwise.
	SWAWindowFreed   uint64 // SWA slots requests dropped as positions left their window
	SWAEarlyReleases uint64 // SWA locks released early (UnlockSWA) by running requests
	SWAEvictedSlots  uint64 // SWA slots freed by eviction (any trigger)
	MambaForks       uint64 // arrivals that forked a cached Mamba state (copy on write)
	MambaDonated     uint64 // request states the tree adopted (Finish, FinishChunk)
	// MambaChunksSkipped counts FinishChunk calls a marconi Mamba tree
	// answered by caching nothing (states are admitted only at branch
	// points and at Finish).
	MambaChunksSkipped uint64
	MambaEvicted       uint64 // Mamba states freed by eviction and per-path caps

	// Host tier (HiCache); zero without one.
	HostHitTokens    uint64 // tokens an arrival found on the host only and loaded back (MatchedTokens excludes them)
	LoadBacks        uint64 // load-backs committed (host to device)
	LoadedTokens     uint64 // Full atoms those load-backs copied to the device
	LoadBacksSkipped uint64 // host hits not loaded back: pinned, nothing to load, or no device room
	Backups          uint64 // nodes backed up (device to host; write-through and write-back)
	BackedUpTokens   uint64 // Full atoms those backups copied to the host
	WriteThroughs    uint64 // write-through backups acknowledged
	BackupsRefused   uint64 // backups the host had no room for (a chain stopped, or an eviction dropped)
	Demoted          uint64 // write-back evictions that demoted a leaf to the host
	Dropped          uint64 // write-back evictions that dropped a leaf (host full)
	HostEvictions    uint64 // EvictHost calls made to make host room
	HostFreedSlots   uint64 // host slots of any component the tree gave back
	HostFreedTokens  uint64 // host Full slots among them
	BytesMoved       uint64 // slot bytes copied between device and host pools
}

// Controller runs the request lifecycle over an Engine and the pools:
// match and lock on arrival, slot allocation (evicting through the engine
// when the pool is short), insert and unlock on finish, chunked-prefill
// re-caching, and the execution of every action the tree returns.
//
// A Controller is safe for concurrent use: one mutex serialises every call
// into the engine and the pools, which are themselves not thread-safe. A
// Request must be used by one goroutine at a time.
type Controller struct {
	mu     sync.Mutex
	eng    Engine
	pools  Pools
	kv     Pool // the device Full pool
	cfg    ControllerConfig
	page   int
	bigram bool
	closed bool

	owned int // slots held by running requests outside the tree
	live  int // running requests
	stats Stats

	hy hybrid    // SWA and Mamba pools and accounting; zero for {full}
	ht *hostTier // host pools and accounting; nil without a host tier

	acts     []core.Action
	matchBuf []int32
	// Buffers of finished requests, reused by the next arrivals: a fresh
	// prompt-sized allocation per request dominated replay profiles.
	spareTokens [][]uint32
	spareSlots  [][]int32
	want        [CanaryBytes]byte
	got         [CanaryBytes]byte
	zero        [CanaryBytes]byte
}

// NewController returns a controller that owns eng and pools (Close
// closes both). pools must hold the Full device pool, and the SWA and
// Mamba device pools when the engine's tree has those components, each
// with at least CanaryBytes per slot when the canary is on. When the
// tree has a host tier (core.Config.HostTier), pools must also hold a
// host pool for each of its components, with the slot size of the
// matching device pool.
// Errors: ErrInvalidArgument, ErrNoPool.
func NewController(eng Engine, pools Pools, cfg ControllerConfig) (*Controller, error) {
	if eng == nil || pools == nil {
		return nil, fmt.Errorf("%w: the controller needs an engine and pools", ErrInvalidArgument)
	}
	kv := pools.Pool(core.Full, Device)
	if kv == nil {
		return nil, fmt.Errorf("%w: the full device pool is required", ErrNoPool)
	}
	if cfg.VerifyMatches && !cfg.Canary {
		return nil, fmt.Errorf("%w: VerifyMatches needs Canary", ErrInvalidArgument)
	}
	if cfg.Canary && kv.SlotBytes() < CanaryBytes {
		return nil, fmt.Errorf("%w: the canary needs %d bytes per slot, the full device pool has %d", ErrInvalidArgument, CanaryBytes, kv.SlotBytes())
	}
	ecfg := eng.Config()
	c := &Controller{eng: eng, pools: pools, kv: kv, cfg: cfg, page: ecfg.PageSize, bigram: ecfg.Bigram}
	if err := c.hy.init(ecfg, pools, kv, cfg.Canary); err != nil {
		return nil, err
	}
	if ecfg.HostTier {
		ht, err := newHostTier(ecfg, pools, c)
		if err != nil {
			return nil, err
		}
		c.ht = ht
	}
	return c, nil
}

// Request is one request's cache state: its tokens, one slot per computed
// token, and the lock on the cached prefix it holds in the tree.
//
//	slots: [0, protected)        owned by the tree, locked by this request
//	       [protected, computed) owned by the request (fresh slots)
//	tokens [computed, len)       known but not computed yet
type Request struct {
	c         *Controller
	ns        core.Namespace
	tokens    []uint32
	slots     []int32
	protected int
	cached    int
	hostHit   int // part of cached loaded back from the host on arrival
	last      core.NodeID
	rcpt      core.Receipt
	hash      uint64 // canary chain over tokens[:len(slots)]
	done      bool

	// SWA: the request holds SWA slots for its own positions from
	// max(swaEvicted, protected) on; those before swaEvicted left its
	// window and were freed. swaReleased: UnlockSWA released the SWA part
	// of rcpt early.
	swaEvicted  int
	swaReleased bool
	swaBranch   int // SWABranchingSeqlen of the arrival match (0: none)
	mambaBranch int // MambaBranchingSeqlen of the arrival match (0: none)
	// Mamba: the request's running state slot (-1: none) and the canary
	// chain at the last checkpoint length (a multiple of the grid).
	mstate int32
	ckLen  int
	ckHash uint64
}

// Namespace returns the request's namespace.
func (r *Request) Namespace() core.Namespace { return r.ns }

// Tokens returns the request's tokens (prompt and extensions). The slice
// is the request's own; do not modify it. After Finish or Abort it is nil
// (the controller reuses the buffer).
func (r *Request) Tokens() []uint32 { return r.tokens }

// Slots returns one KV slot per computed token, valid until the next
// controller call on this request; nil after Finish or Abort.
func (r *Request) Slots() []int32 { return r.slots }

// CachedLen is the prefix the tree held on the device when the request
// arrived, including what a load-back brought from the host (HostHitLen).
func (r *Request) CachedLen() int { return r.cached }

// HostHitLen is the part of CachedLen that was on the host only and was
// loaded back to the device on arrival (host tier only).
func (r *Request) HostHitLen() int { return r.hostHit }

// ProtectedLen is the prefix whose slots belong to the tree and are locked
// by this request (CachedLen, grown by FinishChunk).
func (r *Request) ProtectedLen() int { return r.protected }

// Computed is the number of tokens that have slots.
func (r *Request) Computed() int { return len(r.slots) }

// Pending is the number of known tokens not computed yet.
func (r *Request) Pending() int { return len(r.tokens) - len(r.slots) }

// Done reports whether the request was finished or aborted.
func (r *Request) Done() bool { return r.done }

// SWAEvictedLen is, in SWA trees, the page-aligned length below which the
// request no longer holds SWA slots for its own positions (they left the
// sliding window and were freed); it is the insert's SWAEvictedSeqlen.
func (r *Request) SWAEvictedLen() int { return r.swaEvicted }

// SWAReleased reports whether the SWA part of the request's lock was
// released early (the request moved a window past its locked prefix).
func (r *Request) SWAReleased() bool { return r.swaReleased }

// MambaSlot is, in Mamba trees, the request's own state slot (forked from
// the cache on arrival, or fresh); -1 otherwise and after Finish or Abort.
func (r *Request) MambaSlot() int32 { return r.mstate }

// alignedAtoms is the page-aligned atom count of n tokens.
func (c *Controller) alignedAtoms(n int) int {
	if c.bigram {
		if n <= 1 {
			return 0
		}
		n--
	}
	return n / c.page * c.page
}

func (c *Controller) usable(r *Request) error {
	if c.closed {
		return fmt.Errorf("%w: controller", ErrClosed)
	}
	if r == nil || r.c != c {
		return fmt.Errorf("%w: request is nil or belongs to another controller", ErrInvalidArgument)
	}
	if r.done {
		return ErrRequestDone
	}
	return nil
}

// Arrive matches tokens against the cache in ns and locks the matched
// prefix. The returned request's Slots are the cached prefix's slots;
// Prefill computes the rest. With a host tier, a prefix that continues in
// host memory is loaded back to the device first (Request.HostHitLen).
// Errors: ErrClosed, ErrCanaryMismatch (VerifyMatches), engine errors.
func (c *Controller) Arrive(ns core.Namespace, tokens []uint32) (*Request, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, fmt.Errorf("%w: controller", ErrClosed)
	}
	r := &Request{c: c, ns: ns, tokens: append(c.spareTokenBuf(len(tokens)), tokens...), mstate: -1}
	m, err := c.eng.Match(c.spareSlotBuf(len(tokens)), ns, tokens)
	if err != nil {
		c.recycle(r.tokens, nil)
		return nil, err
	}
	if err := c.execute(m.Actions); err != nil {
		return nil, err
	}
	if c.ht != nil && m.Best != m.LastDevice {
		// A host hit: load it back and match again.
		if m, r.hostHit, err = c.hostHit(ns, tokens, m); err != nil {
			return nil, err
		}
	}
	r.slots = m.Indices
	if c.cfg.Canary {
		r.hash = canarySeed(ns)
		if c.cfg.VerifyMatches {
			var bad int
			if r.hash, bad, err = c.verifyChain(ns, r.hash, r.tokens, r.slots, c.hy.matchWindow(m.DeviceLen)); bad > 0 {
				if r.hostHit > 0 {
					err = fmt.Errorf("%w (the last %d tokens of the prefix were loaded back from the host)", err, r.hostHit)
				}
				return nil, err
			}
			if c.hy.mamba != nil && m.MambaSlot >= 0 {
				if err := c.verifyState(m.MambaSlot, r.hash, m.DeviceLen); err != nil {
					return nil, err
				}
			}
		} else {
			for _, t := range r.tokens[:len(r.slots)] {
				r.hash = canaryStep(r.hash, t)
			}
		}
	}
	rc, err := c.eng.Lock(m.LastDevice, 0)
	if err != nil {
		return nil, err
	}
	r.last, r.rcpt = m.LastDevice, rc
	r.protected, r.cached = m.DeviceLen, m.DeviceLen
	if c.hy.swa != nil && m.SWABranchingSeqlen > 0 {
		r.swaBranch = m.SWABranchingSeqlen
	}
	if c.hy.mamba != nil && m.MambaBranchingSeqlen > 0 {
		r.mambaBranch = m.MambaBranchingSeqlen
	}
	if c.hy.mamba != nil {
		// The lock protects the state to fork while the pool makes room.
		if err := c.forkState(r, m.MambaSlot); err != nil {
			err = errors.Join(err, c.eng.Unlock(r.last, r.rcpt, false))
			c.recycle(r.tokens, r.slots)
			return nil, err
		}
	}
	c.live++
	c.stats.Requests++
	c.stats.InputTokens += uint64(len(tokens))
	c.stats.MatchedTokens += uint64(m.DeviceLen - r.hostHit)
	return r, nil
}

// Prefill gives fresh slots to the next n uncomputed tokens of r (n =
// r.Pending() computes all), evicting unlocked cache entries when the pool
// is short, and writes their canary records when the canary is on.
// Errors: ErrInvalidArgument, ErrRequestDone, ErrPoolExhausted (not enough
// slots even after evicting everything unlocked; r is unchanged and may be
// retried or aborted).
func (c *Controller) Prefill(r *Request, n int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable(r); err != nil {
		return err
	}
	if n < 0 || n > r.Pending() {
		return fmt.Errorf("%w: prefill of %d tokens, %d pending", ErrInvalidArgument, n, r.Pending())
	}
	return c.computeLocked(r, n)
}

// Extend appends tokens (decoded output) to r and gives fresh slots to
// every uncomputed token, as Prefill(r, r.Pending()) would. On error the
// tokens stay appended but uncomputed.
func (c *Controller) Extend(r *Request, tokens ...uint32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable(r); err != nil {
		return err
	}
	r.tokens = append(r.tokens, tokens...)
	return c.computeLocked(r, r.Pending())
}

func (c *Controller) computeLocked(r *Request, n int) error {
	if n == 0 {
		return nil
	}
	if c.hy.swa != nil {
		if err := c.slideWindow(r); err != nil {
			return err
		}
	}
	start := len(r.slots)
	slots, err := c.allocLocked(r.slots, n)
	if err != nil {
		return err
	}
	r.slots = slots
	c.owned += n
	c.hy.ownedSWA += c.hy.swaN(n)
	c.stats.ComputedTokens += uint64(n)
	if c.cfg.Canary {
		return c.writeComputed(r, start)
	}
	return nil
}

// allocLocked appends n device Full slots to dst, evicting first when the
// pool is short; in SWA trees each new Full slot is mapped to a fresh SWA
// slot. Nothing is evicted when even eviction could not help.
func (c *Controller) allocLocked(dst []int32, n int) ([]int32, error) {
	if err := c.ensure(core.Full, c.kv, n); err != nil {
		return dst, err
	}
	if c.hy.swa == nil {
		return c.kv.Alloc(dst, n)
	}
	if err := c.ensure(core.SWA, c.hy.swa, n); err != nil {
		return dst, err
	}
	return c.hy.allocMapped(c.kv, dst, n)
}

// ensure makes n slots of component comp's device pool p available,
// asking the tree to evict when it is short.
func (c *Controller) ensure(comp core.Component, p Pool, n int) error {
	avail := p.Available()
	if avail >= n {
		return nil
	}
	evictable, err := c.eng.Evictable(comp)
	if err != nil {
		return err
	}
	if avail+evictable < n {
		protected, _ := c.eng.Protected(comp)
		what, owned := "KV", c.owned
		switch comp {
		case core.SWA:
			what, owned = "SWA", c.hy.ownedSWA
		case core.Mamba:
			what, owned = "Mamba state", c.hy.ownedMamba
		}
		return fmt.Errorf("%w: %d %s slots needed, %d free and %d evictable of %d; %d are locked by running requests and %d owned by them",
			ErrPoolExhausted, n, what, avail, evictable, p.Capacity(), protected, owned)
	}
	if c.ht != nil {
		return c.evictSteps(comp, p, n)
	}
	acts, freed, err := c.eng.Evict(comp, n-avail, c.acts[:0])
	if err != nil {
		return err
	}
	for _, a := range acts {
		if a.Kind == core.ActionFreeDeviceSlots && a.Component == core.Full {
			c.stats.EvictedNodes++
		}
	}
	if comp == core.Full {
		c.stats.EvictedTokens += uint64(freed)
	}
	err = c.execute(acts)
	clear(acts)
	c.acts = acts[:0]
	return err
}

// execute runs actions in order. A failing action does not stop the
// rest (their frees would leak); the first error is returned.
func (c *Controller) execute(acts []core.Action) error {
	if c.ht != nil {
		acts = c.ht.stable(acts)
	}
	var first error
	for k := range acts {
		if err := c.executeOne(&acts[k]); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (c *Controller) executeOne(a *core.Action) error {
	switch a.Kind {
	case core.ActionFreeDeviceKV:
		return c.freeKV(a.Slots, true)
	case core.ActionFreeDeviceKVFullOnly:
		return c.freeKV(a.Slots, false)
	case core.ActionFreeDeviceSlots:
		switch a.Component {
		case core.Full:
			return c.freeKV(a.Slots, false)
		case core.SWA:
			if c.hy.swa == nil {
				return fmt.Errorf("%w: %v needs the full-to-SWA slot mapping", ErrNoPool, *a)
			}
			c.stats.SWAEvictedSlots += uint64(len(a.Slots))
			return c.freeSWAOf(a.Slots)
		case core.Mamba:
			if c.hy.mamba == nil {
				return fmt.Errorf("%w: %v: no mamba device pool", ErrNoPool, *a)
			}
			c.stats.MambaEvicted += uint64(len(a.Slots))
			return c.freeSlots(c.hy.mamba, a.Slots)
		}
		return fmt.Errorf("%w: %v: no %s device pool", ErrNoPool, *a, a.Component)
	case core.ActionFreeHostSlots:
		if c.ht != nil {
			return c.freeHost(a)
		}
		p := c.pools.Pool(a.Component, Host)
		if p == nil {
			return fmt.Errorf("%w: %v", ErrHostTier, *a)
		}
		return c.freeSlots(p, a.Slots)
	case core.ActionSWARebuild:
		if c.hy.swa == nil {
			return fmt.Errorf("%w: %v needs the full-to-SWA slot mapping", ErrNoPool, *a)
		}
		return c.hy.checkMapped(a.Slots, "SWARebuild")
	case core.ActionRecoverSWAWithLockedFull:
		if c.hy.swa == nil {
			return fmt.Errorf("%w: %v needs the full-to-SWA slot mapping", ErrNoPool, *a)
		}
		if err := c.hy.remap(a.Slots, a.Incoming); err != nil {
			return err
		}
		return c.freeKV(a.Incoming, false)
	case core.ActionMambaEvictExcessPathStates:
		if c.hy.mamba == nil {
			return fmt.Errorf("%w: %v: no mamba device pool", ErrNoPool, *a)
		}
		acts, err := c.eng.EvictExcessPathStates(a.Node)
		return errors.Join(err, c.execute(acts))
	case core.ActionBackupKV, core.ActionReplaceWriteThroughOnSplit, core.ActionRebuildFullToSWAMapping:
		return c.executeHost(a)
	}
	return fmt.Errorf("%w: %v", ErrUnknownAction, *a)
}

// freeSlots returns slots to p, poisoning the canary first so that a
// stale reference to a freed slot reads as a mismatch.
func (c *Controller) freeSlots(p Pool, slots []int32) error {
	if len(slots) == 0 {
		return nil
	}
	if c.cfg.Canary && (p == c.kv || p == c.hy.swa || p == c.hy.mamba) {
		for _, s := range slots {
			if err := p.Write(s, c.zero[:]); err != nil {
				return err
			}
		}
	}
	if err := p.Free(slots); err != nil {
		return err
	}
	c.stats.FreedSlots += uint64(len(slots))
	return nil
}

// insertLocked inserts tokens[:upto] of r with PrevPrefixLen = r's
// protected prefix, executing every step's actions. clean reports a
// failure that left the tree and the pools untouched.
func (c *Controller) insertLocked(r *Request, upto int, chunked bool, mslot int32) (res core.InsertResult, clean bool, err error) {
	p := core.InsertParams{
		Namespace: r.ns,
		Tokens:    r.tokens[:upto],
		Slots:     r.slots[:upto],
		// With bigram keys the protected prefix can reach one atom past
		// what upto tokens make (its last token not yet computed).
		PrevPrefixLen: min(r.protected, c.alignedAtoms(upto)),
		Chunked:       chunked,
		MambaSlot:     mslot,
	}
	if c.hy.swa != nil {
		p.SWAEvictedSeqlen = r.swaEvicted
		p.SWABranchingSeqlen = r.swaBranch
	}
	step, err := c.eng.BeginInsert(p)
	if err != nil {
		if len(step.Actions) == 0 {
			return res, true, err
		}
		return res, false, errors.Join(err, c.execute(step.Actions))
	}
	for {
		if err := c.execute(step.Actions); err != nil {
			rest, _ := c.eng.EndInsert()
			return res, false, errors.Join(err, c.execute(rest))
		}
		if step.Done {
			return step.Result, true, nil
		}
		if step, err = c.eng.ResumeInsert(); err != nil {
			err = errors.Join(err, c.execute(step.Actions))
			rest, _ := c.eng.EndInsert()
			return res, false, errors.Join(err, c.execute(rest))
		}
	}
}

// abandonLocked ends a request whose insert failed part-way: the slots it
// owned (and its Mamba state) may now belong to the tree, so they are not
// freed; its lock is released.
func (c *Controller) abandonLocked(r *Request) error {
	err := c.eng.Unlock(r.last, r.rcpt, r.swaReleased)
	c.retire(r)
	return err
}

// retire marks r done: the slots it owned past its protected prefix (and
// its Mamba state) have been freed or handed to the tree, and its buffers
// go to later arrivals.
func (c *Controller) retire(r *Request) {
	c.owned -= len(r.slots) - r.protected
	c.hy.ownedSWA -= r.ownSWA()
	if r.mstate >= 0 {
		c.hy.ownedMamba--
		r.mstate = -1
	}
	c.live--
	r.done = true
	c.recycle(r.tokens, r.slots)
	r.tokens, r.slots = nil, nil
}

// Finish caches r: it inserts the page-aligned part of the computed tokens
// with PrevPrefixLen = r.ProtectedLen(), executes every action the insert
// returns (freeing incoming slots the tree already holds), frees the
// slots of the ragged tail past the last whole page, and releases r's
// lock. r is done afterwards.
//
// In SWA trees the insert is told how far r dropped SWA slots
// (SWAEvictedLen). In Mamba trees the inserted part ends on the last
// state checkpoint (a multiple of lcm(MambaChunkSize, PageSize)), r's
// state is donated for it (and freed when the tree already holds one),
// and a prefix where r's match stopped short of a state is cached with a
// state first.
// Errors: ErrRequestDone, engine and pool errors. A failure before the
// tree changed leaves r running (Abort it); a later one ends r.
func (c *Controller) Finish(r *Request) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable(r); err != nil {
		return err
	}
	computed := len(r.slots)
	if err := c.cacheMambaBranch(r); err != nil {
		return err
	}
	upto, mslot, moved := computed, int32(-1), false
	if c.hy.mamba != nil {
		// Only a prefix that ends on a state checkpoint can be cached.
		n := max(c.hy.mambaAtoms(c, computed), r.protected)
		upto, mslot = c.tokensFor(n), r.mstate
		var err error
		if moved, err = c.checkpointState(r, n); err != nil {
			return err
		}
	}
	res, clean, err := c.insertLocked(r, upto, false, mslot)
	if err != nil {
		if clean {
			if moved {
				_ = c.putState(mslot, r.hash, computed) // back to the running state
			}
			return err
		}
		return errors.Join(err, c.abandonLocked(r))
	}
	if mslot >= 0 {
		err = c.settleDonation(mslot, res)
		r.mstate = -1
	}
	// The tree owns [0, protected) even where the insert stopped short.
	err = errors.Join(err, c.freeOwned(r, max(res.TotalLen, r.protected), computed))
	err = errors.Join(err, c.eng.Unlock(r.last, r.rcpt, r.swaReleased))
	c.retire(r)
	c.stats.Finished++
	return err
}

// FinishChunk caches the first upto computed tokens of a request that
// keeps running (chunked prefill): it inserts their page-aligned part with
// Chunked set, matches it again, takes the tree's slots for that prefix
// into r, moves r's lock to the new last node and makes the prefix r's
// protected prefix. Tokens past the aligned part keep their own slots.
// When upto adds no whole page beyond the protected prefix nothing
// happens, nor in Mamba trees under the marconi policy, which checkpoint
// states only at branch points and at Finish. In Mamba trees the chunk ends on the last state checkpoint
// before upto and the tree gets a copy of the state there; in SWA trees a
// chunk must end a whole window past the positions r dropped SWA slots
// for (ErrInvalidArgument otherwise), or its re-match could not reach it.
// Errors: ErrInvalidArgument (upto outside [0, Computed], or the SWA
// window as above), ErrRequestDone, engine and pool errors (as Finish).
func (c *Controller) FinishChunk(r *Request, upto int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable(r); err != nil {
		return err
	}
	if upto < 0 || upto > len(r.slots) {
		return fmt.Errorf("%w: chunk end %d outside the %d computed tokens", ErrInvalidArgument, upto, len(r.slots))
	}
	if c.hy.marconi {
		c.stats.MambaChunksSkipped++
		return nil
	}
	return c.finishChunkLocked(r, upto)
}

// finishChunkLocked is FinishChunk with c.mu held and upto checked.
func (c *Controller) finishChunkLocked(r *Request, upto int) error {
	want := c.alignedAtoms(upto)
	if c.hy.mamba != nil {
		want = c.hy.mambaAtoms(c, upto)
		upto = c.tokensFor(want)
	}
	if want <= r.protected {
		return nil
	}
	if err := c.hy.checkChunkWindow(r, want); err != nil {
		return err
	}
	mslot := int32(-1)
	if c.hy.mamba != nil {
		// The tree gets a copy of the state at the chunk's end; the
		// request keeps running on its own.
		var err error
		if mslot, err = c.snapshotState(r, want); err != nil {
			return err
		}
	}
	res, clean, err := c.insertLocked(r, upto, true, mslot)
	if err != nil {
		if clean {
			if mslot >= 0 {
				err = errors.Join(err, c.dropState(mslot))
			}
			return err
		}
		return errors.Join(err, c.abandonLocked(r))
	}
	if mslot >= 0 {
		if err := c.settleDonation(mslot, res); err != nil {
			return errors.Join(err, c.abandonLocked(r))
		}
	}
	a := res.TotalLen
	m, err := c.eng.Match(c.matchBuf[:0], r.ns, r.tokens[:upto])
	c.matchBuf = m.Indices[:0]
	if err == nil {
		err = c.execute(m.Actions)
	}
	if err == nil && m.DeviceLen != a {
		err = fmt.Errorf("native: internal: re-match after a chunk insert of %d atoms found %d", a, m.DeviceLen)
	}
	if err != nil {
		return errors.Join(err, c.abandonLocked(r))
	}
	// The tree now owns [protected, a): adopted slots stay, duplicates
	// were freed and are replaced by the tree's own.
	copy(r.slots[r.protected:a], m.Indices[r.protected:a])
	rc, err := c.eng.Lock(m.LastDevice, 0)
	if err != nil {
		return errors.Join(err, c.abandonLocked(r))
	}
	if err := c.eng.Unlock(r.last, r.rcpt, r.swaReleased); err != nil {
		r.last, r.rcpt, r.swaReleased = m.LastDevice, rc, false
		return errors.Join(err, c.abandonLocked(r))
	}
	c.owned -= a - r.protected
	c.hy.ownedSWA -= r.ownSWA()
	r.protected, r.last, r.rcpt, r.swaReleased = a, m.LastDevice, rc, false
	c.hy.ownedSWA += r.ownSWA()
	c.stats.ChunkFinishes++
	if c.cfg.VerifyMatches {
		h, bad, err := c.verifyChain(r.ns, canarySeed(r.ns), r.tokens, r.slots[:a], c.hy.matchWindow(a))
		if bad > 0 {
			return err
		}
		if c.hy.mamba != nil && m.MambaSlot >= 0 {
			return c.verifyState(m.MambaSlot, h, a)
		}
	}
	return nil
}

// Abort ends r without caching it: its own slots go back to the pool and
// its lock is released. r is done afterwards.
// Errors: ErrRequestDone, engine and pool errors.
func (c *Controller) Abort(r *Request) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable(r); err != nil {
		return err
	}
	err := c.freeOwned(r, r.protected, len(r.slots))
	if r.mstate >= 0 {
		err = errors.Join(err, c.dropState(r.mstate))
		r.mstate = -1
	}
	err = errors.Join(err, c.eng.Unlock(r.last, r.rcpt, r.swaReleased))
	c.retire(r)
	c.stats.Aborted++
	return err
}

const maxSpare = 64

func (c *Controller) spareTokenBuf(n int) []uint32 { return popSpare(&c.spareTokens, n) }
func (c *Controller) spareSlotBuf(n int) []int32   { return popSpare(&c.spareSlots, n) }

// recycle keeps a finished request's buffers for later arrivals.
func (c *Controller) recycle(tokens []uint32, slots []int32) {
	pushSpare(&c.spareTokens, tokens)
	pushSpare(&c.spareSlots, slots)
}

// popSpare returns an empty buffer from the spares, or a new one with
// room for n.
func popSpare[T any](spares *[][]T, n int) []T {
	s := *spares
	if k := len(s); k > 0 {
		b := s[k-1]
		s[k-1] = nil
		*spares = s[:k-1]
		return b
	}
	return make([]T, 0, n)
}

// pushSpare keeps b (emptied) for reuse, up to maxSpare buffers.
func pushSpare[T any](spares *[][]T, b []T) {
	if b != nil && len(*spares) < maxSpare {
		*spares = append(*spares, b[:0])
	}
}

// Verify checks that every computed slot of r holds the canary record of
// r's prefix up to that token.
// Errors: ErrInvalidArgument (canary off), ErrCanaryMismatch.
func (c *Controller) Verify(r *Request) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable(r); err != nil {
		return err
	}
	if !c.cfg.Canary {
		return fmt.Errorf("%w: the canary is off", ErrInvalidArgument)
	}
	h, _, err := c.verifyChain(r.ns, canarySeed(r.ns), r.tokens, r.slots, c.hy.requestWindow(r))
	if err == nil && r.mstate >= 0 {
		err = c.verifyState(r.mstate, h, len(r.slots))
	}
	return err
}

// VerifyMatch checks that slots[i] holds the canary record of
// tokens[:i+1] in ns for every i < len(slots), e.g. the Indices of a
// match. In SWA trees the SWA slots the last window of slots map to must
// hold the same records (what a match promises).
// Errors: ErrInvalidArgument (canary off, more slots than tokens),
// ErrCanaryMismatch.
func (c *Controller) VerifyMatch(ns core.Namespace, tokens []uint32, slots []int32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return fmt.Errorf("%w: controller", ErrClosed)
	}
	if !c.cfg.Canary {
		return fmt.Errorf("%w: the canary is off", ErrInvalidArgument)
	}
	if len(slots) > len(tokens) {
		return fmt.Errorf("%w: %d slots for %d tokens", ErrInvalidArgument, len(slots), len(tokens))
	}
	_, _, err := c.verifyChain(ns, canarySeed(ns), tokens, slots, c.hy.matchWindow(len(slots)))
	return err
}

// Match looks tokens up in ns without locking, for inspection and tests:
// it returns the cached prefix's slots (appended to dst) and length.
func (c *Controller) Match(dst []int32, ns core.Namespace, tokens []uint32) ([]int32, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return dst, fmt.Errorf("%w: controller", ErrClosed)
	}
	m, err := c.eng.Match(dst, ns, tokens)
	if err != nil {
		return dst, err
	}
	return m.Indices, c.execute(m.Actions)
}

// Audit runs the engine's sanity check and verifies that every slot of
// the Full device pool is accounted for: free in the pool, cached in the
// tree (evictable or protected) or owned by a running request. In hybrid
// trees it does the same for the SWA and Mamba pools, checks that the
// Full→SWA mapping names each allocated SWA slot exactly once, and, with
// the canary, that every mapped pair holds the same record (a wrong remap
// or free shows up here). With a host tier it checks that each host pool's
// free slots and those the tree holds make up its capacity and, with the
// canary, that no held host slot lost its record.
// Errors: ErrAccounting, ErrSWAMapping, ErrCanaryMismatch, core.ErrSanity.
func (c *Controller) Audit() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return fmt.Errorf("%w: controller", ErrClosed)
	}
	if err := c.eng.SanityCheck(); err != nil {
		return err
	}
	if err := c.auditCount(core.Full, c.kv, c.owned, ""); err != nil {
		return err
	}
	if err := c.auditHybrid(); err != nil {
		return err
	}
	return c.auditHost()
}

// auditCount checks that p's free slots and comp's evictable, protected
// and request-owned ones add up to p's capacity: the Full, SWA and Mamba
// pools keep the same count. what names the pool in the error ("" for Full).
func (c *Controller) auditCount(comp core.Component, p Pool, owned int, what string) error {
	ev, err := c.eng.Evictable(comp)
	if err != nil {
		return err
	}
	pr, err := c.eng.Protected(comp)
	if err != nil {
		return err
	}
	if avail, capa := p.Available(), p.Capacity(); avail+ev+pr+owned != capa {
		return fmt.Errorf("%w: %s%d free + %d evictable + %d protected + %d owned by %d running requests = %d, capacity %d",
			ErrAccounting, what, avail, ev, pr, owned, c.live, avail+ev+pr+owned, capa)
	}
	return nil
}

// TakeEvents drains the engine's KV cache events (see Engine.TakeEvents)
// under the controller's mutex, appending them to dst. Events are recorded
// only when the engine was created with core.Config.KVEvents; the queue
// grows until drained, so call it regularly (e.g. once per scheduling
// step) and forward the events. Unlike the engine's, the events it returns
// are the caller's own: their slices are copied under the mutex, since
// other goroutines may call into the engine as soon as it is released.
func (c *Controller) TakeEvents(dst []core.Event) ([]core.Event, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return dst, fmt.Errorf("%w: controller", ErrClosed)
	}
	n := len(dst)
	dst, err := c.eng.TakeEvents(dst)
	for i := n; i < len(dst); i++ {
		e := &dst[i]
		e.BlockHashes, e.TokenIDs = slices.Clone(e.BlockHashes), slices.Clone(e.TokenIDs)
	}
	return dst, err
}

// Stats returns a snapshot of the counters.
func (c *Controller) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// Engine returns the controller's engine. Calls on it must not race with
// the controller's own; use it while no other goroutine uses the
// controller (tests, tools).
func (c *Controller) Engine() Engine { return c.eng }

// Close closes the engine and the pools. Running requests are abandoned.
func (c *Controller) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	return errors.Join(c.eng.Close(), c.pools.Close())
}
