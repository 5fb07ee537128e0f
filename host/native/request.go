package native

import (
	"errors"
	"fmt"

	"github.com/radixkv/radixkv/core"
)

// This file is the request lifecycle: Arrive, Prefill/Extend, Finish,
// FinishChunk and Abort, and the slot ownership of a running request
// (what it holds, what goes to the tree, what it frees).

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
	hash      uint32 // canary chain over tokens[:len(slots)]
	// spare slots follow slots in its backing array: the unused rest of
	// the last page a paged pool gave it (0 with slot pools).
	spare int
	// load is the load-back in flight of a loading request (nil when
	// none); firstLen is the device hit of the match that started it.
	load     *loadJob
	firstLen int
	done     bool
	lent     bool   // tokens is the caller's buffer (ArriveBorrowing), never recycled
	gen      uint64 // the controller's engine generation at arrival
	// ticket names the arrival's match on a wire engine (keptMatcher),
	// which keeps no copy of it: the controller vouches that tokens and
	// slots start with what that match had, and it does, since it never
	// rewrites a running request's prefix (tokens are only appended to,
	// slots only grow past the match). It is cleared when that stops
	// holding (FinishChunk rewrites slots past the protected prefix after
	// its own match); 0: none.
	ticket matchTicket

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
	ckHash uint32
}

// Namespace returns the request's namespace.
func (r *Request) Namespace() core.Namespace { return r.ns }

// Tokens returns the request's tokens (prompt and extensions). The slice
// is the request's own; do not modify it. After Finish or Abort it is nil
// (the controller reuses the buffer).
func (r *Request) Tokens() []uint32 { return r.tokens }

// Slots returns one KV slot per computed token, valid until the next
// controller call on this request; nil after Finish or Abort. The slice
// is the request's own; do not modify it (its cached prefix is the
// tree's, and Finish inserts the rest from it).
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

// Loading reports whether the request's load-back from the host is still
// in flight: its Slots and CachedLen are not known yet, and its next call
// (or Controller.Await) waits for the copy.
func (r *Request) Loading() bool { return r.load != nil }

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

// ready is usable, then poll: a lifecycle call's first step, which also
// completes the transfers that finished meanwhile and retries kept frees.
func (c *Controller) ready(r *Request) error {
	if err := c.usable(r); err != nil {
		return err
	}
	return c.poll()
}

// usable checks that the controller is open and r is one of its running
// requests (not done, and not from before an engine replacement).
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
	if r.gen != c.gen {
		// Its engine failed and was replaced: everything it held went
		// back to the pools with the old tree.
		r.done, r.load, r.tokens, r.slots, r.mstate = true, nil, nil, nil, -1
		c.stats.RequestsLost++
		return fmt.Errorf("%w (the engine was replaced after a failure)", ErrEngineReplaced)
	}
	if r.load != nil {
		// Its load-back is in flight: wait for it and finish arriving.
		return c.awaitLoad(r)
	}
	return nil
}

// Arrive matches tokens against the cache in ns and locks the matched
// prefix. The returned request's Slots are the cached prefix's slots;
// Prefill computes the rest. With a host tier, a prefix that continues in
// host memory is loaded back to the device first (Request.HostHitLen).
// Errors: ErrClosed, ErrCanaryMismatch (VerifyMatches), engine errors.
func (c *Controller) Arrive(ns core.Namespace, tokens []uint32) (*Request, error) {
	return c.ArriveReusing(nil, ns, tokens)
}

// ArriveReusing is Arrive that recycles old, a request of this controller
// that is done (finished or aborted), for the new request instead of
// allocating one: a serving loop that keeps one Request per slot of its
// batch allocates nothing per request. old must no longer be used under
// its former identity; nil is Arrive.
// Errors: those of Arrive, ErrInvalidArgument (old is not a done request
// of this controller).
func (c *Controller) ArriveReusing(old *Request, ns core.Namespace, tokens []uint32) (*Request, error) {
	return c.arrive(old, ns, tokens, false)
}

