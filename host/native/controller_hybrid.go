package native

import (
	"errors"
	"fmt"
	"strings"

	"github.com/radixkv/radixkv/core"
)

// ErrSWAMapping reports a broken Full→SWA slot mapping: an action or a
// request names a Full slot whose SWA side is missing (or still present
// where the action says it is gone), or two Full slots share an SWA slot.
var ErrSWAMapping = errors.New("native: full-to-SWA slot mapping broken")

// hybrid is the controller's state for the auxiliary components of a
// hybrid tree. It is the zero value for {full}, and every hybrid branch of
// the controller tests swa or mamba for nil first.
//
// SWA: the tree keeps SWA values in the node's Full slots, so the host maps
// each Full slot to an SWA slot. Fresh Full slots get a fresh SWA slot
// (allocMapped); a request drops the SWA side of positions that leave its
// sliding window; the tree's actions free, check and move mappings.
//
// Mamba: one state slot per request, forked from the cached state its
// match ends on (a copy: the tree's state stays as it was) or fresh, and
// donated to the tree on Finish (a copy at the chunk end on FinishChunk).
type hybrid struct {
	swa      Pool
	window   int     // SWA window in atoms
	winPages int     // the window rounded up to whole pages
	swaOf    []int32 // Full slot → SWA slot, -1 when none
	mapped   int     // entries of swaOf that are set
	ownedSWA int     // SWA slots held by running requests
	buf      []int32 // scratch for SWA slot lists

	mamba      Pool
	grid       int // state checkpoint granularity in atoms: lcm(chunk, page)
	ownedMamba int // states held by running requests
	// marconi: the tree evicts states by Marconi's utility, and the
	// controller admits them the Marconi way: only at the branch point an
	// arrival's match found and after the last computed token (Finish),
	// never at chunk ends (FinishChunk caches nothing).
	marconi bool
}

func (h *hybrid) init(ecfg core.Config, pools Pools, kv Pool, canary bool) error {
	var set core.ComponentSet
	for _, comp := range ecfg.Components {
		set = set.With(comp)
	}
	aux := func(comp core.Component) (Pool, error) {
		p := pools.Pool(comp, Device)
		if p == nil {
			return nil, fmt.Errorf("%w: the tree has the %s component, so the %s device pool is required", ErrNoPool, comp, comp)
		}
		if canary && p.SlotBytes() < CanaryBytes {
			return nil, fmt.Errorf("%w: the canary needs %d bytes per slot, the %s device pool has %d", ErrInvalidArgument, CanaryBytes, comp, p.SlotBytes())
		}
		return p, nil
	}
	page := ecfg.PageSize
	if set.Has(core.SWA) {
		p, err := aux(core.SWA)
		if err != nil {
			return err
		}
		h.swa, h.window = p, ecfg.SWAWindow
		h.winPages = (h.window + page - 1) / page * page
		h.swaOf = make([]int32, kv.Capacity())
		for i := range h.swaOf {
			h.swaOf[i] = -1
		}
	}
	if set.Has(core.Mamba) {
		p, err := aux(core.Mamba)
		if err != nil {
			return err
		}
		chunk := ecfg.MambaChunkSize
		if chunk <= 0 {
			chunk = page
		}
		g, b := chunk, page
		for b != 0 {
			g, b = b, g%b
		}
		h.mamba, h.grid = p, chunk/g*page
		h.marconi = strings.EqualFold(strings.TrimSpace(ecfg.MambaPolicy), "marconi")
	}
	return nil
}

// swaN is n in SWA trees, 0 otherwise (SWA slots per n fresh Full slots).
func (h *hybrid) swaN(n int) int {
	if h.swa == nil {
		return 0
	}
	return n
}

// ownSWA is the number of SWA slots r holds: one per own position
// (past the protected prefix) that has not left its window.
func (r *Request) ownSWA() int {
	if r.c.hy.swa == nil {
		return 0
	}
	return max(0, len(r.slots)-max(r.swaEvicted, r.protected))
}

// mambaAtoms is the longest prefix of n computed tokens that ends on a
// state checkpoint: whole atoms rounded down to the Mamba grid.
func (h *hybrid) mambaAtoms(c *Controller, n int) int {
	if c.bigram {
		n = max(n-1, 0)
	}
	return n / h.grid * h.grid
}

// tokensFor is the number of tokens whose key has n atoms.
func (c *Controller) tokensFor(n int) int {
	if c.bigram && n > 0 {
		return n + 1
	}
	return n
}

