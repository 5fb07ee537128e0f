package native

import (
	"errors"
	"fmt"
	"slices"

	"github.com/radixkv/radixkv/core"
)

// This file is the controller's transfer queue: the backups whose copies
// are in flight, and the synchronous copies (load-backs, write-back
// demotions, Mamba forks) that go through the same Transport.
//
// A backup takes its host slots, locks its node (so the device sources
// stay in the tree), starts one batch and, once the batch completed,
// commits it to the tree (CommitBackup; under write-through also
// MarkWriteThroughPending and FinishWriteThrough, the acknowledgement)
// and unlocks. A batch that failed, or a commit the tree refuses because
// it changed in between, is rolled back: the host slots return to their
// pool (poisoned), the lock is released and the tree never hears of the
// backup. Insert-triggered backups (write-through chains, write-back's
// SWA top-ups) may stay in flight across calls: each lifecycle call
// polls the queue first, and Poll, Drain and Close finish it. Everything
// else waits for its batch before the call returns.

// transfers is the controller's queue of backups in flight.
type transfers struct {
	tr    Transport
	loads []*loadJob   // load-backs in flight (each hangs off its loading request)
	jobs  []*backupJob // in flight, oldest first
	spare []*backupJob // finished jobs, reused
	batch Batch        // scratch batch of synchronous copies
	src   []int32      // scratch sources of synchronous copies

	// reading counts, per host slot, the load-backs in flight that read
	// it; freeLater holds the host slots the tree gave up (FreeHostSlots)
	// while one was still read. Such a slot stays allocated, owned by the
	// controller, until the last batch reading it completed: freeing it at
	// once would let the canary's poison, or the next backup, write a slot
	// the copy still reads (a write-back demotion's host eviction does
	// that under AsyncLoadBack: the Full host lock covers only the anchor,
	// and a node of its run that another load-back brought to the device
	// is a coexisting copy host eviction may reclaim).
	reading   map[hostSlot]int32
	freeLater map[hostSlot]struct{}
}

// hostSlot names one slot of one component's host pool.
type hostSlot struct {
	comp core.Component
	slot int32
}

// hostReads calls f on each host slot j's batch reads.
func (j *loadJob) hostReads(f func(hostSlot)) {
	for k := range j.batch.Segments {
		s := &j.batch.Segments[k]
		if s.From != Host {
			continue
		}
		for _, x := range s.Src {
			f(hostSlot{s.Component, x})
		}
	}
}

// beginRead records the host slots j's batch in flight reads.
func (x *transfers) beginRead(j *loadJob) {
	if x.reading == nil {
		x.reading = make(map[hostSlot]int32)
		x.freeLater = make(map[hostSlot]struct{})
	}
	j.reads = true
	j.hostReads(func(k hostSlot) { x.reading[k]++ })
}

// isRead reports whether a load-back in flight reads host slot s of comp.
func (x *transfers) isRead(comp core.Component, s int32) bool {
	return x.reading[hostSlot{comp, s}] > 0
}

// heldBack counts the host slots of comp whose free waits for a batch.
func (x *transfers) heldBack(comp core.Component) int {
	n := 0
	for k := range x.freeLater {
		if k.comp == comp {
			n++
		}
	}
	return n
}

// endRead is called once j's batch completed (or failed): it forgets
// j's reads and frees, poisoned, the host slots whose free waited for
// the last batch reading them.
func (c *Controller) endRead(j *loadJob) error {
	if !j.reads {
		return nil
	}
	j.reads = false
	x := &c.xfer
	var late [3][]int32
	j.hostReads(func(k hostSlot) {
		if x.reading[k]--; x.reading[k] > 0 {
			return
		}
		delete(x.reading, k)
		if _, ok := x.freeLater[k]; ok {
			delete(x.freeLater, k)
			late[k.comp] = append(late[k.comp], k.slot)
		}
	})
	var err error
	for comp, s := range late {
		if len(s) > 0 {
			err = errors.Join(err, c.freeSlots(c.ht.host[comp], s))
		}
	}
	return err
}