// ArriveBorrowing is ArriveReusing without the copy of tokens: the
// request reads the caller's buffer in place, for a caller that leaves
// tokens[:len(tokens)] unchanged until the request is done (Finish,
// Abort, or the arrival's own error) — a serving loop whose token
// buffers are per request, or a trace replay. The controller never
// writes into the buffer or the capacity beyond it (Extend first moves
// the tokens into a buffer of its own), never keeps it for later
// requests, and drops it when the request is done; Tokens returns it.
// The copy it saves costs a read and a write of every input token
// (RATIONALE.md, "Where the direct engine's time went").
// Errors: those of ArriveReusing.
func (c *Controller) ArriveBorrowing(old *Request, ns core.Namespace, tokens []uint32) (*Request, error) {
	return c.arrive(old, ns, tokens, true)
}

func (c *Controller) arrive(old *Request, ns core.Namespace, tokens []uint32, lent bool) (*Request, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, fmt.Errorf("%w: controller", ErrClosed)
	}
	if old != nil && (old.c != c || !old.done) {
		return nil, fmt.Errorf("%w: only a finished or aborted request of this controller can be reused", ErrInvalidArgument)
	}
	if err := c.poll(); err != nil {
		return nil, err
	}
	r := old
	if r == nil {
		r = &Request{}
	}
	*r = Request{c: c, gen: c.gen, ns: ns, mstate: -1, lent: lent}
	if lent {
		r.tokens = tokens[:len(tokens):len(tokens)]
	} else {
		r.tokens = append(c.spareTokenBuf(len(tokens)), tokens...)
	}
	if ml, ok := c.eng.(MatchLocker); ok && c.ht == nil {
		// No host tier, so no load-back between the match and its lock:
		// both in one engine call.
		if err := c.arriveLocked(r, ml); err != nil {
			return nil, err
		}
		c.admitted(r)
		return r, nil
	}
	m, err := c.eng.Match(c.spareSlotBuf(len(tokens)), ns, tokens)
	if err != nil {
		c.recycle(r, nil)
		return nil, err
	}
	if err := c.execute(m.Actions); err != nil {
		c.recycle(r, m.Indices)
		return nil, err
	}
	hostHit := 0
	if c.ht != nil && m.Best != m.LastDevice {
		// A host hit: load it back and match again.
		j, loaded, err := c.startLoadBack(m.Best)
		if err != nil {
			c.recycle(r, m.Indices)
			return nil, err
		}
		if j != nil {
			// Still in flight: the request waits for it on its next call
			// (Await), matching again then.
			r.load, r.firstLen = j, m.DeviceLen
			c.recycle(nil, m.Indices)
			c.admitted(r)
			return r, nil
		}
		// Match again even when nothing was loaded: making room for the
		// load-back may have evicted part of the first match (the lock
		// on Best keeps its Full path, not the SWA window of the shorter
		// device match) before the load-back was skipped or its copy
		// failed. Found by internal/simulate (seed 5, failing transfers,
		// full,swa, write-through): the stale match's window named Full
		// slots whose SWA side had been evicted, a canary mismatch.
		first := m.DeviceLen
		if m, err = c.eng.Match(m.Indices[:0], ns, tokens); err == nil {
			err = c.execute(m.Actions)
		}
		if err != nil {
			c.recycle(r, m.Indices)
			return nil, err
		}
		if loaded {
			hostHit = max(m.DeviceLen-first, 0)
			c.stats.HostHitTokens += uint64(hostHit)
		}
	}
	if err := c.arriveMatched(r, m, hostHit, nil); err != nil {
		c.recycle(r, r.slots)
		r.tokens, r.slots = nil, nil
		return nil, err
	}
	c.admitted(r)
	return r, nil
}

// admitted counts r, which has arrived, as live and in the statistics.
func (c *Controller) admitted(r *Request) {
	c.live++
	c.stats.Requests++
	c.stats.InputTokens += uint64(len(r.tokens))
}

