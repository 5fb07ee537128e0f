package native

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"

	"github.com/radixkv/radixkv/core"
)

// hostTier is the controller's state for the host tier (HiCache): one
// host pool per component of the tree, the device pool each one copies
// to and from, and a record of the host slots the tree holds.
//
// The tree decides and the controller copies (core's host.go describes
// the protocol): a BackupKV action is a backup of each node of its chain,
// device to host; a host-only hit on arrival is loaded back, host to
// device; a short host pool is made room for with EvictHost. The bytes of
// every slot travel with it, so with the canary a load-back from a wrong
// host slot, or a backup that wrote one slot and recorded another, shows
// up as a mismatch.
type hostTier struct {
	writeBack bool
	host      [3]Pool // host pool per component; nil where the tree lacks it
	dev       [3]Pool // the matching device pool
	// held marks, per component, the host slots the tree holds: committed
	// by a backup and not freed by a FreeHostSlots since. A host free of
	// a slot not held, or a commit of one already held, is an error, and
	// Audit checks that the held and the free slots make up the pool.
	held  [3][]uint64
	nHeld [3]int
	ack   int64 // last write-through acknowledgement id

	acts  []core.Action // EvictHost scratch
	slots []int32       // load-back slot scratch
}

func newHostTier(ecfg core.Config, pools Pools, c *Controller) (*hostTier, error) {
	h := &hostTier{writeBack: ecfg.WritePolicy == core.WriteBack}
	h.dev = [3]Pool{core.Full: c.kv, core.SWA: c.hy.swa, core.Mamba: c.hy.mamba}
	for comp := range h.dev {
		d := h.dev[comp]
		if d == nil {
			continue
		}
		name := core.Component(comp)
		p := pools.Pool(name, Host)
		if p == nil {
			return nil, fmt.Errorf("%w: the tree has a host tier, so the %s host pool is required", ErrNoPool, name)
		}
		if p == d {
			return nil, fmt.Errorf("%w: the %s host pool is the %s device pool", ErrInvalidArgument, name, name)
		}
		if p.SlotBytes() != d.SlotBytes() {
			return nil, fmt.Errorf("%w: the %s host pool has %d bytes per slot, its device pool %d: a slot must keep its size between tiers",
				ErrInvalidArgument, name, p.SlotBytes(), d.SlotBytes())
		}
		h.host[comp] = p
		h.held[comp] = make([]uint64, (p.Capacity()+63)/64)
	}
	return h, nil
}

func (h *hostTier) isHeld(comp core.Component, s int32) bool {
	b := h.held[comp]
	return uint32(s)>>6 < uint32(len(b)) && b[s>>6]&(1<<(uint(s)&63)) != 0
}

// hold records slots as held by the tree (a committed backup).
func (h *hostTier) hold(comp core.Component, slots []int32) error {
	for _, s := range slots {
		if h.isHeld(comp, s) {
			return fmt.Errorf("native: internal: %s host slot %d committed twice", comp, s)
		}
	}
	for _, s := range slots {
		h.held[comp][s>>6] |= 1 << (uint(s) & 63)
	}
	h.nHeld[comp] += len(slots)
	return nil
}

// stable returns acts, deep-copied when an action that calls back into
// the engine (a backup, a Mamba path cap) precedes others: the engine may
// reuse the buffers of the later actions on that call (a wire engine's
// slot lists are views of its last response).
func stable(acts []core.Action) []core.Action {
	k := 0
	for ; k < len(acts)-1; k++ {
		if a := acts[k].Kind; a == core.ActionBackupKV || a == core.ActionMambaEvictExcessPathStates {
			break
		}
	}
	if k >= len(acts)-1 {
		return acts
	}
	out := slices.Clone(acts)
	for i := range out {
		out[i].Slots = slices.Clone(out[i].Slots)
		out[i].Incoming = slices.Clone(out[i].Incoming)
		out[i].Nodes = slices.Clone(out[i].Nodes)
	}
	return out
}

