//go:build cgo && linux

package cuda

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"os"
	"sync"
	"unsafe"
)

// Available reports whether this build can load a driver at all (cgo on
// Linux); without it every constructor returns ErrNoDriver.
const Available = true

// DefaultLibrary is the driver library Load opens; the RADIXKV_LIBCUDA
// environment variable names another path.
const DefaultLibrary = "libcuda.so.1"

// Driver is a loaded CUDA driver (or the fake): the shim's function table.
// It is safe for concurrent use.
type Driver struct {
	t       *C.rkv_cu
	path    string
	fake    bool
	version int
}

// Load opens the CUDA driver: DefaultLibrary, or the path in
// RADIXKV_LIBCUDA. Errors: ErrNoDriver (the library or one of its entry
// points is missing), an *Error from cuInit.
func Load() (*Driver, error) {
	path := DefaultLibrary
	if p := os.Getenv("RADIXKV_LIBCUDA"); p != "" {
		path = p
	}
	return LoadFrom(path)
}

// LoadFrom opens the driver library at path (a name the dynamic loader
// resolves, or a file path).
func LoadFrom(path string) (*Driver, error) {
	t := (*C.rkv_cu)(C.calloc(1, C.sizeof_rkv_cu))
	if t == nil {
		return nil, fmt.Errorf("%w: out of memory for the function table", ErrNoDriver)
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var msg [512]C.char
	if C.rkv_load(t, cpath, &msg[0], C.size_t(len(msg))) != 0 {
		C.free(unsafe.Pointer(t))
		return nil, fmt.Errorf("%w: looked for the CUDA driver library %s and its driver API entry points: %s",
			ErrNoDriver, path, C.GoString(&msg[0]))
	}
	return initDriver(t, path, false)
}

func initDriver(t *C.rkv_cu, path string, fake bool) (*Driver, error) {
	d := &Driver{t: t, path: path, fake: fake}
	if err := d.check("cuInit", C.rkv_init(t), "initialising the driver from "+path); err != nil {
		d.release()
		return nil, err
	}
	var v C.int
	if err := d.check("cuDriverGetVersion", C.rkv_driver_version(t, &v), ""); err != nil {
		d.release()
		return nil, err
	}
	d.version = int(v)
	return d, nil
}

func (d *Driver) release() {
	if d.t != nil {
		if !d.fake {
			C.rkv_unload(d.t)
		}
		C.free(unsafe.Pointer(d.t))
		d.t = nil
	}
}

// check turns a driver status into an *Error named by the driver.
func (d *Driver) check(op string, r C.rkv_result, info string) error {
	if r == 0 {
		return nil
	}
	name := ""
	if n := C.rkv_error_name(d.t, r); n != nil {
		name = C.GoString(n)
	}
	return newError(op, Result(r), name, info)
}

// Path is the library the driver was loaded from ("fake" for the fake).
func (d *Driver) Path() string { return d.path }

// Version is the driver's CUDA version, e.g. 12040 for 12.4.
func (d *Driver) Version() int { return d.version }

// Fake reports whether this is the fake driver.
func (d *Driver) Fake() bool { return d.fake }

// DeviceCount returns the number of CUDA devices.
func (d *Driver) DeviceCount() (int, error) {
	var n C.int
	if err := d.check("cuDeviceGetCount", C.rkv_device_count(d.t, &n), ""); err != nil {
		return 0, err
	}
	return int(n), nil
}

// Device is one GPU with its primary context retained, and the streams
// the pools copy on: one non-blocking stream each for device-to-host,
// host-to-device and device-to-device transfers, and one for the
// synchronous Read/Write/Copy calls of the pools. It is safe for
// concurrent use.
type Device struct {
	drv      *Driver
	ordinal  int
	dev      C.rkv_device
	ctx      C.rkv_context
	name     string
	totalMem uint64

	d2h, h2d, d2d, syncS *Stream

	mu      sync.Mutex // guards staging and the closed flag
	staging *HostMem
	closed  bool

	kmu    sync.Mutex // guards the kernel's module
	module C.rkv_module
	kernel C.rkv_function
	kerr   error
}

// Open retains device ordinal's primary context and creates its streams.
// Errors: ErrNoDevice (no such device; the message says how many there
// are), *Error.
func (d *Driver) Open(ordinal int) (*Device, error) {
	n, err := d.DeviceCount()
	if err != nil {
		if e, ok := err.(*Error); ok && e.Code == NoDevice {
			return nil, fmt.Errorf("%w: the driver at %s reports no CUDA device (%v)", ErrNoDevice, d.path, err)
		}
		return nil, err
	}
	if ordinal < 0 || ordinal >= n {
		return nil, fmt.Errorf("%w: device %d asked for, the driver at %s has %d", ErrNoDevice, ordinal, d.path, n)
	}
	dv := &Device{drv: d, ordinal: ordinal}
	var name [256]C.char
	var total C.size_t
	if err := d.check("cuDeviceGet/cuDevicePrimaryCtxRetain", C.rkv_device_open(d.t, C.int(ordinal), &dv.dev, &dv.ctx, &name[0], C.int(len(name)), &total),
		fmt.Sprintf("opening device %d", ordinal)); err != nil {
		return nil, err
	}
	dv.name = C.GoString(&name[0])
	dv.totalMem = uint64(total)
	for _, s := range []**Stream{&dv.d2h, &dv.h2d, &dv.d2d, &dv.syncS} {
		if *s, err = dv.NewStream(); err != nil {
			dv.Close()
			return nil, err
		}
	}
	return dv, nil
}

func (dv *Device) check(op string, r C.rkv_result, info string) error {
	return dv.drv.check(op, r, info)
}

// Name is the device's name as the driver reports it.
func (dv *Device) Name() string { return dv.name }

// Ordinal is the device index.
func (dv *Device) Ordinal() int { return dv.ordinal }

// TotalMem is the device's memory in bytes.
func (dv *Device) TotalMem() uint64 { return dv.totalMem }

// Driver is the driver the device was opened with.
func (dv *Device) Driver() *Driver { return dv.drv }

// MemInfo returns the device's free and total memory.
func (dv *Device) MemInfo() (free, total uint64, err error) {
	var f, t C.size_t
	if err := dv.check("cuMemGetInfo_v2", C.rkv_mem_info(dv.drv.t, dv.ctx, &f, &t), ""); err != nil {
		return 0, 0, err
	}
	return uint64(f), uint64(t), nil
}

// Close destroys the streams and the kernel module and releases the
// primary context. Memory allocated on the device must be freed first.
// Closing twice is not an error.
func (dv *Device) Close() error {
	dv.mu.Lock()
	if dv.closed {
		dv.mu.Unlock()
		return nil
	}
	dv.closed = true
	st := dv.staging
	dv.staging = nil
	dv.mu.Unlock()
	var first error
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	if st != nil {
		keep(st.Free())
	}
	dv.kmu.Lock()
	if dv.module != nil {
		keep(dv.check("cuModuleUnload", C.rkv_module_unload(dv.drv.t, dv.ctx, dv.module), ""))
		dv.module = nil
	}
	dv.kmu.Unlock()
	for _, s := range []*Stream{dv.d2h, dv.h2d, dv.d2d, dv.syncS} {
		if s != nil {
			keep(s.Destroy())
		}
	}
	keep(dv.check("cuDevicePrimaryCtxRelease_v2", C.rkv_device_close(dv.drv.t, dv.dev), ""))
	return first
}

// DeviceMem is a block of device memory (cuMemAlloc).
type DeviceMem struct {
	dev  *Device
	ptr  uint64
	size int
}

// Alloc allocates size bytes of device memory. Errors: *Error
// (CUDA_ERROR_OUT_OF_MEMORY when the device is full; IsOutOfMemory).
func (dv *Device) Alloc(size int, what string) (*DeviceMem, error) {
	if size <= 0 {
		return nil, fmt.Errorf("%w: allocating %d bytes for %s", ErrGeometry, size, what)
	}
	var p C.rkv_dptr
	if err := dv.check("cuMemAlloc_v2", C.rkv_mem_alloc(dv.drv.t, dv.ctx, &p, C.size_t(size)),
		fmt.Sprintf("%s of %s on device %d", what, FormatBytes(float64(size)), dv.ordinal)); err != nil {
		return nil, err
	}
	return &DeviceMem{dev: dv, ptr: uint64(p), size: size}, nil
}

// Ptr is the device address.
func (m *DeviceMem) Ptr() uint64 { return m.ptr }

// Size is the block's size in bytes.
func (m *DeviceMem) Size() int { return m.size }

// Free releases the block; freeing twice is not an error.
func (m *DeviceMem) Free() error {
	if m.ptr == 0 {
		return nil
	}
	err := m.dev.check("cuMemFree_v2", C.rkv_mem_free(m.dev.drv.t, m.dev.ctx, C.rkv_dptr(m.ptr)), "")
	m.ptr = 0
	return err
}

// HostMem is a block of pinned, device-mapped host memory (cuMemHostAlloc
// with CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP).
type HostMem struct {
	dev  *Device
	ptr  unsafe.Pointer // C memory, never moved by Go
	dptr uint64         // its device address, for kernels
	size int
}

const hostAllocFlags = 0x01 | 0x02 // PORTABLE | DEVICEMAP

// AllocHost allocates size bytes of pinned host memory.
func (dv *Device) AllocHost(size int, what string) (*HostMem, error) {
	if size <= 0 {
		return nil, fmt.Errorf("%w: allocating %d pinned bytes for %s", ErrGeometry, size, what)
	}
	var p unsafe.Pointer
	if err := dv.check("cuMemHostAlloc", C.rkv_host_alloc(dv.drv.t, dv.ctx, &p, C.size_t(size), hostAllocFlags),
		fmt.Sprintf("%s of %s pinned host memory", what, FormatBytes(float64(size)))); err != nil {
		return nil, err
	}
	m := &HostMem{dev: dv, ptr: p, size: size}
	var d C.rkv_dptr
	if err := dv.check("cuMemHostGetDevicePointer_v2", C.rkv_host_device_ptr(dv.drv.t, dv.ctx, &d, p), what); err != nil {
		m.Free()
		return nil, err
	}
	m.dptr = uint64(d)
	return m, nil
}

// Bytes is the block as a Go slice (valid until Free).
func (m *HostMem) Bytes() []byte {
	if m.ptr == nil {
		return nil
	}
	return unsafe.Slice((*byte)(m.ptr), m.size)
}

// Size is the block's size in bytes.
func (m *HostMem) Size() int { return m.size }

func (m *HostMem) addr() uint64 { return uint64(uintptr(m.ptr)) }

// Free releases the block; freeing twice is not an error.
func (m *HostMem) Free() error {
	if m.ptr == nil {
		return nil
	}
	err := m.dev.check("cuMemFreeHost", C.rkv_host_free(m.dev.drv.t, m.dev.ctx, m.ptr), "")
	m.ptr = nil
	return err
}

// Stream is a non-blocking CUDA stream (CU_STREAM_NON_BLOCKING).
type Stream struct {
	dev *Device
	s   C.rkv_stream
}

// NewStream creates a non-blocking stream.
func (dv *Device) NewStream() (*Stream, error) {
	s := &Stream{dev: dv}
	if err := dv.check("cuStreamCreate", C.rkv_stream_create(dv.drv.t, dv.ctx, &s.s, 1), ""); err != nil {
		return nil, err
	}
	return s, nil
}

// Synchronize waits for every operation issued on s.
func (s *Stream) Synchronize() error {
	return s.dev.check("cuStreamSynchronize", C.rkv_stream_sync(s.dev.drv.t, s.dev.ctx, s.s), "")
}

// Destroy destroys the stream (after its work finishes).
func (s *Stream) Destroy() error {
	if s.s == nil {
		return nil
	}
	err := s.dev.check("cuStreamDestroy_v2", C.rkv_stream_destroy(s.dev.drv.t, s.dev.ctx, s.s), "")
	s.s = nil
	return err
}

// issue hands a batch of copies to the driver in one cgo call. On error
// the copies before the failing one were issued.
func (s *Stream) issue(ops []C.rkv_copy) error {
	if len(ops) == 0 {
		return nil
	}
	var failed C.int
	r := C.rkv_copy_batch(s.dev.drv.t, s.dev.ctx, s.s, &ops[0], C.int(len(ops)), &failed)
	if r == 0 {
		return nil
	}
	o := ops[int(failed)]
	op := "cuMemcpyAsync"
	if o.rows > 1 {
		op = "cuMemcpy2DAsync_v2"
	}
	return s.dev.check(op, r, fmt.Sprintf("copy %d of a batch of %d (%d × %d bytes, %s)",
		int(failed)+1, len(ops), uint64(o.rows), uint64(o.width), [...]string{"host to device", "device to host", "device to device"}[o.kind]))
}

// memset fills n bytes at device address p with v, asynchronously.
func (s *Stream) memset(p uint64, v byte, n int) error {
	return s.dev.check("cuMemsetD8Async", C.rkv_memset_async(s.dev.drv.t, s.dev.ctx, C.rkv_dptr(p), C.uchar(v), C.size_t(n), s.s), "")
}

// Event is a CUDA event created with CU_EVENT_DISABLE_TIMING.
type Event struct {
	dev *Device
	e   C.rkv_event
}

// NewEvent creates an event without timing (timing: with it, for
// ElapsedMs).
func (dv *Device) NewEvent(timing bool) (*Event, error) {
	flags := C.uint(0x2) // CU_EVENT_DISABLE_TIMING
	if timing {
		flags = 0
	}
	e := &Event{dev: dv}
	if err := dv.check("cuEventCreate", C.rkv_event_create(dv.drv.t, dv.ctx, &e.e, flags), ""); err != nil {
		return nil, err
	}
	return e, nil
}

// Record captures the work issued on s so far.
func (e *Event) Record(s *Stream) error {
	return e.dev.check("cuEventRecord", C.rkv_event_record(e.dev.drv.t, e.dev.ctx, e.e, s.s), "")
}

// Query reports whether the captured work has finished, without blocking;
// an error of the work (or the query) is returned with done true.
func (e *Event) Query() (done bool, err error) {
	r := C.rkv_event_query(e.dev.drv.t, e.dev.ctx, e.e)
	if Result(r) == NotReady {
		return false, nil
	}
	return true, e.dev.check("cuEventQuery", r, "")
}

// Synchronize blocks until the captured work has finished.
func (e *Event) Synchronize() error {
	return e.dev.check("cuEventSynchronize", C.rkv_event_sync(e.dev.drv.t, e.dev.ctx, e.e), "")
}

// ElapsedMs is the time between two recorded timing events.
func (e *Event) ElapsedMs(start *Event) (float32, error) {
	var ms C.float
	if err := e.dev.check("cuEventElapsedTime", C.rkv_event_elapsed(e.dev.drv.t, e.dev.ctx, &ms, start.e, e.e), ""); err != nil {
		return 0, err
	}
	return float32(ms), nil
}

// Destroy destroys the event.
func (e *Event) Destroy() error {
	if e.e == nil {
		return nil
	}
	err := e.dev.check("cuEventDestroy_v2", C.rkv_event_destroy(e.dev.drv.t, e.dev.ctx, e.e), "")
	e.e = nil
	return err
}

// stage returns a pinned staging buffer of at least n bytes with dv.mu
// held; the caller unlocks.
func (dv *Device) stage(n int) (*HostMem, error) {
	dv.mu.Lock()
	if dv.closed {
		dv.mu.Unlock()
		return nil, fmt.Errorf("%w: device %d", errClosed, dv.ordinal)
	}
	if dv.staging == nil || dv.staging.size < n {
		if dv.staging != nil {
			if err := dv.staging.Free(); err != nil {
				dv.mu.Unlock()
				return nil, err
			}
			dv.staging = nil
		}
		m, err := dv.AllocHost(max(n, 64<<10), "staging buffer")
		if err != nil {
			dv.mu.Unlock()
			return nil, err
		}
		dv.staging = m
	}
	return dv.staging, nil
}

// loadKernel loads the page copy kernel's PTX once.
func (dv *Device) loadKernel() (C.rkv_function, error) {
	dv.kmu.Lock()
	defer dv.kmu.Unlock()
	if dv.kernel != nil || dv.kerr != nil {
		return dv.kernel, dv.kerr
	}
	img := C.CString(CopyPagesPTX)
	defer C.free(unsafe.Pointer(img))
	if err := dv.check("cuModuleLoadData", C.rkv_module_load(dv.drv.t, dv.ctx, &dv.module, img), "the page copy kernel's PTX"); err != nil {
		dv.kerr = fmt.Errorf("%w: %w", ErrKernel, err)
		return nil, dv.kerr
	}
	name := C.CString(CopyPagesKernel)
	defer C.free(unsafe.Pointer(name))
	if err := dv.check("cuModuleGetFunction", C.rkv_module_function(dv.drv.t, dv.ctx, &dv.kernel, dv.module, name), CopyPagesKernel); err != nil {
		dv.kerr = fmt.Errorf("%w: %w", ErrKernel, err)
		return nil, dv.kerr
	}
	return dv.kernel, nil
}

// launchCopyPages runs the page copy kernel on s: page dstPages[i] of
// dst gets page srcPages[i] of src for i < n, pages of pageBytes (a
// multiple of 16); the page lists are device-visible u32 arrays.
func (dv *Device) launchCopyPages(s *Stream, dst, src, dstPages, srcPages uint64, pageBytes, n int) error {
	f, err := dv.loadKernel()
	if err != nil {
		return err
	}
	if pageBytes%16 != 0 || n <= 0 || n > 65535 {
		return fmt.Errorf("%w: %d pages of %d bytes (want 1..65535 pages of a multiple of 16 bytes)", ErrKernel, n, pageBytes)
	}
	words := pageBytes / 16
	gx := uint(min((words+255)/256, 64))
	return dv.check("cuLaunchKernel", C.rkv_launch_copy_pages(dv.drv.t, dv.ctx, f, C.uint(gx), C.uint(n), 256, s.s,
		C.rkv_dptr(dst), C.rkv_dptr(src), C.rkv_dptr(dstPages), C.rkv_dptr(srcPages), C.ulonglong(words), C.uint(n)), CopyPagesKernel)
}

// copyOp builds one copy of the batch format.
func copyOp(kind int, dst, src uint64, width, rows, dpitch, spitch int) C.rkv_copy {
	return C.rkv_copy{dst: C.ulonglong(dst), src: C.ulonglong(src), width: C.size_t(width), rows: C.size_t(rows),
		dpitch: C.size_t(dpitch), spitch: C.size_t(spitch), kind: C.int(kind)}
}

type copyBatch = []C.rkv_copy

// cCopy names the batch element outside cgo files.
type cCopy = C.rkv_copy

const (
	kindHtoD = 0
	kindDtoH = 1
	kindDtoD = 2
)