// allocMapped appends n Full slots to dst, each mapped to a fresh SWA
// slot; both pools must have room (the caller evicted). All or nothing.
func (c *Controller) allocMapped(dst []int32, n int) ([]int32, error) {
	h := &c.hy
	k := len(dst)
	dst, err := c.kv.Alloc(dst, n)
	if err != nil {
		return dst, err
	}
	h.buf, err = h.swa.Alloc(h.buf[:0], n)
	if err != nil {
		// Never written: no poison record needed.
		return dst[:k], errors.Join(err, c.release(c.kv, dst[k:]))
	}
	for j, s := range h.buf {
		h.swaOf[dst[k+j]] = s
	}
	h.mapped += n
	return dst, nil
}

// mapping returns the SWA slot of Full slot f, or -1.
func (h *hybrid) mapping(f int32) int32 {
	if uint32(f) >= uint32(len(h.swaOf)) {
		return -1
	}
	return h.swaOf[f]
}

// checkMapped verifies that every Full slot has an SWA slot (SWARebuild:
// the node's SWA value is the translation of these slots).
func (h *hybrid) checkMapped(full []int32, what string) error {
	for k, f := range full {
		if h.mapping(f) < 0 {
			return fmt.Errorf("%w: %s: full slot %d (%d of %d) maps to no SWA slot", ErrSWAMapping, what, f, k, len(full))
		}
	}
	return nil
}

// remap moves the SWA slot of each incoming[k] under kept[k]
// (RecoverSWAWithLockedFull); it changes nothing unless every incoming
// slot is mapped and no kept slot is.
func (h *hybrid) remap(kept, incoming []int32) error {
	if len(kept) != len(incoming) {
		return fmt.Errorf("%w: RecoverSWAWithLockedFull: %d kept slots for %d incoming", ErrSWAMapping, len(kept), len(incoming))
	}
	for k := range kept {
		if h.mapping(incoming[k]) < 0 {
			return fmt.Errorf("%w: RecoverSWAWithLockedFull: incoming full slot %d maps to no SWA slot", ErrSWAMapping, incoming[k])
		}
		if uint32(kept[k]) >= uint32(len(h.swaOf)) || h.swaOf[kept[k]] >= 0 {
			return fmt.Errorf("%w: RecoverSWAWithLockedFull: kept full slot %d is out of range or still maps to an SWA slot", ErrSWAMapping, kept[k])
		}
	}
	for k, in := range incoming {
		h.swaOf[kept[k]], h.swaOf[in] = h.swaOf[in], -1
	}
	return nil
}

// freeKV frees Full slots. withSWA (FreeDeviceKV) frees the SWA slots they
// map to as well, and each must map to one; otherwise (Full-only frees)
// none may still map to one: such an SWA slot is freed too, so nothing
// leaks, and reported.
func (c *Controller) freeKV(slots []int32, withSWA bool) error {
	h := &c.hy
	if h.swa == nil || len(slots) == 0 {
		return c.freeSlots(c.kv, slots)
	}
	buf := h.buf[:0]
	var bad error
	for _, f := range slots {
		s := h.mapping(f)
		switch {
		case s >= 0:
			buf = append(buf, s)
			if !withSWA && bad == nil {
				bad = fmt.Errorf("%w: full-only free of full slot %d, which still maps to SWA slot %d (freed as well)", ErrSWAMapping, f, s)
			}
		case withSWA && bad == nil:
			bad = fmt.Errorf("%w: free of full slot %d with its SWA side, but it maps to no SWA slot", ErrSWAMapping, f)
		}
	}
	h.buf = buf
	// The Full free validates the slots all-or-nothing; the mapping
	// changes only after it succeeded.
	if err := c.freeSlots(c.kv, slots); err != nil {
		return errors.Join(bad, err)
	}
	if len(buf) > 0 {
		for _, f := range slots {
			if h.swaOf[f] >= 0 {
				h.swaOf[f] = -1
				h.mapped--
			}
		}
	}
	return errors.Join(bad, c.freeSlots(h.swa, buf))
}

// freeSWAOf frees the SWA slots that Full slots map to and unmaps them;
// the Full slots stay (an SWA eviction, a slide of a request's window).
func (c *Controller) freeSWAOf(full []int32) error {
	h := &c.hy
	buf := h.buf[:0]
	var bad error
	for _, f := range full {
		s := h.mapping(f)
		if s < 0 {
			if bad == nil {
				bad = fmt.Errorf("%w: SWA free of full slot %d, which maps to no SWA slot", ErrSWAMapping, f)
			}
			continue
		}
		buf = append(buf, s)
	}
	h.buf = buf
	if err := c.freeSlots(h.swa, buf); err != nil {
		return errors.Join(bad, err)
	}
	for _, f := range full {
		if h.mapping(f) >= 0 {
			h.swaOf[f] = -1
			h.mapped--
		}
	}
	return bad
}

