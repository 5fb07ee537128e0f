package native

import (
	"errors"
	"fmt"

	"github.com/radixkv/radixkv/core"
)

// This file is the transfer seam: how the controller moves slot bytes
// between pools (device→host backups, host→device load-backs, copies
// inside one pool) in batches that may complete later. A pool set that
// can copy asynchronously (a CUDA pool on a stream, a test pool that
// delays or fails copies) implements Transport; any other Pools gets the
// synchronous CopyBatch, which completes before Start returns.

// ErrTransfer reports a batched copy that failed: Transport.Start refused
// it, or its Completion reported an error. The controller rolls the
// action back (a backup is not made, a load-back is abandoned) and
// returns the slots it took to their pools.
var ErrTransfer = errors.New("native: transfer failed")

// Segment is one run of a batch: for every k, the bytes of slot Src[k]
// of component Component's pool on tier From are copied into slot Dst[k]
// of that component's pool on tier To (From == To copies inside one pool,
// as a Mamba fork does). len(Src) == len(Dst).
type Segment struct {
	Component core.Component
	From, To  Tier
	Src, Dst  []int32
}

// Batch is the copies one controller action needs (one node's backup,
// one load-back, one state fork), started with a single Transport.Start.
// The segments are independent: a transport may run them in any order
// or concurrently, since no slot is the destination of two copies and no
// destination is also a source.
type Batch struct {
	Segments []Segment
}

// Slots returns the number of slot copies in b.
func (b *Batch) Slots() int {
	n := 0
	for k := range b.Segments {
		n += len(b.Segments[k].Src)
	}
	return n
}

// Reset empties b, keeping its storage for the next batch.
func (b *Batch) Reset() {
	clear(b.Segments)
	b.Segments = b.Segments[:0]
}

// Add appends a segment (the slices are referenced, not copied).
func (b *Batch) Add(comp core.Component, from, to Tier, src, dst []int32) {
	b.Segments = append(b.Segments, Segment{Component: comp, From: from, To: to, Src: src, Dst: dst})
}

// Validate checks b's shape: known components and tiers, equal lengths,
// no negative slot, no slot written twice and no slot both read and
// written within one (component, tier). A test transport should refuse a
// batch that fails it (Start returns the error, nothing is copied).
func (b *Batch) Validate() error {
	if err := b.checkShape(); err != nil {
		return err
	}
	type key struct {
		comp core.Component
		tier Tier
		slot int32
	}
	written := make(map[key]bool, b.Slots())
	for k := range b.Segments {
		s := &b.Segments[k]
		for _, d := range s.Dst {
			if written[key{s.Component, s.To, d}] {
				return fmt.Errorf("%w: %s %s slot %d is written twice", ErrInvalidArgument, s.Component, s.To, d)
			}
			written[key{s.Component, s.To, d}] = true
		}
	}
	for k := range b.Segments {
		s := &b.Segments[k]
		for _, r := range s.Src {
			if written[key{s.Component, s.From, r}] {
				return fmt.Errorf("%w: %s %s slot %d is both read and written", ErrInvalidArgument, s.Component, s.From, r)
			}
		}
	}
	return nil
}

// checkShape is Validate without the overlap checks: linear, no memory.
func (b *Batch) checkShape() error {
	for k := range b.Segments {
		s := &b.Segments[k]
		if int(s.Component) >= 3 || s.From >= numTiers || s.To >= numTiers {
			return fmt.Errorf("%w: segment %d: component %s from %s to %s", ErrInvalidArgument, k, s.Component, s.From, s.To)
		}
		if len(s.Src) != len(s.Dst) {
			return fmt.Errorf("%w: segment %d: %d sources for %d destinations", ErrInvalidArgument, k, len(s.Src), len(s.Dst))
		}
		for i, d := range s.Dst {
			if d < 0 || s.Src[i] < 0 {
				return fmt.Errorf("%w: segment %d: negative slot", ErrInvalidArgument, k)
			}
		}
	}
	return nil
}

// Completion is the outcome of a started batch, like a CUDA event: the
// controller polls it between calls and waits on it when a request needs
// the data now.
//
// Duties of an implementation:
//   - Done never blocks. Once it has returned true it keeps returning
//     true, and Wait returns at once with the final result.
//   - Wait blocks until the batch has finished and returns nil when every
//     copy of the batch completed, or an error (wrapping ErrTransfer is
//     good practice) when any did not. Wait may be called more than once.
//   - The batch may finish on any goroutine (a stream callback, a worker):
//     Done and Wait must be safe to call concurrently with that.
type Completion interface {
	Done() bool
	Wait() error
}