// backupJob is one node's backup from start to commit.
type backupJob struct {
	node   core.NodeID
	rest   []core.NodeID // chain nodes to back up after this one
	lock   core.Receipt  // Lock on node while the copy reads its device data
	full   bool          // it copies the node's Full data (write-through acknowledges it)
	host   [3]Pool       // the host pools of the slots taken
	slots  []int32       // host slots, got[comp] per component in turn
	got    [3]int
	src    []int32 // device sources, in batch order (the spec's slices are the engine's)
	commit core.BackupCommit
	swa    [][]int32
	batch  Batch
	done   Completion
}

// taken counts the slots of p that backups in flight took.
func (x *transfers) taken(p Pool) int {
	n := 0
	for _, j := range x.jobs {
		for comp, k := range j.got {
			if k > 0 && j.host[comp] == p {
				n += k
			}
		}
	}
	return n
}

func (x *transfers) newJob() *backupJob {
	if k := len(x.spare); k > 0 {
		j := x.spare[k-1]
		x.spare = x.spare[:k-1]
		return j
	}
	return &backupJob{}
}

func (x *transfers) recycle(j *backupJob) {
	j.batch.Reset()
	j.rest, j.slots, j.src = j.rest[:0], j.slots[:0], j.src[:0]
	clear(j.swa)
	j.swa = j.swa[:0]
	j.commit, j.done, j.got, j.host, j.full = core.BackupCommit{}, nil, [3]int{}, [3]Pool{}, false
	x.spare = append(x.spare, j)
}

// remove takes j off the queue.
func (x *transfers) remove(j *backupJob) {
	if k := slices.Index(x.jobs, j); k >= 0 {
		x.jobs = slices.Delete(x.jobs, k, k+1)
	}
}

// waitAll waits for every batch in flight without committing anything
// (Close: the pools must not be written after they close).
func (x *transfers) waitAll() {
	for _, j := range x.jobs {
		_ = j.done.Wait()
	}
	for _, j := range x.loads {
		_ = j.done.Wait()
	}
}

// dropLoad takes j off the list of load-backs in flight.
func (x *transfers) dropLoad(j *loadJob) {
	if k := slices.Index(x.loads, j); k >= 0 {
		x.loads = slices.Delete(x.loads, k, k+1)
	}
}

// pollTransfers finishes the backups whose batches completed, in the
// order they completed in (not the order they started in). Each batch is
// asked once per poll.
func (c *Controller) pollTransfers() error {
	var ready []*backupJob
	var buf [8]*backupJob
	ready = buf[:0]
	for _, j := range c.xfer.jobs {
		if j.done.Done() {
			ready = append(ready, j)
		}
	}
	var err error
	for _, j := range ready {
		if slices.Index(c.xfer.jobs, j) < 0 {
			continue // a chain finished it already
		}
		c.xfer.remove(j)
		err = errors.Join(err, c.finishJob(j))
	}
	return err
}

// drain finishes every backup in flight, waiting for each.
func (c *Controller) drain() error {
	var err error
	for len(c.xfer.jobs) > 0 {
		j := c.xfer.jobs[0]
		c.xfer.remove(j)
		err = errors.Join(err, c.finishJob(j))
	}
	return err
}

// finishJob finishes a backup taken off the queue and carries its chain
// on.
func (c *Controller) finishJob(j *backupJob) error {
	ok, err := c.finishBackup(j)
	rest := j.rest
	j.rest = nil
	c.xfer.recycle(j)
	if err == nil && ok && len(rest) > 0 {
		// Only the finished node was locked: the rest of the chain may
		// have been evicted or demoted meanwhile, which ends the chain.
		if err = c.backupChain(rest); isGone(err) {
			c.stats.BackupsStale++
			err = nil
		}
	}
	return err
}