// executeHost runs the host-tier actions.
func (c *Controller) executeHost(a *core.Action) error {
	if c.ht == nil {
		return fmt.Errorf("%w: cannot execute %v", ErrHostTier, *a)
	}
	switch a.Kind {
	case core.ActionBackupKV:
		// The calls below may reuse the action's buffers.
		return c.backupChain(slices.Clone(a.Nodes))
	case core.ActionRebuildFullToSWAMapping:
		if c.hy.swa == nil {
			return fmt.Errorf("%w: %v needs the full-to-SWA slot mapping", ErrNoPool, *a)
		}
		return c.hy.rebuild(a.Slots, a.Incoming)
	case core.ActionReplaceWriteThroughOnSplit:
		// Every write-through is acknowledged before the call that started
		// it returns, with nothing in between that could split a node.
		return fmt.Errorf("native: internal: %v: no write-through is pending", *a)
	}
	return fmt.Errorf("%w: %v", ErrUnknownAction, *a)
}

// freeHost executes a FreeHostSlots: the tree gives up host slots it
// holds. With the canary they are poisoned first, so a later load-back
// from a stale slot reads as a mismatch.
func (c *Controller) freeHost(a *core.Action) error {
	h := c.ht
	comp := a.Component
	if int(comp) >= len(h.host) || h.host[comp] == nil {
		return fmt.Errorf("%w: %v: no %s host pool", ErrNoPool, *a, comp)
	}
	for _, s := range a.Slots {
		if !h.isHeld(comp, s) {
			return fmt.Errorf("%w: %v: %s host slot %d is not held by the tree", ErrAccounting, *a, comp, s)
		}
	}
	// The tree gave them up: poisoned and freed, or kept for a retry.
	// Those a load-back in flight still reads are freed when it completed.
	now := a.Slots
	if len(c.xfer.reading) > 0 {
		now = nil
		for _, s := range a.Slots {
			if !c.xfer.isRead(comp, s) {
				now = append(now, s)
			}
		}
	}
	if err := c.freeSlots(h.host[comp], now); err != nil {
		return err
	}
	for _, s := range a.Slots {
		h.held[comp][s>>6] &^= 1 << (uint(s) & 63)
		if len(now) < len(a.Slots) && c.xfer.isRead(comp, s) {
			c.xfer.freeLater[hostSlot{comp, s}] = struct{}{}
		}
	}
	h.nHeld[comp] -= len(a.Slots)
	c.stats.HostFreedSlots += uint64(len(a.Slots))
	if comp == core.Full {
		c.stats.HostFreedTokens += uint64(len(a.Slots))
	}
	return nil
}

// hostRoom makes n slots of comp's host pool free, evicting host copies
// (EvictHost) when it is short. It reports whether there is room.
func (c *Controller) hostRoom(comp core.Component, n int) (bool, error) {
	p := c.ht.host[comp]
	avail := p.Available()
	if avail >= n {
		return true, nil
	}
	if n > p.Capacity() {
		return false, nil
	}
	acts, _, err := c.eng.EvictHost(comp, n-avail, c.ht.acts[:0])
	c.stats.HostEvictions++
	if err == nil {
		err = c.execute(acts)
	}
	clear(acts)
	c.ht.acts = acts[:0]
	return p.Available() >= n, err
}

// backupNeeds is what a backup spec copies, per component.
func backupNeeds(s core.BackupSpec) [3]int {
	var n [3]int
	n[core.Full] = len(s.Full)
	for _, e := range s.SWA {
		n[core.SWA] += len(e.Slots)
	}
	if s.Mamba >= 0 {
		n[core.Mamba] = 1
	}
	return n
}

// evictToHost finishes a write-back eviction step that handed leaf id to
// the host: back it up and demote it, or, when the host has no room,
// drop it (with its host-only descendants). A drop the tree declines
// leaves the leaf where it is.
func (c *Controller) evictToHost(comp core.Component, id core.NodeID) error {
	ok, err := c.backupNode(id)
	if err != nil {
		return err
	}
	if ok {
		acts, err := c.eng.Demote(id)
		if err == nil && len(acts) > 0 {
			c.stats.Demoted++
		}
		return errors.Join(err, c.executeEviction(comp, acts))
	}
	c.stats.BackupsRefused++
	dropped, acts, err := c.eng.DropSubtreeNoHost(id)
	if dropped {
		c.stats.Dropped++
	}
	return errors.Join(err, c.executeEviction(comp, acts))
}

