package native

import (
	"errors"
	"fmt"
	"slices"

	"github.com/radixkv/radixkv/core"
)

// This file is the pool side of the controller: allocating device slots
// (evicting through the engine when a pool is short) and executing the
// actions the tree returns on the pools, with the frees that failed kept
// for a retry so that no slot is ever lost.

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
	return c.allocMapped(dst, n)
}

// allocPaged gives r n more slots from the paged Full pool: first the
// unused rest of its last page, then whole fresh pages (evicting when the
// pool is short), so that a request's own positions fill pool pages in
// order and the tree's page-aligned nodes hold whole pool pages. When no
// whole page is free (split pages only, or too little room for a whole
// last page) it takes single slots. It returns the slots (len(r.slots)+n
// of them, the spare ones beyond) and how many it took from the pool.
func (c *Controller) allocPaged(r *Request, n int) ([]int32, int, error) {
	k := len(r.slots) + r.spare
	buf := r.slots[:k]
	if n <= r.spare {
		return buf[:len(r.slots)+n], 0, nil
	}
	need := n - r.spare
	pages := (need + c.page - 1) / c.page
	var err error
	if c.ensure(core.Full, c.kv, pages*c.page) == nil {
		sp := localPaged(c.kv)
		if c.cfg.Canary && sp != nil {
			// Prefill writes the records of the n slots it asked for
			// before anything can read them, so a stale page need not be
			// poisoned first; the spare rest of the last page is.
			if buf, err = sp.allocPagesToWrite(buf, pages); err == nil {
				if lo := len(r.slots) + n; lo < len(buf) {
					sp.zeroRecords(buf[lo], len(buf)-lo)
				}
				return buf[:len(r.slots)+n], len(buf) - k, nil
			}
		} else if buf, err = c.paged.AllocPages(buf, pages); err == nil {
			return buf[:len(r.slots)+n], len(buf) - k, nil
		}
		if !errors.Is(err, ErrPoolExhausted) {
			return r.slots, 0, err
		}
	}
	if err := c.ensure(core.Full, c.kv, need); err != nil {
		return r.slots, 0, err
	}
	if buf, err = c.kv.Alloc(buf[:k], need); err != nil {
		return r.slots, 0, err
	}
	return buf[:len(r.slots)+n], need, nil
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
	acts = stable(acts)
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
// stale reference to a freed slot reads as a mismatch. A poison record
// that cannot be written does not keep the slot from its pool (counted in
// Stats.PoisonFailures); a Free that fails is retried later (release).
func (c *Controller) freeSlots(p Pool, slots []int32) error {
	if len(slots) == 0 {
		return nil
	}
	if c.cfg.Canary && p.SlotBytes() >= CanaryBytes {
		if sp := localPaged(p); sp != nil {
			// This package's paged pools poison while they free, a page
			// at a time.
			sp.zeroOnFree = true
			err := c.release(p, slots)
			sp.zeroOnFree = false
			return err
		}
		if mem, ok := rawMem(p); ok {
			mem.poison(slots, p.Capacity())
		} else {
			for _, s := range slots {
				if err := p.Write(s, c.zero[:]); err != nil {
					c.stats.PoisonFailures++
				}
			}
		}
	}
	return c.release(p, slots)
}

// deferredFree is a Free that failed: the slots stay allocated in p and
// belong to the controller until a retry frees them.
type deferredFree struct {
	p     Pool
	slots []int32
}

// release frees slots into p. A failure the Pool contract allows (the
// pool could not free now) keeps them for a retry by later calls, counted
// by Audit; a bookkeeping error (a slot out of range or not allocated)
// is returned, and nothing changed.
func (c *Controller) release(p Pool, slots []int32) error {
	if len(slots) == 0 {
		return nil
	}
	err := p.Free(slots)
	if err == nil {
		c.stats.FreedSlots += uint64(len(slots))
		return nil
	}
	if errors.Is(err, ErrSlotRange) || errors.Is(err, ErrSlotNotAllocated) || errors.Is(err, ErrInvalidArgument) {
		return err
	}
	c.deferred = append(c.deferred, deferredFree{p: p, slots: slices.Clone(slots)})
	c.stats.FreeRetries++
	return nil
}

// retryFrees retries the frees that failed. Those that fail again stay.
func (c *Controller) retryFrees() {
	kept := c.deferred[:0]
	for _, d := range c.deferred {
		if err := d.p.Free(d.slots); err != nil {
			kept = append(kept, d)
			continue
		}
		c.stats.FreedSlots += uint64(len(d.slots))
	}
	clear(c.deferred[len(kept):])
	c.deferred = kept
}

// deferredIn counts the slots of p whose Free is waiting for a retry.
func (c *Controller) deferredIn(p Pool) int {
	n := 0
	for _, d := range c.deferred {
		if d.p == p {
			n += len(d.slots)
		}
	}
	return n
}
