package native

import (
	"fmt"
	"slices"

	"github.com/radixkv/radixkv/core"
)

// Pool is one slot allocator plus the storage behind it: a device pool
// (Full KV, SWA KV, Mamba states) or a host-memory pool of the host tier.
// Slots are the int32 indices the tree stores as node values; every slot
// holds SlotBytes bytes.
//
// A Pool is not safe for concurrent use; the Controller serialises every
// call under its mutex. Implementations outside this package (CUDA device
// pools, pinned host pools) satisfy the same interface.
//
// What may fail, and what the controller does about it (it survives
// every such failure with its accounting whole, so Audit keeps passing):
//   - Alloc may fail at any time (exhausted, a device out of memory); it
//     must then allocate nothing. The controller's call fails and changes
//     nothing (a backup is not made, a load-back is skipped).
//   - Free must be all-or-nothing. When it fails the controller keeps the
//     slots as its own, counted by Audit as being freed, and retries the
//     Free on later calls (Controller.Poll runs them at once).
//   - Write, Read and Copy may fail (I/O). A canary record that cannot be
//     written fails the call that filled the slot; a poison record that
//     cannot be written does not stop the slot's Free; a Read that fails
//     while the canary is checked is reported as that I/O error, never as
//     a canary mismatch.
//   - Copies between pools go through a Transport (see transfer.go),
//     which may fail or complete late; see its duties there.
type Pool interface {
	// Alloc appends n fresh slots to dst and returns the extended slice.
	// It takes all n or none: ErrPoolExhausted when fewer are free.
	Alloc(dst []int32, n int) ([]int32, error)
	// Free returns slots to the pool. It frees all of them or none:
	// ErrSlotRange or ErrSlotNotAllocated (double free, a slot listed
	// twice, a slot never allocated) leave the pool as it was.
	Free(slots []int32) error
	// Write copies data (at most SlotBytes bytes) to the start of an
	// allocated slot.
	Write(slot int32, data []byte) error
	// Read copies the first len(dst) bytes (at most SlotBytes) of an
	// allocated slot into dst.
	Read(slot int32, dst []byte) error
	// Copy copies the whole content of allocated slot src to allocated
	// slot dst.
	Copy(dst, src int32) error
	// Capacity is the number of slots the pool manages.
	Capacity() int
	// Available is the number of slots free to allocate.
	Available() int
	// SlotBytes is the size of one slot's storage.
	SlotBytes() int
	// Close releases the storage; later calls return ErrClosed. Closing
	// twice is not an error.
	Close() error
}

// Tier names where a pool's memory lives.
type Tier uint8

const (
	// Device is accelerator memory (or its CPU stand-in in tests).
	Device Tier = iota
	// Host is host memory, the backing tier of HiCache.
	Host

	numTiers = 2
)

// String returns "device" or "host".
func (t Tier) String() string {
	switch t {
	case Device:
		return "device"
	case Host:
		return "host"
	}
	return fmt.Sprintf("tier(%d)", uint8(t))
}

// Pools is the set of pools a Controller executes actions on, one per
// (component, tier). The Full device pool is required; the others are
// looked up when an action names them, so SWA, Mamba and host pools plug
// in without changing the controller's interface.
type Pools interface {
	// Pool returns the pool of component c on tier t, or nil when there
	// is none.
	Pool(c core.Component, t Tier) Pool
	// Close closes every pool in the set.
	Close() error
}

// PoolSet is the plain Pools implementation: a table of pools filled with
// Set.
type PoolSet struct {
	pools [numTiers][3]Pool
}

// NewPoolSet returns a set holding deviceFull as the Full device pool.
func NewPoolSet(deviceFull Pool) *PoolSet {
	s := &PoolSet{}
	s.pools[Device][core.Full] = deviceFull
	return s
}

// Set installs p as the pool of component c on tier t (nil removes it).
func (s *PoolSet) Set(c core.Component, t Tier, p Pool) error {
	if int(c) >= len(s.pools[0]) || t >= numTiers {
		return fmt.Errorf("%w: no pool position for %s on %s", ErrInvalidArgument, c, t)
	}
	s.pools[t][c] = p
	return nil
}

// Pool returns the pool of component c on tier t, or nil.
func (s *PoolSet) Pool(c core.Component, t Tier) Pool {
	if int(c) >= len(s.pools[0]) || t >= numTiers {
		return nil
	}
	return s.pools[t][c]
}