// executeEviction runs the actions of one step of a device eviction walk
// (or of the demotion or drop that ends one), counting the evicted nodes
// and tokens; a BackupKV hands its leaf to the host (write-back).
func (c *Controller) executeEviction(comp core.Component, acts []core.Action) error {
	acts = stable(acts)
	var first error
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	for k := range acts {
		a := &acts[k]
		if a.Kind == core.ActionBackupKV {
			nodes := a.Nodes
			if len(nodes) == 0 {
				nodes = []core.NodeID{a.Node}
			}
			for _, id := range slices.Clone(nodes) {
				keep(c.evictToHost(comp, id))
			}
			continue
		}
		if a.Kind == core.ActionFreeDeviceSlots && a.Component == core.Full {
			c.stats.EvictedNodes++
			if comp == core.Full {
				c.stats.EvictedTokens += uint64(len(a.Slots))
			}
		}
		keep(c.executeOne(a))
	}
	return first
}

// evictSteps is ensure with a host tier: a step-wise eviction walk of
// comp, run until p has n slots free, whose write-back steps back leaves
// up and demote (or drop) them. A walk that ends short (a drop the tree
// declined) is followed by another while they make progress.
func (c *Controller) evictSteps(comp core.Component, p Pool, n int) error {
	for round := 0; p.Available() < n && round < 4; round++ {
		before := p.Available()
		if err := c.eng.EvictStart(comp, n-before); err != nil {
			return err
		}
		var err error
		for err == nil && p.Available() < n {
			var st core.EvictStep
			if st, err = c.eng.EvictNext(); err != nil || st.Done {
				break
			}
			err = c.executeEviction(comp, st.Actions)
		}
		if err = errors.Join(err, c.eng.EvictEnd()); err != nil {
			return err
		}
		if p.Available() == before {
			break
		}
	}
	if avail := p.Available(); avail < n {
		return fmt.Errorf("%w: %d %s slots needed, %d free after evicting (the rest is locked or could not be demoted)",
			ErrPoolExhausted, n, comp, avail)
	}
	return nil
}

// rebuild maps each Full slot full[k] to the SWA slot swa[k] that a
// load-back filled (RebuildFullToSWAMapping); it changes nothing unless
// no Full slot maps to an SWA slot yet.
func (h *hybrid) rebuild(full, swa []int32) error {
	if len(full) != len(swa) {
		return fmt.Errorf("%w: RebuildFullToSWAMapping: %d full slots for %d SWA slots", ErrSWAMapping, len(full), len(swa))
	}
	for _, f := range full {
		if uint32(f) >= uint32(len(h.swaOf)) || h.swaOf[f] >= 0 {
			return fmt.Errorf("%w: RebuildFullToSWAMapping: full slot %d is out of range or already maps to an SWA slot", ErrSWAMapping, f)
		}
	}
	for k, f := range full {
		h.swaOf[f] = swa[k]
	}
	h.mapped += len(full)
	return nil
}

// auditHost is Audit's part for the host pools: the slots the tree holds
// and the free ones make up each pool, and, with the canary, every held
// slot holds a record (a backup that recorded one slot and wrote another
// leaves a poisoned or never-written slot held).
func (c *Controller) auditHost() error {
	h := c.ht
	if h == nil {
		return nil
	}
	var rec [CanaryBytes]byte
	for comp, p := range h.host {
		if p == nil {
			continue
		}
		name := core.Component(comp)
		avail, capa := p.Available(), p.Capacity()
		mine := c.xfer.taken(p) + c.deferredIn(p) + c.xfer.heldBack(name)
		if avail+h.nHeld[comp]+mine != capa {
			return fmt.Errorf("%w: %s host pool: %d free + %d held by the tree + %d in flight or being freed = %d, capacity %d",
				ErrAccounting, name, avail, h.nHeld[comp], mine, avail+h.nHeld[comp]+mine, capa)
		}
		if !c.cfg.Canary {
			continue
		}
		for w, word := range h.held[comp] {
			for word != 0 {
				b := word & -word
				word ^= b
				s := int32(w*64 + bits.TrailingZeros64(b))
				if err := p.Read(s, rec[:]); err != nil {
					return fmt.Errorf("%w: %s host slot %d, held by the tree: %v", ErrAccounting, name, s, err)
				}
				if rec == c.zero {
					c.stats.CanaryMismatches++
					return fmt.Errorf("%w: %s host slot %d, held by the tree, holds no record", ErrCanaryMismatch, name, s)
				}
			}
		}
	}
	return nil
}

// HostHeld returns how many slots of component comp's host pool the tree
// holds: host copies backed up and not evicted since (0 without a host
// tier).
func (c *Controller) HostHeld(comp core.Component) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ht == nil || int(comp) >= len(c.ht.nHeld) {
		return 0
	}
	return c.ht.nHeld[comp]
}