// isGone reports an engine error that says a node went away or lost its
// device data: a chain resumed after its node's copy completed meets it.
func isGone(err error) bool {
	return err != nil && (errors.Is(err, core.ErrStaleNode) || errors.Is(err, core.ErrInvalidArgument))
}

// jobFor returns the backup in flight over node id, or nil.
func (x *transfers) jobFor(id core.NodeID) *backupJob {
	for _, j := range x.jobs {
		if j.node == id {
			return j
		}
	}
	return nil
}

// backupChain executes a BackupKV of an insert: each node of the chain
// (ancestors first) is backed up in turn, each as one batch. A batch
// still in flight is queued with the rest of the chain, which continues
// once it completed. The first node the host has no room for, or whose
// backup fails, ends the chain (a backed-up node needs a backed-up
// parent). Only engine errors are returned: a backup that could not be
// made leaves everything as it was.
func (c *Controller) backupChain(chain []core.NodeID) error {
	for k := 0; k < len(chain); k++ {
		id := chain[k]
		if j := c.xfer.jobFor(id); j != nil {
			// Another chain is copying this node: let it finish first.
			c.xfer.remove(j)
			if err := c.finishJob(j); err != nil {
				return err
			}
		}
		if c.hy.swa != nil && len(c.xfer.jobs) > 0 {
			// SWA backups copy the window above their node, which other
			// backups in flight may copy too: settle them first.
			if err := c.drain(); err != nil {
				return err
			}
		}
		j, ok, err := c.startBackup(id)
		if err != nil || !ok {
			return err
		}
		if j == nil {
			continue // nothing to copy
		}
		j.rest = append(j.rest[:0], chain[k+1:]...)
		if !j.done.Done() {
			c.xfer.jobs = append(c.xfer.jobs, j)
			c.stats.TransfersQueued++
			return nil
		}
		j.rest = j.rest[:0]
		ok, err = c.finishBackup(j)
		c.xfer.recycle(j)
		if err != nil || !ok {
			return err
		}
	}
	return nil
}

// backupNode backs node id up and waits for the copy (write-back
// eviction, which demotes the node next). It reports whether the backup
// was made (false: no host room, or it failed and was rolled back).
func (c *Controller) backupNode(id core.NodeID) (bool, error) {
	if j := c.xfer.jobFor(id); j != nil {
		c.xfer.remove(j)
		if err := c.finishJob(j); err != nil {
			return false, err
		}
	}
	if c.hy.swa != nil && len(c.xfer.jobs) > 0 {
		if err := c.drain(); err != nil {
			return false, err
		}
	}
	j, ok, err := c.startBackup(id)
	if err != nil || !ok || j == nil {
		return ok, err
	}
	ok, err = c.finishBackup(j)
	c.xfer.recycle(j)
	return ok, err
}