// Close closes every pool and returns the first error.
func (s *PoolSet) Close() error {
	var first error
	for t := range s.pools {
		for c := range s.pools[t] {
			if p := s.pools[t][c]; p != nil {
				if err := p.Close(); err != nil && first == nil {
					first = err
				}
			}
		}
	}
	return first
}

// slotPool is the allocator and storage logic shared by the CPU pools:
// a LIFO free list, an allocation bitmap, and a byte region of
// capacity*slotBytes.
type slotPool struct {
	name      string
	capacity  int
	slotBytes int
	free      []int32  // free slots; the top is handed out next
	used      []uint64 // allocation bitmap
	mem       []byte
	closed    bool
	unmap     func([]byte) error
}

func newSlotPool(name string, capacity, slotBytes int) (*slotPool, error) {
	if capacity < 0 || capacity > 1<<31-1 {
		return nil, fmt.Errorf("%w: %s capacity %d out of range [0, 2^31)", ErrInvalidArgument, name, capacity)
	}
	if slotBytes < 0 {
		return nil, fmt.Errorf("%w: %s slot size %d is negative", ErrInvalidArgument, name, slotBytes)
	}
	if slotBytes > 0 && capacity > 0 && capacity > int(^uint(0)>>1)/slotBytes {
		return nil, fmt.Errorf("%w: %s of %d slots of %d bytes overflows", ErrInvalidArgument, name, capacity, slotBytes)
	}
	p := &slotPool{
		name:      name,
		capacity:  capacity,
		slotBytes: slotBytes,
		free:      make([]int32, capacity),
		used:      make([]uint64, (capacity+63)/64),
	}
	// Hand out low slots first: the free list's top is slot 0.
	for k := range p.free {
		p.free[k] = int32(capacity - 1 - k)
	}
	return p, nil
}

func (p *slotPool) isUsed(s int32) bool { return p.used[s>>6]&(1<<(uint(s)&63)) != 0 }
func (p *slotPool) setUsed(s int32)     { p.used[s>>6] |= 1 << (uint(s) & 63) }
func (p *slotPool) clearUsed(s int32)   { p.used[s>>6] &^= 1 << (uint(s) & 63) }

func (p *slotPool) Alloc(dst []int32, n int) ([]int32, error) {
	if p.closed {
		return dst, fmt.Errorf("%w: %s", ErrClosed, p.name)
	}
	if n < 0 {
		return dst, fmt.Errorf("%w: %s: cannot allocate %d slots", ErrInvalidArgument, p.name, n)
	}
	if n > len(p.free) {
		return dst, fmt.Errorf("%w: %s: %d slots asked, %d of %d free", ErrPoolExhausted, p.name, n, len(p.free), p.capacity)
	}
	top := len(p.free)
	k := len(dst)
	dst = slices.Grow(dst, n)[:k+n]
	out, src := dst[k:], p.free[top-n:top]
	for i := range out {
		s := src[len(src)-1-i] // top of the free stack first
		p.used[s>>6] |= 1 << (uint(s) & 63)
		out[i] = s
	}
	p.free = p.free[:top-n]
	return dst, nil
}

// check validates that s is in range and allocated.
func (p *slotPool) check(s int32) error {
	if s < 0 || int(s) >= p.capacity {
		return fmt.Errorf("%w: %s: slot %d, capacity %d", ErrSlotRange, p.name, s, p.capacity)
	}
	if !p.isUsed(s) {
		return fmt.Errorf("%w: %s: slot %d is free (double free, or never allocated)", ErrSlotNotAllocated, p.name, s)
	}
	return nil
}

func (p *slotPool) Free(slots []int32) error {
	if p.closed {
		return fmt.Errorf("%w: %s", ErrClosed, p.name)
	}
	used, capacity := p.used, uint32(p.capacity)
	for k, s := range slots {
		// The fast path inlines check: in range and allocated.
		if uint32(s) >= capacity || used[s>>6]&(1<<(uint(s)&63)) == 0 {
			err := p.check(s)
			// Undo: every slot before k passed the check and was cleared
			// exactly once (a repeat fails at its second occurrence).
			for _, u := range slots[:k] {
				p.setUsed(u)
			}
			return err
		}
		used[s>>6] &^= 1 << (uint(s) & 63)
	}
	p.free = append(p.free, slots...)
	return nil
}