// arriveLocked is Arrive's match and lock through one MatchLock call
// (an engine without a host tier). The host runs the match's actions
// after the lock instead of before it: they only free pool slots, which
// no lock protects. On error nothing is locked and r's buffers are
// recycled.
func (c *Controller) arriveLocked(r *Request, ml MatchLocker) error {
	var m core.MatchResult
	var rc core.Receipt
	var err error
	if km, ok := c.eng.(keptMatcher); ok {
		m, rc, r.ticket, err = km.matchLockKept(c.spareSlotBuf(len(r.tokens)), r.ns, r.tokens, 0)
	} else {
		m, rc, err = ml.MatchLock(c.spareSlotBuf(len(r.tokens)), r.ns, r.tokens, 0)
	}
	if err != nil {
		// A failed lock leaves the match standing, and its actions due.
		err = errors.Join(err, c.execute(m.Actions))
		c.recycle(r, nil)
		return err
	}
	if err := c.execute(m.Actions); err != nil {
		err = errors.Join(err, c.eng.Unlock(m.LastDevice, rc, false))
		c.recycle(r, m.Indices)
		return err
	}
	if err := c.arriveMatched(r, m, 0, &rc); err != nil {
		c.recycle(r, r.slots)
		r.tokens, r.slots = nil, nil
		return err
	}
	return nil
}