// freeOwned frees r's own slots [from, to) (all past its protected
// prefix): Full-only below its SWA-evicted length, Full and SWA from there.
func (c *Controller) freeOwned(r *Request, from, to int) error {
	if to == len(r.slots) {
		// With its last page's unused rest: whole pages go back whole.
		to += r.spare
	}
	if from >= to {
		return nil
	}
	if c.hy.swa == nil {
		return c.freeSlots(c.kv, r.slots[from:to])
	}
	mid := min(max(r.swaEvicted, from), to)
	return errors.Join(c.freeKV(r.slots[from:mid], false), c.freeKV(r.slots[mid:to], true))
}

// slideWindow drops the SWA slots of r's own positions that left its
// sliding window: those below the page-aligned length a whole window
// (rounded up to pages) before its aligned end, so that whatever prefix
// Finish caches keeps a full window of SWA data. Once that point passes
// r's locked prefix, r no longer reads the prefix's SWA KV, and the SWA
// part of its lock is released early (UnlockSWA).
func (c *Controller) slideWindow(r *Request) error {
	h := &c.hy
	e := c.alignedAtoms(len(r.slots)) - h.winPages
	if e <= r.swaEvicted {
		return nil
	}
	if b := r.swaBranch; b > r.protected && e >= r.protected && c.tokensFor(b) <= len(r.slots) {
		// The tree holds [0, b) as an SWA tombstone that this request
		// recomputed: cache that prefix now, while the request still holds
		// its SWA slots, so the tombstone gets them and later requests
		// hit (SGLang's swa_branching_seqlen).
		r.swaBranch = 0
		if err := c.cacheBranch(r, b); err != nil {
			return err
		}
	}
	var err error
	if from := max(r.swaEvicted, r.protected); from < e {
		err = c.freeSWAOf(r.slots[from:e])
		h.ownedSWA -= e - from
		c.stats.SWAWindowFreed += uint64(e - from)
	}
	r.swaEvicted = e
	if err == nil && !r.swaReleased && r.protected > 0 && e >= r.protected {
		acts, uerr := c.eng.UnlockSWA(r.last, r.rcpt)
		if uerr != nil {
			return uerr
		}
		r.swaReleased = true
		c.stats.SWAEarlyReleases++
		err = c.execute(acts)
	}
	return err
}

// cacheMambaBranch caches, before Finish's own insert, the prefix that
// ended r's match on a node without a Mamba state (MambaBranchingSeqlen):
// with a state checkpointed there, later requests that share the prefix
// and branch off at that point hit it.
func (c *Controller) cacheMambaBranch(r *Request) error {
	b := r.mambaBranch
	if c.hy.mamba == nil || b <= r.protected || b >= c.hy.mambaAtoms(c, len(r.slots)) {
		return nil
	}
	r.mambaBranch = 0
	return c.cacheBranch(r, b)
}

// cacheBranch caches r's first n atoms as a chunk. It is an optimisation:
// when a pool is too short for the state it would donate, r goes on
// without it.
func (c *Controller) cacheBranch(r *Request, n int) error {
	err := c.finishChunkLocked(r, c.tokensFor(n))
	if err != nil && !r.done && errors.Is(err, ErrPoolExhausted) {
		return nil
	}
	return err
}

// checkChunkWindow refuses a chunk insert whose re-match could not reach
// its end: once r dropped SWA slots of its own positions (or released the
// SWA lock of its prefix), the chunk must end a whole window past them.
func (h *hybrid) checkChunkWindow(r *Request, end int) error {
	if h.swa == nil || (r.swaEvicted <= r.protected && !r.swaReleased) {
		return nil
	}
	if from := max(r.swaEvicted, r.protected); end-from < h.window {
		return fmt.Errorf("%w: chunk end %d: the request holds SWA KV only from %d on, so a chunk must end at least a window (%d) past it",
			ErrInvalidArgument, end, from, h.window)
	}
	return nil
}

// allocState takes a Mamba state slot for a request, evicting cached
// states when the pool is short.
func (c *Controller) allocState() (int32, error) {
	if err := c.ensure(core.Mamba, c.hy.mamba, 1); err != nil {
		return -1, err
	}
	var one [1]int32
	s, err := c.hy.mamba.Alloc(one[:0], 1)
	if err != nil {
		return -1, err
	}
	c.hy.ownedMamba++
	return s[0], nil
}

// dropState frees a state slot the caller owns.
func (c *Controller) dropState(slot int32) error {
	c.hy.ownedMamba--
	return c.freeSlots(c.hy.mamba, []int32{slot})
}