func (p *slotPool) span(s int32) []byte {
	off := int(s) * p.slotBytes
	return p.mem[off : off+p.slotBytes : off+p.slotBytes]
}

func (p *slotPool) Write(slot int32, data []byte) error {
	if p.closed {
		return fmt.Errorf("%w: %s", ErrClosed, p.name)
	}
	if err := p.check(slot); err != nil {
		return err
	}
	if len(data) > p.slotBytes {
		return fmt.Errorf("%w: %s: writing %d bytes into a slot of %d", ErrInvalidArgument, p.name, len(data), p.slotBytes)
	}
	copy(p.span(slot), data)
	return nil
}

func (p *slotPool) Read(slot int32, dst []byte) error {
	if p.closed {
		return fmt.Errorf("%w: %s", ErrClosed, p.name)
	}
	if err := p.check(slot); err != nil {
		return err
	}
	if len(dst) > p.slotBytes {
		return fmt.Errorf("%w: %s: reading %d bytes from a slot of %d", ErrInvalidArgument, p.name, len(dst), p.slotBytes)
	}
	copy(dst, p.span(slot))
	return nil
}

func (p *slotPool) Copy(dst, src int32) error {
	if p.closed {
		return fmt.Errorf("%w: %s", ErrClosed, p.name)
	}
	if err := p.check(dst); err != nil {
		return err
	}
	if err := p.check(src); err != nil {
		return err
	}
	copy(p.span(dst), p.span(src))
	return nil
}

// slotSpan is implemented by this package's pools: the bytes of an
// allocated slot, for copies between pools without a staging buffer.
type slotSpan interface {
	slotSpan(s int32) ([]byte, error)
}

func (p *slotPool) slotSpan(s int32) ([]byte, error) {
	if p.closed {
		return nil, fmt.Errorf("%w: %s", ErrClosed, p.name)
	}
	if err := p.check(s); err != nil {
		return nil, err
	}
	return p.span(s), nil
}

func (p *slotPool) Capacity() int  { return p.capacity }
func (p *slotPool) SlotBytes() int { return p.slotBytes }

func (p *slotPool) Available() int {
	if p.closed {
		return 0
	}
	return len(p.free)
}

func (p *slotPool) Close() error {
	if p.closed {
		return nil
	}
	p.closed = true
	mem := p.mem
	p.mem = nil
	if p.unmap != nil && mem != nil {
		if err := p.unmap(mem); err != nil {
			return fmt.Errorf("native: %s: unmapping %d bytes: %w", p.name, len(mem), err)
		}
	}
	return nil
}

// MemPool is a Pool whose storage is ordinary Go memory: the mock device
// pool of tests and CPU-only runs.
type MemPool struct{ slotPool }

// NewMemPool returns a pool of capacity slots of slotBytes bytes each
// (slotBytes may be 0 for an allocator without storage).
// Errors: ErrInvalidArgument.
func NewMemPool(capacity, slotBytes int) (*MemPool, error) {
	sp, err := newSlotPool("mem pool", capacity, slotBytes)
	if err != nil {
		return nil, err
	}
	sp.mem = make([]byte, capacity*slotBytes)
	return &MemPool{*sp}, nil
}

// MmapPool is a Pool whose storage is an anonymous private mapping of
// host memory, released by Close.
type MmapPool struct{ slotPool }

// NewMmapPool maps capacity*slotBytes bytes of host memory (slotBytes ≥
// 1) and returns a pool over it.
// Errors: ErrInvalidArgument, ErrMmapUnavailable (the platform has no
// mmap or the call failed; fall back to NewMemPool).
func NewMmapPool(capacity, slotBytes int) (*MmapPool, error) {
	if slotBytes < 1 || capacity < 1 {
		return nil, fmt.Errorf("%w: mmap pool needs at least one slot of at least one byte (got %d slots of %d bytes)", ErrInvalidArgument, capacity, slotBytes)
	}
	sp, err := newSlotPool("mmap pool", capacity, slotBytes)
	if err != nil {
		return nil, err
	}
	mem, err := mapAnon(capacity * slotBytes)
	if err != nil {
		return nil, err
	}
	sp.mem = mem
	sp.unmap = unmapAnon
	return &MmapPool{*sp}, nil
}

var (
	_ Pool  = (*MemPool)(nil)
	_ Pool  = (*MmapPool)(nil)
	_ Pools = (*PoolSet)(nil)
)
