package native

import (
	"errors"
	"fmt"

	"github.com/radixkv/radixkv/core"
)

// This file is the load-back of a host hit: an arrival whose match found
// more on the host than on the device copies that prefix back before it
// locks its match. The copy is one batch. When the batch completes at
// once (memory pools), or the controller has no AsyncLoadBack (Arrive
// then waits for it), the arrival goes on as if nothing happened; when it
// is still in flight, Arrive returns a request that is loading
// (Request.Loading): its next call (or Controller.Await) waits for the
// batch, commits it, matches again and locks, and Abort waits for it and
// rolls it back. Until then the request holds a host lock and a device
// lock on the anchor (so neither the host data read nor the device path
// above it can go away) and owns the device slots being written.

// loadJob is one load-back from plan to commit.
type loadJob struct {
	anchor core.NodeID
	hr, rc core.Receipt // HostLock and Lock on anchor
	slots  []int32      // device slots, got[comp] per component in turn
	got    [3]int
	src    []int32 // host sources (the plan's slices are the engine's)
	commit core.LoadBackCommit
	batch  Batch
	done   Completion
	reads  bool // its host reads are recorded (transfers.beginRead)
}

// own adds (sign 1) or removes (-1) j's device slots to what running
// requests own, so that Audit counts them while the batch is in flight.
func (c *Controller) own(j *loadJob, sign int) {
	c.owned += sign * j.got[core.Full]
	c.hy.ownedSWA += sign * j.got[core.SWA]
	c.hy.ownedMamba += sign * j.got[core.Mamba]
}

// planNeeds is what a load-back plan copies, per component.
func planNeeds(p core.LoadBackPlan) [3]int {
	var n [3]int
	n[core.Full] = p.Atoms()
	for _, e := range p.SWA {
		n[core.SWA] += len(e.Slots)
	}
	if p.Mamba >= 0 {
		n[core.Mamba] = 1
	}
	return n
}

// startLoadBack locks anchor on both tiers and starts copying its
// host-only prefix back. It returns the job when the batch is still in
// flight (the locks stay held), or reports whether it loaded anything
// (false: pinned, nothing to load, no device room, or the copy failed;
// the arrival recomputes).
func (c *Controller) startLoadBack(anchor core.NodeID) (*loadJob, bool, error) {
	hr, err := c.eng.HostLock(anchor)
	if err != nil {
		return nil, false, err
	}
	rc, err := c.eng.Lock(anchor, 0)
	if err != nil {
		return nil, false, errors.Join(err, c.eng.HostUnlock(anchor, hr))
	}
	j, err := c.startLoadLocked(anchor)
	if j == nil {
		return nil, false, errors.Join(err, c.eng.Unlock(anchor, rc, false), c.eng.HostUnlock(anchor, hr))
	}
	j.hr, j.rc = hr, rc
	if c.cfg.AsyncLoadBack && !j.done.Done() {
		c.own(j, 1)
		c.xfer.beginRead(j)
		c.xfer.loads = append(c.xfer.loads, j)
		c.stats.TransfersQueued++
		return j, true, nil
	}
	ok, err := c.finishLoad(j)
	return nil, ok, err
}

// startLoadLocked plans, makes device room, takes the device slots and
// starts the batch; nil when there is nothing to load (or it failed).
func (c *Controller) startLoadLocked(anchor core.NodeID) (*loadJob, error) {
	plan, err := c.eng.LoadBackPlan(anchor)
	if err != nil {
		return nil, err
	}
	if plan.Pinned || plan.Empty() {
		c.stats.LoadBacksSkipped++
		return nil, nil
	}
	need := planNeeds(plan)
	for comp, n := range need {
		if n == 0 {
			continue
		}
		if c.ht.dev[comp] == nil || c.ht.host[comp] == nil {
			return nil, fmt.Errorf("%w: load-back of %v brings %s data, but the controller has no %s pools", ErrNoPool, anchor, core.Component(comp), core.Component(comp))
		}
		if err := c.ensure(core.Component(comp), c.ht.dev[comp], n); err != nil {
			if errors.Is(err, ErrPoolExhausted) {
				c.stats.LoadBacksSkipped++
				return nil, nil // the device cannot take it now: recompute instead
			}
			return nil, err
		}
	}
	// Making room may have changed the plan (evictions, host evictions
	// of write-back backups): plan again with what is there now.
	if plan, err = c.eng.LoadBackPlan(anchor); err != nil {
		return nil, err
	}
	need = planNeeds(plan)
	for comp, n := range need {
		if n > 0 && c.ht.dev[comp].Available() < n {
			c.stats.LoadBacksSkipped++
			return nil, nil
		}
	}
	if plan.Pinned || plan.Empty() {
		c.stats.LoadBacksSkipped++
		return nil, nil
	}
	// Take the device slots (plain Full slots: the SWA side of the loaded
	// nodes in the window comes from the plan's SWA runs, mapped by the
	// commit's RebuildFullToSWAMapping actions), then start one batch.
	j := &loadJob{anchor: anchor}
	h := c.ht
	if j.slots, j.got, err = takeSlots(&h.dev, need, nil); err != nil {
		// A device Alloc failed: recompute instead.
		c.stats.LoadBacksFailed++
		return nil, c.giveBackLoad(j)
	}
	off := 0
	take := func(n int) []int32 { s := j.slots[off : off+n : off+n]; off += n; return s }
	for _, e := range plan.Full {
		j.src = append(j.src, e.Slots...)
	}
	for _, e := range plan.SWA {
		j.src = append(j.src, e.Slots...)
	}
	if plan.Mamba >= 0 {
		j.src = append(j.src, plan.Mamba)
	}
	so := 0
	src := func(n int) []int32 { s := j.src[so : so+n : so+n]; so += n; return s }
	j.commit = core.LoadBackCommit{Mamba: -1, Full: make([][]int32, len(plan.Full))}
	for k, e := range plan.Full {
		j.commit.Full[k] = take(len(e.Slots))
		j.batch.Add(core.Full, Host, Device, src(len(e.Slots)), j.commit.Full[k])
	}
	if len(plan.SWA) > 0 {
		j.commit.SWA = make([][]int32, len(plan.SWA))
		for k, e := range plan.SWA {
			j.commit.SWA[k] = take(len(e.Slots))
			j.batch.Add(core.SWA, Host, Device, src(len(e.Slots)), j.commit.SWA[k])
		}
	}
	if plan.Mamba >= 0 {
		m := take(1)
		j.commit.Mamba = m[0]
		j.batch.Add(core.Mamba, Host, Device, src(1), m)
	}
	done, err := c.xfer.tr.Start(&j.batch)
	if err != nil {
		c.stats.LoadBacksFailed++
		return nil, c.giveBackLoad(j)
	}
	c.stats.Transfers++
	j.done = done
	return j, nil
}

