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
	// AsyncLoadBack lets Arrive return while the load-back of a host hit
	// is still in flight (Request.Loading): the caller then calls Await
	// (or any lifecycle call, which awaits first) before it reads the
	// request's Slots, CachedLen or Pending. Off, Arrive waits for the
	// copy itself.
	AsyncLoadBack bool
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

	// Transfers and pool faults (see Transport and the Pool contract).
	Transfers       uint64 // batches started through the transport
	TransfersQueued uint64 // backup batches still in flight when the call that started them returned
	BackupsFailed   uint64 // backups rolled back: the host Alloc, the transport or the copy failed
	BackupsStale    uint64 // backups rolled back because the tree changed while the copy was in flight
	LoadBacksFailed uint64 // load-backs abandoned: the device Alloc, the transport or the copy failed
	FreeRetries     uint64 // pool Frees that failed and were kept for a retry

	// Engine replacements (ReplaceEngine after a guest trap).
	EngineReplacements uint64 // failed engines replaced by fresh ones
	RequestsLost       uint64 // running requests failed with ErrEngineReplaced
	SlotsReclaimed     uint64 // slots (all pools) that went back with a lost tree
	PoisonFailures     uint64 // canary poison records that could not be written before a free
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
	kv     Pool      // the device Full pool
	paged  PagedPool // kv, when it allocates pages of the tree's page size (and the tree has no SWA)
	cfg    ControllerConfig
	page   int
	bigram bool
	closed bool

	owned int    // slots held by running requests outside the tree
	live  int    // running requests
	gen   uint64 // engine generation: ReplaceEngine counts up; a request of another is lost
	stats Stats

	hy hybrid    // SWA and Mamba pools and accounting; zero for {full}
	ht *hostTier // host pools and accounting; nil without a host tier

	xfer     transfers      // batches in flight
	deferred []deferredFree // frees that failed, retried by later calls

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
	c.xfer.tr = transportOf(pools)
	if err := c.hy.init(ecfg, pools, kv, cfg.Canary); err != nil {
		return nil, err
	}
	if pp, ok := kv.(PagedPool); ok && c.page > 1 && pp.PageSize() == c.page && c.hy.swa == nil {
		c.paged = pp
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
	owned += c.deferredIn(p) + c.xfer.taken(p)
	if avail, capa := p.Available(), p.Capacity(); avail+ev+pr+owned != capa {
		return fmt.Errorf("%w: %s%d free + %d evictable + %d protected + %d owned by %d running requests, failed frees and transfers = %d, capacity %d",
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

// Poll finishes the transfers whose batches completed (committing the
// backups they made, rolling back those that failed) and retries the
// pool frees that failed. Every lifecycle call polls first; call Poll
// from an idle scheduler loop so that completed write-throughs reach the
// tree without waiting for the next request.
// Errors: ErrClosed, engine errors of the commits.
func (c *Controller) Poll() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return fmt.Errorf("%w: controller", ErrClosed)
	}
	return c.poll()
}

// Drain waits for every transfer in flight and finishes it, then retries
// the failed frees: afterwards nothing is in flight (InFlight is 0).
// Errors: ErrClosed, engine errors of the commits.
func (c *Controller) Drain() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return fmt.Errorf("%w: controller", ErrClosed)
	}
	err := c.drain()
	c.retryFrees()
	return err
}

// InFlight returns the number of batches started and not finished yet:
// backups in the queue and the load-backs of loading requests.
func (c *Controller) InFlight() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.xfer.jobs) + len(c.xfer.loads)
}

// poll is Poll with c.mu held; it costs two length checks when nothing
// is in flight and no free failed.
func (c *Controller) poll() error {
	var err error
	if len(c.xfer.jobs) > 0 {
		err = c.pollTransfers()
	}
	if len(c.deferred) > 0 {
		c.retryFrees()
	}
	return err
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
	// No batch may still write into the pools once they are closed.
	c.xfer.waitAll()
	c.closed = true
	return errors.Join(c.eng.Close(), c.pools.Close())
}