// startBackup takes host room and host slots for node id's device data
// that has no host copy yet, locks the node and starts the batch. It
// returns the job (nil with ok: nothing to copy), or ok false when the
// host has no room or a pool or the transport refused (nothing changed).
func (c *Controller) startBackup(id core.NodeID) (*backupJob, bool, error) {
	h := c.ht
	var spec core.BackupSpec
	var err error
	for attempt := 0; ; attempt++ {
		if spec, err = c.eng.BackupSpec(id); err != nil {
			return nil, false, err
		}
		if spec.Empty() {
			return nil, true, nil
		}
		need := backupNeeds(spec)
		fits := true
		for comp, n := range need {
			if n > 0 && h.host[comp] == nil {
				return nil, false, fmt.Errorf("%w: backup of %v copies %s data, but the controller has no %s pools", ErrNoPool, id, core.Component(comp), core.Component(comp))
			}
			if n > 0 && h.host[comp].Available() < n {
				fits = false
			}
		}
		if fits {
			break
		}
		if attempt == 3 {
			c.stats.BackupsRefused++
			return nil, false, nil
		}
		// Host evictions may change the spec (the SWA runs of the window
		// above, a write-back host copy of the node itself): ask again.
		for comp, n := range need {
			if n == 0 {
				continue
			}
			room, err := c.hostRoom(core.Component(comp), n)
			if err != nil {
				return nil, false, err
			}
			if !room {
				c.stats.BackupsRefused++
				return nil, false, nil
			}
		}
	}
	need := backupNeeds(spec)
	j := c.xfer.newJob()
	j.node, j.full, j.host = id, spec.Full != nil, h.host
	var aerr error
	j.slots, j.got, aerr = takeSlots(&h.host, need, j.slots[:0])
	if aerr != nil {
		// A host Alloc failed: the backup is simply not made.
		c.stats.BackupsFailed++
		c.rollbackBackup(j, false)
		c.xfer.recycle(j)
		return nil, false, nil
	}
	// The batch: device sources (SWA translated through the mapping)
	// into the host slots, which the commit reports in the spec's shape.
	off := 0
	take := func(n int) []int32 { s := j.slots[off : off+n : off+n]; off += n; return s }
	j.commit = core.BackupCommit{Mamba: -1}
	if spec.Full != nil {
		j.src = append(j.src, spec.Full...)
		j.commit.Full = take(len(spec.Full))
	}
	for _, e := range spec.SWA {
		for _, f := range e.Slots {
			sw := c.hy.mapping(f)
			if sw < 0 {
				c.rollbackBackup(j, false)
				c.xfer.recycle(j)
				return nil, false, fmt.Errorf("%w: backup of SWA data over full slot %d of %v, which maps to no SWA slot", ErrSWAMapping, f, e.Node)
			}
			j.src = append(j.src, sw)
		}
		j.swa = append(j.swa, take(len(e.Slots)))
	}
	if len(spec.SWA) > 0 {
		j.commit.SWA = j.swa
	}
	if spec.Mamba >= 0 {
		j.src = append(j.src, spec.Mamba)
		j.commit.Mamba = take(1)[0]
	}
	// Segments over j.src, in the same order as the host slots.
	so := 0
	seg := func(comp core.Component, n int, dst []int32) {
		j.batch.Add(comp, Device, Host, j.src[so:so+n:so+n], dst)
		so += n
	}
	if j.commit.Full != nil {
		seg(core.Full, len(j.commit.Full), j.commit.Full)
	}
	if n := need[core.SWA]; n > 0 {
		seg(core.SWA, n, j.slots[len(j.commit.Full):len(j.commit.Full)+n])
	}
	if j.commit.Mamba >= 0 {
		seg(core.Mamba, 1, j.slots[len(j.slots)-1:])
	}
	// The lock keeps the sources in the tree until the commit.
	rc, err := c.eng.Lock(id, 0)
	if err != nil {
		c.rollbackBackup(j, false)
		c.xfer.recycle(j)
		return nil, false, err
	}
	j.lock = rc
	done, serr := c.xfer.tr.Start(&j.batch)
	if serr != nil {
		c.stats.BackupsFailed++
		err = c.rollbackBackup(j, true)
		c.xfer.recycle(j)
		return nil, false, err
	}
	c.stats.Transfers++
	j.done = done
	return j, true, nil
}

// rollbackBackup gives j's host slots back (poisoned: a failed batch may
// have written any of them) and releases its lock when it holds one.
func (c *Controller) rollbackBackup(j *backupJob, locked bool) error {
	err := giveBackSlots(j.slots, j.got, c.dropHost)
	if locked {
		err = errors.Join(err, c.eng.Unlock(j.node, j.lock, false))
	}
	return err
}

