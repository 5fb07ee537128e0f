//go:build cgo && linux

package cuda

import (
	"fmt"
	"time"

	"github.com/radixkv/radixkv/host/native"
)

var errClosed = native.ErrClosed

// slots is the part every CUDA pool shares: the layout and the slot
// accounting, which is host/native's page-granular allocator (a
// storage-less paged MemPool whose pages are the layout's pages:
// all-or-nothing Alloc and Free, double free and foreign slots detected),
// so a controller that allocates by page gets slots whose pages move in
// one copy each.
type slots struct {
	name   string
	dev    *Device
	lay    layout
	acct   *native.MemPool
	closed bool
	// Synchronous traffic of Read, Write and Copy (device pools).
	syncBytes, syncCalls uint64
	syncTime             time.Duration
}

func newSlots(name string, dev *Device, lay layout, capacity int) (slots, error) {
	if dev == nil {
		return slots{}, fmt.Errorf("%w: %s: nil device", native.ErrInvalidArgument, name)
	}
	if lay.rowBytes < 1 || lay.rows < 1 || lay.pageTokens < 1 {
		return slots{}, fmt.Errorf("%w: %s: layout of %d rows of %d bytes, %d slots a page", ErrGeometry, name, lay.rows, lay.rowBytes, lay.pageTokens)
	}
	if capacity < lay.pageTokens || capacity%lay.pageTokens != 0 {
		return slots{}, fmt.Errorf("%w: %s: capacity %d is not a positive number of %d-slot pages", ErrGeometry, name, capacity, lay.pageTokens)
	}
	if capacity > 1<<31-1 || uint64(capacity/lay.pageTokens)*uint64(lay.pageBytes()) > 1<<50 {
		return slots{}, fmt.Errorf("%w: %s: %d slots of %d bytes is too large", ErrGeometry, name, capacity, lay.slotBytes())
	}
	acct, err := native.NewPagedMemPool(capacity, 0, lay.pageTokens)
	if err != nil {
		return slots{}, err
	}
	return slots{name: name, dev: dev, lay: lay, acct: acct}, nil
}

func (p *slots) bytes() int { return p.acct.Capacity() / p.lay.pageTokens * p.lay.pageBytes() }

// Alloc appends n fresh slots to dst, all or none (native.ErrPoolExhausted).
func (p *slots) Alloc(dst []int32, n int) ([]int32, error) {
	if p.closed {
		return dst, fmt.Errorf("%w: %s", errClosed, p.name)
	}
	return p.acct.Alloc(dst, n)
}

// Free returns slots to the pool, all or none.
func (p *slots) Free(s []int32) error {
	if p.closed {
		return fmt.Errorf("%w: %s", errClosed, p.name)
	}
	return p.acct.Free(s)
}

// Allocated appends every allocated slot to dst in ascending order
// (native.SlotLister): a controller over CUDA pools needs it to take the
// slots of a lost tree back when it replaces a failed engine
// (native.Controller.ReplaceEngine).
func (p *slots) Allocated(dst []int32) ([]int32, error) {
	if p.closed {
		return dst, fmt.Errorf("%w: %s", errClosed, p.name)
	}
	return p.acct.Allocated(dst)
}

// Capacity is the number of slots.
func (p *slots) Capacity() int { return p.acct.Capacity() }

// Available is the number of free slots.
func (p *slots) Available() int {
	if p.closed {
		return 0
	}
	return p.acct.Available()
}

// SlotBytes is one slot's bytes: every row of one token (or one state).
func (p *slots) SlotBytes() int { return p.lay.slotBytes() }

// PageSize is the number of slots a page holds (and moves in one copy).
func (p *slots) PageSize() int { return p.lay.pageTokens }

// AllocPages appends the slots of n fresh whole pages to dst, all or none
// (native.PagedPool).
func (p *slots) AllocPages(dst []int32, n int) ([]int32, error) {
	if p.closed {
		return dst, fmt.Errorf("%w: %s", errClosed, p.name)
	}
	return p.acct.AllocPages(dst, n)
}