// giveBackLoad returns a load-back's device slots (poisoned).
func (c *Controller) giveBackLoad(j *loadJob) error {
	return giveBackSlots(j.slots, j.got, func(comp core.Component, s []int32) error {
		return c.freeSlots(c.ht.dev[comp], s)
	})
}

// finishLoad waits for j's batch and commits it, or rolls it back; either
// way the locks on the anchor are released. It reports whether the
// prefix was loaded. j's slots are not counted as owned any more.
func (c *Controller) finishLoad(j *loadJob) (bool, error) {
	unlock := func(err error) error {
		return errors.Join(err, c.eng.Unlock(j.anchor, j.rc, false), c.eng.HostUnlock(j.anchor, j.hr))
	}
	werr := j.done.Wait()
	rerr := c.endRead(j)
	if werr != nil {
		// The batch failed: the load-back is abandoned before the tree
		// hears of it, and the arrival recomputes.
		c.stats.LoadBacksFailed++
		return false, unlock(errors.Join(rerr, c.giveBackLoad(j)))
	}
	if rerr != nil {
		return false, unlock(errors.Join(rerr, c.giveBackLoad(j)))
	}
	c.stats.BytesMoved += uint64(c.movedBytes(&j.batch))
	acts, err := c.eng.CommitLoadBack(j.anchor, j.commit)
	if err != nil {
		rerr := c.giveBackLoad(j)
		if isGone(err) {
			// The path changed while the copy was in flight (another
			// load-back brought part of it): the copy is not used.
			c.stats.LoadBacksFailed++
			return false, unlock(rerr)
		}
		return false, unlock(errors.Join(err, rerr))
	}
	// The tree holds the loaded slots now; the actions map the loaded SWA
	// slots under their nodes' Full slots.
	err = c.execute(acts)
	err = errors.Join(err, c.eng.FinishLoadBack(j.anchor))
	c.stats.LoadBacks++
	c.stats.LoadedTokens += uint64(j.got[core.Full])
	return true, unlock(err)
}

// abandonLoad waits for a loading request's batch and rolls it back
// without committing (Abort during a load-back).
func (c *Controller) abandonLoad(j *loadJob) error {
	c.own(j, -1)
	c.xfer.dropLoad(j)
	_ = j.done.Wait() // the slots may be written until then
	c.stats.LoadBacksFailed++
	return errors.Join(c.endRead(j), c.giveBackLoad(j), c.eng.Unlock(j.anchor, j.rc, false), c.eng.HostUnlock(j.anchor, j.hr))
}

// awaitLoad finishes a loading request's load-back and completes its
// arrival: match again, verify, lock. On error the request is done.
func (c *Controller) awaitLoad(r *Request) error {
	j := r.load
	r.load = nil
	c.own(j, -1)
	c.xfer.dropLoad(j)
	loaded, err := c.finishLoad(j)
	if err == nil {
		var m core.MatchResult
		if m, err = c.eng.Match(c.spareSlotBuf(len(r.tokens)), r.ns, r.tokens); err == nil {
			if err = c.execute(m.Actions); err == nil {
				gain := 0
				if loaded {
					gain = max(m.DeviceLen-r.firstLen, 0)
					c.stats.HostHitTokens += uint64(gain)
				}
				err = c.arriveMatched(r, m, gain, nil)
			}
		}
	}
	if err != nil {
		c.live--
		r.done = true
		c.recycle(r, r.slots)
		r.tokens, r.slots = nil, nil
	}
	return err
}

// Await waits for the load-back of a loading request (Request.Loading)
// and completes its arrival; afterwards Slots and CachedLen are final.
// Every other lifecycle call on a loading request (Abort excepted, which
// rolls the load-back back) awaits it first, so calling Await is needed
// only to learn the cached prefix early. It does nothing for a request
// that is not loading.
// Errors: ErrRequestDone, those of Arrive (the request is then done).
func (c *Controller) Await(r *Request) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable(r); err != nil {
		return err
	}
	return nil
}
