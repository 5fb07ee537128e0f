package native

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/radixkv/radixkv/core"
)

// This file is the controller's recovery from a failed engine (a guest
// trap, a transport failure, garbage answers: ErrEngineFailed). The tree
// the engine held is lost, and with it the record of which slots it
// holds; the controller knows only what running requests own. So the
// recovery is a clean restart over the same pools: every batch in flight
// is waited for and dropped (never committed), every allocated slot of
// every pool goes back (poisoned with the canary), the new engine starts
// with an empty tree, and every request that was running is failed with
// ErrEngineReplaced on its next call. The cache refills as requests
// arrive again.
//
// Running requests do not continue on their own slots: their locks,
// receipts and node ids name the old tree, and a request's slots are
// indistinguishable, from the pools' side, from the tree's; failing them
// cleanly keeps every slot accounted (Audit is whole right after).

// ReplaceEngine replaces the controller's engine, typically after a call
// failed with ErrEngineFailed, with eng, a fresh engine of the same
// configuration (an empty tree), and takes back every slot: batches in
// flight are waited for and dropped, every allocated slot of every pool
// is freed (a Free that fails is retried later, as always), and each
// request that was running fails its next call with ErrEngineReplaced
// (it is done; arrive again). The old engine is closed. It works on a
// healthy engine too (a restart). Every pool must be a SlotLister.
// Errors: ErrClosed, ErrInvalidArgument (nil or the same engine, another
// configuration, a non-empty tree, a pool that cannot list its slots;
// nothing changed), pool errors of the frees (the replacement is made).
func (c *Controller) ReplaceEngine(eng Engine) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return fmt.Errorf("%w: controller", ErrClosed)
	}
	if eng == nil || eng == c.eng {
		return fmt.Errorf("%w: ReplaceEngine needs a new engine", ErrInvalidArgument)
	}
	if old, nw := c.eng.Config(), eng.Config(); !reflect.DeepEqual(old, nw) {
		return fmt.Errorf("%w: the new engine's configuration differs from the old one's (%+v, was %+v)", ErrInvalidArgument, nw, old)
	}
	comps := eng.Config().Components
	if len(comps) == 0 {
		comps = []core.Component{core.Full}
	}
	for _, comp := range comps {
		ev, err := eng.Evictable(comp)
		if err == nil {
			var pr int
			if pr, err = eng.Protected(comp); err == nil && ev+pr > 0 {
				err = fmt.Errorf("%w: the new engine's tree holds %d %s slots; it must be empty", ErrInvalidArgument, ev+pr, comp)
			}
		}
		if err != nil {
			return err
		}
	}
	pools := c.allPools()
	for _, p := range pools {
		if _, ok := p.(SlotLister); !ok {
			return fmt.Errorf("%w: the %T pool cannot list its slots (SlotLister), which recovery needs", ErrInvalidArgument, p)
		}
	}
	// No batch may write or read a slot once it is freed.
	c.xfer.waitAll()
	lists := make([][]int32, len(pools))
	for k, p := range pools {
		var err error
		if lists[k], err = p.(SlotLister).Allocated(nil); err != nil {
			return fmt.Errorf("%w: listing the slots of a pool: %w", ErrInvalidArgument, err)
		}
	}
	cerr := c.eng.Close() // a failed engine may fail to close; it is gone either way
	c.eng = eng
	c.gen++
	c.stats.EngineReplacements++
	c.xfer.jobs, c.xfer.loads = nil, nil
	c.xfer.reading, c.xfer.freeLater = nil, nil
	c.deferred = nil // those slots are allocated: freed below with the rest
	c.owned, c.live = 0, 0
	c.hy.ownedSWA, c.hy.ownedMamba = 0, 0
	for i := range c.hy.swaOf {
		c.hy.swaOf[i] = -1
	}
	c.hy.mapped = 0
	if h := c.ht; h != nil {
		for comp := range h.held {
			clear(h.held[comp])
			h.nHeld[comp] = 0
		}
	}
	var err error
	for k, p := range pools {
		c.stats.SlotsReclaimed += uint64(len(lists[k]))
		err = errors.Join(err, c.freeSlots(p, lists[k]))
	}
	if err != nil {
		return errors.Join(err, cerr)
	}
	return nil
}

// allPools returns the controller's distinct pools: the device pools of
// the tree's components, then the host pools.
func (c *Controller) allPools() []Pool {
	var out []Pool
	add := func(p Pool) {
		if p == nil {
			return
		}
		for _, q := range out {
			if q == p {
				return
			}
		}
		out = append(out, p)
	}
	add(c.kv)
	add(c.hy.swa)
	add(c.hy.mamba)
	if c.ht != nil {
		for _, p := range c.ht.host {
			add(p)
		}
	}
	return out
}