// FreePages frees whole pages, all or none (native.PagedPool).
func (p *slots) FreePages(s []int32) error {
	if p.closed {
		return fmt.Errorf("%w: %s", errClosed, p.name)
	}
	return p.acct.FreePages(s)
}

// AvailablePages is the number of whole pages free.
func (p *slots) AvailablePages() int {
	if p.closed {
		return 0
	}
	return p.acct.AvailablePages()
}

// Bytes is the pool's memory.
func (p *slots) Bytes() int { return p.bytes() }

// check validates that s is an allocated slot (the accounting pool's
// zero-byte Write does exactly that check).
func (p *slots) check(s int32) error {
	if p.closed {
		return fmt.Errorf("%w: %s", errClosed, p.name)
	}
	if err := p.acct.Write(s, nil); err != nil {
		return fmt.Errorf("%s: %w", p.name, err)
	}
	return nil
}

func (p *slots) checkLen(n int, verb string) error {
	if n > p.lay.slotBytes() {
		return fmt.Errorf("%w: %s: %s %d bytes, a slot has %d", native.ErrInvalidArgument, p.name, verb, n, p.lay.slotBytes())
	}
	return nil
}

// rowOps appends the copies between the first n bytes of slot s, seen as
// its rows one after another, and a packed buffer at addr.
func (p *slots) rowOps(ops copyBatch, kind int, base uint64, s int32, addr uint64, n int) copyBatch {
	l := p.lay
	full := n / l.rowBytes
	off := uint64(l.rowOff(s, 0))
	if full > 0 {
		if kind == kindHtoD {
			ops = append(ops, copyOp(kind, base+off, addr, l.rowBytes, full, l.pitch(), l.rowBytes))
		} else {
			ops = append(ops, copyOp(kind, addr, base+off, l.rowBytes, full, l.rowBytes, l.pitch()))
		}
	}
	if rest := n - full*l.rowBytes; rest > 0 {
		r := uint64(l.rowOff(s, full))
		a := addr + uint64(full*l.rowBytes)
		if kind == kindHtoD {
			ops = append(ops, copyOp(kind, base+r, a, rest, 1, rest, rest))
		} else {
			ops = append(ops, copyOp(kind, a, base+r, rest, 1, rest, rest))
		}
	}
	return ops
}

// DevicePool is a pool in device memory: Full KV, SWA KV (page-major, see
// Geometry) or Mamba states (one contiguous state a slot). It implements
// native.Pool; Read, Write and Copy are synchronous (through a pinned
// staging buffer), and batches between pools go through Pools.Start.
type DevicePool struct {
	slots
	mem *DeviceMem
}

// HostPool is a pool in pinned host memory (cuMemHostAlloc) with the
// layout of the device pool it backs, so a page moves in one copy. Read,
// Write and Copy touch host memory directly.
type HostPool struct {
	slots
	mem *HostMem
}

func newDevicePool(name string, dev *Device, lay layout, capacity int) (*DevicePool, error) {
	sl, err := newSlots(name, dev, lay, capacity)
	if err != nil {
		return nil, err
	}
	mem, err := dev.Alloc(sl.bytes(), name)
	if err != nil {
		return nil, err
	}
	return &DevicePool{slots: sl, mem: mem}, nil
}

func newHostPool(name string, dev *Device, lay layout, capacity int) (*HostPool, error) {
	sl, err := newSlots(name, dev, lay, capacity)
	if err != nil {
		return nil, err
	}
	mem, err := dev.AllocHost(sl.bytes(), name)
	if err != nil {
		return nil, err
	}
	return &HostPool{slots: sl, mem: mem}, nil
}