// finishBackup waits for j's batch and commits it, or rolls it back. It
// reports whether the backup was made; only engine errors are returned.
func (c *Controller) finishBackup(j *backupJob) (bool, error) {
	if err := j.done.Wait(); err != nil {
		c.stats.BackupsFailed++
		return false, c.rollbackBackup(j, true)
	}
	c.stats.BytesMoved += uint64(c.movedBytes(&j.batch))
	if err := c.eng.CommitBackup(j.node, j.commit); err != nil {
		// The tree changed while the copy was in flight (a split, another
		// backup of the window): the copy is not used.
		c.stats.BackupsStale++
		rerr := c.rollbackBackup(j, true)
		if errors.Is(err, core.ErrInvalidArgument) || errors.Is(err, core.ErrStaleNode) {
			return false, rerr
		}
		return false, errors.Join(err, rerr)
	}
	off := 0
	var err error
	for comp, n := range j.got {
		if n > 0 {
			err = errors.Join(err, c.ht.hold(core.Component(comp), j.slots[off:off+n]))
			off += n
		}
	}
	c.stats.Backups++
	c.stats.BackedUpTokens += uint64(len(j.commit.Full))
	if !c.ht.writeBack && j.full {
		// Write-through: the completed batch is the acknowledgement.
		c.ht.ack++
		ack := c.ht.ack
		ids, merr := c.eng.MarkWriteThroughPending([]core.NodeID{j.node}, ack)
		if merr == nil {
			merr = c.eng.FinishWriteThrough(slices.Clone(ids), ack)
		}
		if merr == nil {
			c.stats.WriteThroughs++
		}
		err = errors.Join(err, merr)
	}
	return true, errors.Join(err, c.eng.Unlock(j.node, j.lock, false))
}

// movedBytes is the number of slot bytes b copies.
func (c *Controller) movedBytes(b *Batch) int {
	n := 0
	for k := range b.Segments {
		s := &b.Segments[k]
		if p := c.pools.Pool(s.Component, s.From); p != nil {
			n += len(s.Src) * p.SlotBytes()
		}
	}
	return n
}

// copyNow runs one batch through the transport and waits for it: the
// copies that the call needs before it can go on.
func (c *Controller) copyNow(b *Batch) error {
	done, err := c.xfer.tr.Start(b)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrTransfer, err)
	}
	c.stats.Transfers++
	if err := done.Wait(); err != nil {
		return fmt.Errorf("%w: %w", ErrTransfer, err)
	}
	c.stats.BytesMoved += uint64(c.movedBytes(b))
	return nil
}

// copyOne copies slot src into slot dst of comp's device pool through the
// transport (a Mamba fork) and waits for it.
func (c *Controller) copyOne(comp core.Component, dst, src int32) error {
	b := &c.xfer.batch
	b.Reset()
	c.xfer.src = append(c.xfer.src[:0], src, dst)
	b.Add(comp, Device, Device, c.xfer.src[0:1:1], c.xfer.src[1:2:2])
	done, err := c.xfer.tr.Start(b)
	if err == nil {
		c.stats.Transfers++
		err = done.Wait()
	}
	b.Reset()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrTransfer, err)
	}
	return nil
}

// takeSlots allocates need[comp] slots from pools[comp] for each component
// in turn, appended to dst; backups (host pools) and load-backs (device
// pools) take their slots the same way. It stops at the first error;
// got[comp] counts what each component took, for giveBackSlots.
func takeSlots(pools *[3]Pool, need [3]int, dst []int32) (slots []int32, got [3]int, err error) {
	slots = dst
	for comp, n := range need {
		if n == 0 {
			continue
		}
		k := len(slots)
		if slots, err = pools[comp].Alloc(slots, n); err != nil {
			break
		}
		got[comp] = len(slots) - k
	}
	return slots, got, err
}

// giveBackSlots frees the slots takeSlots took, got[comp] of them per
// component in turn, through free (which differs for host and device
// pools); it tries every component and joins the errors.
func giveBackSlots(slots []int32, got [3]int, free func(comp core.Component, s []int32) error) error {
	off := 0
	var err error
	for comp, n := range got {
		if n > 0 {
			err = errors.Join(err, free(core.Component(comp), slots[off:off+n]))
			off += n
		}
	}
	return err
}

// dropHost frees host slots the controller took but the tree never got,
// poisoned with the canary (a failed batch may have written them).
func (c *Controller) dropHost(comp core.Component, slots []int32) error {
	return c.freeSlots(c.ht.host[comp], slots)
}