// arriveMatched completes an arrival on its final match m (hostHit of
// whose tokens a load-back brought): the request takes the matched
// slots, verifies them (VerifyMatches), locks the match (unless locked
// is its receipt already) and forks its Mamba state. On error nothing
// is locked.
func (c *Controller) arriveMatched(r *Request, m core.MatchResult, hostHit int, locked *core.Receipt) error {
	ns := r.ns
	unlockOnErr := func(err error) error {
		if locked != nil {
			err = errors.Join(err, c.eng.Unlock(m.LastDevice, *locked, false))
		}
		return err
	}
	r.hostHit = hostHit
	r.slots = m.Indices
	var err error
	if c.cfg.Canary {
		r.hash = canarySeed(ns)
		if c.cfg.VerifyMatches {
			if r.hash, _, err = c.verifyChain(ns, r.hash, r.tokens, r.slots, c.hy.matchWindow(m.DeviceLen)); err != nil {
				if r.hostHit > 0 {
					err = fmt.Errorf("%w (the last %d tokens of the prefix were loaded back from the host)", err, r.hostHit)
				}
				return unlockOnErr(err)
			}
			if c.hy.mamba != nil && m.MambaSlot >= 0 {
				if err := c.verifyState(m.MambaSlot, r.hash, m.DeviceLen); err != nil {
					return unlockOnErr(err)
				}
			}
		} else {
			r.hash = canaryChain(r.hash, r.tokens[:len(r.slots)], 0)
		}
	}
	var rc core.Receipt
	if locked != nil {
		rc = *locked
	} else if rc, err = c.eng.Lock(m.LastDevice, 0); err != nil {
		return err
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
			return errors.Join(err, c.eng.Unlock(r.last, r.rcpt, false))
		}
	}
	c.stats.MatchedTokens += uint64(m.DeviceLen - r.hostHit)
	return nil
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
	if err := c.ready(r); err != nil {
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
	if err := c.ready(r); err != nil {
		return err
	}
	if r.lent {
		// The caller's buffer is only read: append in one of ours.
		r.tokens, r.lent = append(c.spareTokenBuf(len(r.tokens)+len(tokens)), r.tokens...), false
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
	var slots []int32
	var err error
	took := n
	if c.paged != nil {
		slots, took, err = c.allocPaged(r, n)
	} else {
		slots, err = c.allocLocked(r.slots, n)
	}
	if err != nil {
		return err
	}
	r.slots = slots
	r.spare += took - n
	c.owned += took
	c.hy.ownedSWA += c.hy.swaN(n)
	c.stats.ComputedTokens += uint64(n)
	if c.cfg.Canary {
		hash, ckLen, ckHash := r.hash, r.ckLen, r.ckHash
		if err := c.writeComputed(r, start); err != nil {
			// A record that could not be written: the tokens were not
			// computed after all. Undo, so that nothing unwritten is ever
			// cached (a later Finish caches only what was written).
			r.hash, r.ckLen, r.ckHash = hash, ckLen, ckHash
			ferr := c.freeKV(r.slots[start:start+n+r.spare], true)
			r.slots = r.slots[:start]
			c.owned -= n + r.spare
			r.spare = 0
			c.hy.ownedSWA -= c.hy.swaN(n)
			c.stats.ComputedTokens -= uint64(n)
			return errors.Join(err, ferr)
		}
	}
	return nil
}

// insertOutcome says how far a failed insert got.
type insertOutcome uint8

const (
	insertUntouched insertOutcome = iota // the tree and the pools did not change
	insertDone                           // the insert completed; only some of its actions failed
	insertBroken                         // the insert stopped part-way: ownership is unknown
)

// insertLocked inserts tokens[:upto] of r with PrevPrefixLen = r's
// protected prefix, executing every step's actions. On error, out says
// how far it got; res is valid when out is insertDone.
func (c *Controller) insertLocked(r *Request, upto int, chunked bool, mslot int32) (core.InsertResult, insertOutcome, error) {
	p := c.insertParams(r, upto, chunked, mslot)
	var step core.InsertStep
	var err error
	if km, ok := c.eng.(keptMatcher); ok {
		step, err = km.beginInsertKept(p, r.ticket)
	} else {
		step, err = c.eng.BeginInsert(p)
	}
	return c.insertSteps(step, err)
}

// insertParams are the parameters of the insert of r's first upto tokens.
func (c *Controller) insertParams(r *Request, upto int, chunked bool, mslot int32) core.InsertParams {
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
	return p
}

// insertSteps runs an insert on from its first step (and that step's
// error), executing each step's actions and resuming until it is done.
func (c *Controller) insertSteps(step core.InsertStep, err error) (res core.InsertResult, out insertOutcome, _ error) {
	if err != nil {
		if len(step.Actions) == 0 {
			return res, insertUntouched, err
		}
		return res, insertBroken, errors.Join(err, c.execute(step.Actions))
	}
	for {
		aerr := c.execute(step.Actions)
		if step.Done {
			// The tree holds the insert whatever its actions did.
			return step.Result, insertDone, aerr
		}
		if aerr != nil {
			rest, _ := c.eng.EndInsert()
			return res, insertBroken, errors.Join(aerr, c.execute(rest))
		}
		if step, err = c.eng.ResumeInsert(); err != nil {
			err = errors.Join(err, c.execute(step.Actions))
			rest, _ := c.eng.EndInsert()
			return res, insertBroken, errors.Join(err, c.execute(rest))
		}
	}
}

// abandonLocked ends a request whose insert failed part-way: the slots it
// owned (and its Mamba state) may now belong to the tree, so they are not
// freed; its lock is released.
func (c *Controller) abandonLocked(r *Request) error {
	err := c.eng.Unlock(r.last, r.rcpt, r.swaReleased)
	if n := len(r.slots); r.spare > 0 {
		// The unused rest of its last page is surely its own.
		err = errors.Join(err, c.freeSlots(c.kv, r.slots[n:n+r.spare]))
	}
	c.retire(r)
	return err
}

// retire marks r done: the slots it owned past its protected prefix (and
// its Mamba state) have been freed or handed to the tree, and its buffers
// go to later arrivals.
func (c *Controller) retire(r *Request) {
	c.owned -= len(r.slots) - r.protected + r.spare
	r.spare = 0
	c.hy.ownedSWA -= r.ownSWA()
	if r.mstate >= 0 {
		c.hy.ownedMamba--
		r.mstate = -1
	}
	c.live--
	r.done = true
	c.recycle(r, r.slots)
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
	if err := c.ready(r); err != nil {
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
	var res core.InsertResult
	var out insertOutcome
	var err, unlockErr error
	unlocked := false
	if iu, ok := c.eng.(InsertUnlocker); ok && c.ht == nil && c.hy.mamba == nil {
		// The insert and the unlock in one engine call: between them
		// the host only runs pool frees, which no lock concerns.
		var step core.InsertStep
		p := c.insertParams(r, upto, false, mslot)
		if km, ok := c.eng.(keptMatcher); ok {
			step, unlocked, unlockErr, err = km.beginInsertUnlockKept(p, r.ticket, r.last, r.rcpt, r.swaReleased)
		} else {
			step, unlocked, unlockErr, err = iu.BeginInsertUnlock(p, r.last, r.rcpt, r.swaReleased)
		}
		res, out, err = c.insertSteps(step, err)
	} else {
		res, out, err = c.insertLocked(r, upto, false, mslot)
	}
	switch {
	case err != nil && out == insertUntouched:
		if moved {
			_ = c.putState(mslot, r.hash, computed) // back to the running state
		}
		return err
	case err != nil && out == insertBroken:
		return errors.Join(err, c.abandonLocked(r))
	}
	if mslot >= 0 {
		err = errors.Join(err, c.settleDonation(mslot, res))
		r.mstate = -1
	}
	// The tree owns [0, protected) even where the insert stopped short.
	err = errors.Join(err, c.freeOwned(r, max(res.TotalLen, r.protected), computed))
	if !unlocked {
		unlockErr = c.eng.Unlock(r.last, r.rcpt, r.swaReleased)
	}
	err = errors.Join(err, unlockErr)
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
// states only at branch points and at Finish. In Mamba trees the chunk
// ends on the last state checkpoint
// before upto and the tree gets a copy of the state there; in SWA trees a
// chunk must end a whole window past the positions r dropped SWA slots
// for (ErrInvalidArgument otherwise), or its re-match could not reach it.
// Errors: ErrInvalidArgument (upto outside [0, Computed], or the SWA
// window as above), ErrRequestDone, engine and pool errors (as Finish).
func (c *Controller) FinishChunk(r *Request, upto int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.ready(r); err != nil {
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
	res, out, err := c.insertLocked(r, upto, true, mslot)
	switch {
	case err != nil && out == insertUntouched:
		if mslot >= 0 {
			err = errors.Join(err, c.dropState(mslot))
		}
		return err
	case err != nil && out == insertBroken:
		return errors.Join(err, c.abandonLocked(r))
	}
	// A completed insert whose actions partly failed goes on: the tree
	// holds the chunk, and the error is returned at the end. From here
	// on r's slots change past its protected prefix and the engine
	// matches again: r no longer vouches for its arrival's match.
	r.ticket = 0
	ierr := err
	if mslot >= 0 {
		if err := c.settleDonation(mslot, res); err != nil {
			return errors.Join(ierr, err, c.abandonLocked(r))
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
		if bad > 0 || err != nil {
			return errors.Join(ierr, err)
		}
		if c.hy.mamba != nil && m.MambaSlot >= 0 {
			return errors.Join(ierr, c.verifyState(m.MambaSlot, h, a))
		}
	}
	return ierr
}

// Abort ends r without caching it: its own slots go back to the pool and
// its lock is released. r is done afterwards.
// Errors: ErrRequestDone, engine and pool errors.
func (c *Controller) Abort(r *Request) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r != nil && r.c == c && !r.done && r.gen == c.gen && r.load != nil && !c.closed {
		// In the middle of its load-back: roll that back, nothing else
		// is the request's yet.
		j := r.load
		r.load = nil
		err := c.abandonLoad(j)
		c.live--
		r.done = true
		c.recycle(r, nil)
		r.tokens = nil
		c.stats.Aborted++
		return err
	}
	if err := c.usable(r); err != nil {
		return err
	}
	// Abort always ends r, whatever the poll reports.
	perr := c.poll()
	err := errors.Join(perr, c.freeOwned(r, r.protected, len(r.slots)))
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

// recycle keeps a finished request's buffers for later arrivals: its
// tokens unless they are the caller's (ArriveBorrowing), and slots (r may
// be nil: slots only).
func (c *Controller) recycle(r *Request, slots []int32) {
	if r != nil && !r.lent {
		pushSpare(&c.spareTokens, r.tokens)
	}
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