// NewKVPool allocates a device Full KV pool of tokens slots (whole pages
// of g.PageSize) laid out page-major.
// Errors: ErrGeometry, *Error (IsOutOfMemory when the device is full).
func NewKVPool(dev *Device, g Geometry, tokens int) (*DevicePool, error) {
	if err := g.Validate(); err != nil {
		return nil, err
	}
	return newDevicePool("device KV pool", dev, kvLayout(g, g.Layers), tokens)
}

// NewSWAPool allocates a device SWA KV pool: g.SWALayers layers of the
// same head shape.
func NewSWAPool(dev *Device, g Geometry, tokens int) (*DevicePool, error) {
	if err := g.Validate(); err != nil {
		return nil, err
	}
	if g.SWALayers < 1 {
		return nil, fmt.Errorf("%w: an SWA pool needs SWA layers (geometry has %d)", ErrGeometry, g.SWALayers)
	}
	return newDevicePool("device SWA pool", dev, kvLayout(g, g.SWALayers), tokens)
}

// NewStatePool allocates a device Mamba state pool of states slots of
// stateBytes bytes each.
func NewStatePool(dev *Device, stateBytes, states int) (*DevicePool, error) {
	return newDevicePool("device Mamba state pool", dev, stateLayout(stateBytes), states)
}

// NewHostKVPool allocates a pinned host Full KV pool with the device KV
// pool's layout.
func NewHostKVPool(dev *Device, g Geometry, tokens int) (*HostPool, error) {
	if err := g.Validate(); err != nil {
		return nil, err
	}
	return newHostPool("pinned host KV pool", dev, kvLayout(g, g.Layers), tokens)
}

// NewHostSWAPool allocates a pinned host SWA KV pool.
func NewHostSWAPool(dev *Device, g Geometry, tokens int) (*HostPool, error) {
	if err := g.Validate(); err != nil {
		return nil, err
	}
	if g.SWALayers < 1 {
		return nil, fmt.Errorf("%w: an SWA pool needs SWA layers (geometry has %d)", ErrGeometry, g.SWALayers)
	}
	return newHostPool("pinned host SWA pool", dev, kvLayout(g, g.SWALayers), tokens)
}

// NewHostStatePool allocates a pinned host Mamba state pool.
func NewHostStatePool(dev *Device, stateBytes, states int) (*HostPool, error) {
	return newHostPool("pinned host Mamba state pool", dev, stateLayout(stateBytes), states)
}

// count records one synchronous call of n bytes that started at t0.
func (p *DevicePool) count(t0 time.Time, n int) {
	p.syncTime += time.Since(t0)
	p.syncBytes += uint64(n)
	p.syncCalls++
}

// SyncStats returns the bytes, calls and time of the pool's synchronous
// Read, Write and Copy calls (staging copies and single-slot forks).
func (p *DevicePool) SyncStats() (bytes, calls uint64, d time.Duration) {
	return p.syncBytes, p.syncCalls, p.syncTime
}

// Ptr is the pool's device address.
func (p *DevicePool) Ptr() uint64 { return p.mem.ptr }

// Write copies data (at most SlotBytes, the slot's rows in order) into an
// allocated slot and waits for the copy.
func (p *DevicePool) Write(slot int32, data []byte) error {
	if err := p.check(slot); err != nil {
		return err
	}
	if err := p.checkLen(len(data), "writing"); err != nil {
		return err
	}
	if len(data) == 0 {
		return nil
	}
	st, err := p.dev.stage(len(data))
	if err != nil {
		return err
	}
	defer p.dev.mu.Unlock()
	defer p.count(time.Now(), len(data))
	copy(st.Bytes(), data)
	var buf [2]cCopy
	ops := p.rowOps(buf[:0], kindHtoD, p.mem.ptr, slot, st.addr(), len(data))
	if err := p.dev.syncS.issue(ops); err != nil {
		return fmt.Errorf("%s: writing slot %d: %w", p.name, slot, err)
	}
	if err := p.dev.syncS.Synchronize(); err != nil {
		return fmt.Errorf("%s: writing slot %d: %w", p.name, slot, err)
	}
	return nil
}