// forkState gives r its running state: a copy of the cached state src
// its match ended on (copy on write: the tree's state is never written),
// or a fresh state when src is -1.
func (c *Controller) forkState(r *Request, src int32) error {
	slot, err := c.allocState()
	if err != nil {
		return err
	}
	if src >= 0 {
		err = c.copyOne(core.Mamba, slot, src)
		c.stats.MambaForks++
	} else if c.cfg.Canary {
		err = c.putState(slot, r.hash, len(r.slots))
	}
	if err != nil {
		return errors.Join(err, c.dropState(slot))
	}
	r.mstate = slot
	r.ckLen, r.ckHash = len(r.slots), r.hash
	return nil
}

// checkpointState turns r's running state into the state after its first
// n atoms, the prefix Finish caches: a host tracks the state at the last
// checkpoint while the model runs, which the canary models by writing
// that checkpoint's record (derived from the running state, so a wrong
// state stays wrong). It reports whether it wrote anything.
func (c *Controller) checkpointState(r *Request, n int) (bool, error) {
	if !c.cfg.Canary || n == len(r.slots) {
		return false, nil
	}
	h, err := c.stateAt(r, n)
	if err != nil {
		return false, err
	}
	return true, c.putState(r.mstate, h, n)
}

// snapshotState copies the state after r's first n atoms into a fresh
// slot for the tree (FinishChunk); r keeps running on its own state.
func (c *Controller) snapshotState(r *Request, n int) (int32, error) {
	slot, err := c.allocState()
	if err != nil {
		return -1, err
	}
	if n == len(r.slots) {
		err = c.copyOne(core.Mamba, slot, r.mstate)
	} else if c.cfg.Canary {
		var h uint32
		if h, err = c.stateAt(r, n); err == nil {
			err = c.putState(slot, h, n)
		}
	}
	if err != nil {
		return -1, errors.Join(err, c.dropState(slot))
	}
	return slot, nil
}

// settleDonation ends a donated state's trip through an insert: the tree
// kept it, or already had a state there (MambaExist) and the slot is
// freed. The caller stops counting the slot as its own.
func (c *Controller) settleDonation(slot int32, res core.InsertResult) error {
	c.hy.ownedMamba--
	if res.MambaExist {
		return c.freeSlots(c.hy.mamba, []int32{slot})
	}
	c.stats.MambaDonated++
	return nil
}

// auditHybrid is Audit's part for the SWA and Mamba pools.
func (c *Controller) auditHybrid() error {
	h := &c.hy
	if h.swa != nil {
		if err := c.auditCount(core.SWA, h.swa, h.ownedSWA, "SWA pool: "); err != nil {
			return err
		}
		// Unmapped but allocated: SWA slots being freed, and those that
		// load-backs in flight are writing.
		d := c.deferredIn(h.swa)
		for _, j := range c.xfer.loads {
			d += j.got[core.SWA]
		}
		if avail, capa := h.swa.Available(), h.swa.Capacity(); h.mapped != capa-avail-d {
			return fmt.Errorf("%w: %d full slots map to SWA slots, %d SWA slots are allocated (%d of them being freed or loaded)", ErrSWAMapping, h.mapped, capa-avail, d)
		}
		if err := c.auditMapping(); err != nil {
			return err
		}
	}
	if h.mamba != nil {
		return c.auditCount(core.Mamba, h.mamba, h.ownedMamba, "Mamba pool: ")
	}
	return nil
}

// auditMapping checks that no two Full slots share an SWA slot and, with
// the canary, that both slots of every mapped pair are allocated and hold
// the same record.
func (c *Controller) auditMapping() error {
	h := &c.hy
	seen := make([]uint64, (h.swa.Capacity()+63)/64)
	var full, swa [CanaryBytes]byte
	n := 0
	for f, s := range h.swaOf {
		if s < 0 {
			continue
		}
		n++
		if int(s) >= h.swa.Capacity() || seen[s>>6]&(1<<(uint(s)&63)) != 0 {
			return fmt.Errorf("%w: full slot %d maps to SWA slot %d, which is out of range or mapped twice", ErrSWAMapping, f, s)
		}
		seen[s>>6] |= 1 << (uint(s) & 63)
		if !c.cfg.Canary {
			continue
		}
		if err := c.kv.Read(int32(f), full[:]); err != nil {
			return fmt.Errorf("%w: full slot %d maps to SWA slot %d but: %v", ErrSWAMapping, f, s, err)
		}
		if err := h.swa.Read(s, swa[:]); err != nil {
			return fmt.Errorf("%w: full slot %d maps to SWA slot %d but: %v", ErrSWAMapping, f, s, err)
		}
		if full != swa {
			c.stats.CanaryMismatches++
			return fmt.Errorf("%w: full slot %d holds %x but its SWA slot %d holds %x", ErrCanaryMismatch, f, full, s, swa)
		}
	}
	if n != h.mapped {
		return fmt.Errorf("%w: %d mapped full slots counted, %d recorded", ErrSWAMapping, n, h.mapped)
	}
	return nil
}