// Transport starts batched copies between the pools of a Pools set. A
// Pools that implements Transport is used by the controller for every
// copy between pools; any other gets CopyBatch, which copies before it
// returns.
//
// The host's duties, in the manner of raft's Ready (the controller keeps
// its side, listed below, so that a transport never needs a lock of its
// own on the pools):
//
//  1. Start either starts the whole batch and returns its Completion, or
//     returns an error and copies nothing (no Completion follows).
//  2. A started batch copies exactly its segments: it writes only the
//     Dst slots and reads only the Src slots, through the pools Pools
//     returns for the segments' (component, tier).
//  3. Batches may complete in any order relative to each other, and
//     later than Start returns. Until its Completion reports done, a
//     batch may keep referencing b's slices; the controller does not
//     modify them.
//  4. A failed batch may have written any subset of its Dst slots (and
//     nothing else). The controller treats their bytes as garbage and
//     gives the slots back.
//  5. A transport must not call the Controller (its mutex may be held
//     while Start or Wait run).
//
// The controller's side: between Start and the Completion reporting done
// it never frees or writes any slot the batch names and never reads a
// destination (a source may be read: it does not change), and the tree
// cannot evict them (sources stay locked, destinations are not in the
// tree yet). It commits what a batch copied to the tree only
// after the batch completed without error; a failed batch is rolled back
// (no backup recorded, the load-back abandoned, destination slots
// returned to their pools).
type Transport interface {
	Start(b *Batch) (Completion, error)
}

// Done is a Completion that has already finished with Err; synchronous
// transports return it. The zero value is a success.
type Done struct{ Err error }

// Done reports true.
func (d Done) Done() bool { return true }

// Wait returns d.Err.
func (d Done) Wait() error { return d.Err }

// CopyBatch copies every segment of b between the pools of pools before
// it returns: the synchronous transport of memory pools, and what test
// transports call when they let a batch complete. It validates b first.
// Pools of this package copy slot to slot without staging; other pools
// go through Read and Write with buf as the staging buffer (grown as
// needed and returned for reuse). On error some Dst slots may have been
// written.
// Errors: ErrInvalidArgument (malformed batch), ErrNoPool, pool errors
// (each wrapped in ErrTransfer).
func CopyBatch(pools Pools, b *Batch, buf []byte) ([]byte, error) {
	if err := b.checkShape(); err != nil {
		return buf, err
	}
	for k := range b.Segments {
		s := &b.Segments[k]
		from, to := pools.Pool(s.Component, s.From), pools.Pool(s.Component, s.To)
		if from == nil || to == nil {
			return buf, fmt.Errorf("%w: no %s pool from %s to %s", ErrNoPool, s.Component, s.From, s.To)
		}
		var err error
		if buf, err = copySlots(to, s.Dst, from, s.Src, buf); err != nil {
			return buf, fmt.Errorf("%w: %s %s to %s: %w", ErrTransfer, s.Component, s.From, s.To, err)
		}
	}
	return buf, nil
}

// copySlots copies src[k] of from into dst[k] of to for every k.
func copySlots(to Pool, dst []int32, from Pool, src []int32, buf []byte) ([]byte, error) {
	n := min(from.SlotBytes(), to.SlotBytes())
	if n == 0 {
		return buf, nil
	}
	fs, ok1 := from.(slotSpan)
	ts, ok2 := to.(slotSpan)
	if ok1 && ok2 {
		for k, s := range src {
			a, err := fs.slotSpan(s)
			if err != nil {
				return buf, err
			}
			d, err := ts.slotSpan(dst[k])
			if err != nil {
				return buf, err
			}
			copy(d[:n], a[:n])
		}
		return buf, nil
	}
	if from == to {
		for k, s := range src {
			if err := from.Copy(dst[k], s); err != nil {
				return buf, err
			}
		}
		return buf, nil
	}
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	for k, s := range src {
		if err := from.Read(s, buf); err != nil {
			return buf, err
		}
		if err := to.Write(dst[k], buf); err != nil {
			return buf, err
		}
	}
	return buf, nil
}

// syncTransport is the Transport of a Pools that has none: CopyBatch.
type syncTransport struct {
	pools Pools
	buf   []byte
}

func (t *syncTransport) Start(b *Batch) (Completion, error) {
	var err error
	if t.buf, err = CopyBatch(t.pools, b, t.buf); err != nil {
		return Done{Err: err}, nil
	}
	return doneOK, nil
}

// doneOK is a finished success, boxed once.
var doneOK Completion = Done{}

// transportOf returns pools' own Transport, or the synchronous one.
func transportOf(pools Pools) Transport {
	if t, ok := pools.(Transport); ok {
		return t
	}
	return &syncTransport{pools: pools}
}

// PagedPool is a Pool that hands out whole pages of PageSize contiguous
// slots: page p is slots [p*PageSize, (p+1)*PageSize). The tree's values
// stay slot indices; a host that allocates by page writes indices for
// its tokens and does one free-list step per page, as paged KV
// allocators do. Alloc and Free of single slots remain available (a page
// is then split), so a PagedPool serves every caller of Pool.
type PagedPool interface {
	Pool
	// PageSize is the number of slots of one page (≥ 1).
	PageSize() int
	// AllocPages appends the slots of n fresh pages to dst, page by page
	// in ascending slot order, all n or none (ErrPoolExhausted).
	AllocPages(dst []int32, n int) ([]int32, error)
	// FreePages frees whole pages: slots must list every slot of each
	// page, in ascending order, page after page. All or nothing:
	// ErrInvalidArgument (not whole pages), ErrSlotRange,
	// ErrSlotNotAllocated (a slot free already, a page listed twice)
	// leave the pool as it was.
	FreePages(slots []int32) error
	// AvailablePages is the number of whole pages free to allocate.
	AvailablePages() int
}