// Read copies the first len(dst) bytes of an allocated slot into dst.
func (p *DevicePool) Read(slot int32, dst []byte) error {
	if err := p.check(slot); err != nil {
		return err
	}
	if err := p.checkLen(len(dst), "reading"); err != nil {
		return err
	}
	if len(dst) == 0 {
		return nil
	}
	st, err := p.dev.stage(len(dst))
	if err != nil {
		return err
	}
	defer p.dev.mu.Unlock()
	defer p.count(time.Now(), len(dst))
	var buf [2]cCopy
	ops := p.rowOps(buf[:0], kindDtoH, p.mem.ptr, slot, st.addr(), len(dst))
	if err := p.dev.syncS.issue(ops); err != nil {
		return fmt.Errorf("%s: reading slot %d: %w", p.name, slot, err)
	}
	if err := p.dev.syncS.Synchronize(); err != nil {
		return fmt.Errorf("%s: reading slot %d: %w", p.name, slot, err)
	}
	copy(dst, st.Bytes())
	return nil
}

// Copy copies slot src to slot dst on the device (one 2D copy of the
// slot's rows) and waits for it: the Mamba fork.
func (p *DevicePool) Copy(dst, src int32) error {
	if err := p.check(dst); err != nil {
		return err
	}
	if err := p.check(src); err != nil {
		return err
	}
	if dst == src {
		return nil
	}
	defer p.count(time.Now(), p.lay.slotBytes())
	l := p.lay
	op := copyOp(kindDtoD, p.mem.ptr+uint64(l.rowOff(dst, 0)), p.mem.ptr+uint64(l.rowOff(src, 0)), l.rowBytes, l.rows, l.pitch(), l.pitch())
	if err := p.dev.syncS.issue(copyBatch{op}); err != nil {
		return fmt.Errorf("%s: copying slot %d to %d: %w", p.name, src, dst, err)
	}
	return p.dev.syncS.Synchronize()
}

// Close frees the device memory; later calls return native.ErrClosed.
func (p *DevicePool) Close() error {
	if p.closed {
		return nil
	}
	p.closed = true
	return p.mem.Free()
}

// row returns row r of slot s in host memory.
func (p *HostPool) row(s int32, r int) []byte {
	off := p.lay.rowOff(s, r)
	return p.mem.Bytes()[off : off+p.lay.rowBytes : off+p.lay.rowBytes]
}

// Write copies data into an allocated slot's rows.
func (p *HostPool) Write(slot int32, data []byte) error {
	if err := p.check(slot); err != nil {
		return err
	}
	if err := p.checkLen(len(data), "writing"); err != nil {
		return err
	}
	for r := 0; len(data) > 0; r++ {
		data = data[copy(p.row(slot, r), data):]
	}
	return nil
}

// Read copies the first len(dst) bytes of an allocated slot's rows.
func (p *HostPool) Read(slot int32, dst []byte) error {
	if err := p.check(slot); err != nil {
		return err
	}
	if err := p.checkLen(len(dst), "reading"); err != nil {
		return err
	}
	for r := 0; len(dst) > 0; r++ {
		dst = dst[copy(dst, p.row(slot, r)):]
	}
	return nil
}

// Copy copies slot src to slot dst.
func (p *HostPool) Copy(dst, src int32) error {
	if err := p.check(dst); err != nil {
		return err
	}
	if err := p.check(src); err != nil {
		return err
	}
	for r := 0; r < p.lay.rows; r++ {
		copy(p.row(dst, r), p.row(src, r))
	}
	return nil
}

// Close frees the pinned memory; later calls return native.ErrClosed.
func (p *HostPool) Close() error {
	if p.closed {
		return nil
	}
	p.closed = true
	return p.mem.Free()
}

var (
	_ native.PagedPool  = (*DevicePool)(nil)
	_ native.PagedPool  = (*HostPool)(nil)
	_ native.SlotLister = (*DevicePool)(nil)
	_ native.SlotLister = (*HostPool)(nil)
)
