// Package cuda is radixkv's GPU host: native.Pools on NVIDIA GPUs through
// cgo, with the CUDA driver loaded at run time.
//
// # Driver
//
// [Load] opens libcuda.so.1 with dlopen (RADIXKV_LIBCUDA names another
// path) and resolves the driver API entry points it needs with dlsym,
// under their versioned names (cuMemAlloc_v2, cuMemcpyDtoHAsync_v2, ...).
// The driver's types and functions are declared by hand in a small C shim
// (shim.h): no CUDA toolkit or header is needed to build, only a C
// compiler. Every call goes through the shim's function table. A missing
// library or entry point is [ErrNoDriver], a driver without the device asked
// for is [ErrNoDevice], each with a message naming what was looked for; a
// build with CGO_ENABLED=0 (or not on Linux) compiles the same API and
// returns ErrNoDriver from every constructor. Every failing CUresult
// becomes an [*Error] carrying the call, the code and the driver's name for
// it (cuGetErrorName, or this package's table); errors.Is(err, OutOfMemory)
// matches a code.
//
// [LoadFake] fills the same table with a fake driver written in C on host
// memory: allocations (with a device memory limit), streams whose copies
// queue and run late, events, the page copy kernel's semantics, and faults
// injected by count (out of memory, a copy refused mid-batch, a copy that
// fails while it runs). The tests run every path on it in CI; no figure it
// produces is a GPU figure.
//
// # Pools
//
// A [Geometry] (layers, KV heads, head dim, dtype bytes, page size; presets
// for common models, e.g. llama-3-8b at 128 KiB a token and llama-3-70b at
// 320 KiB) fixes the layout. KV pools are page-major: page p is one
// contiguous region holding every layer's K and V of its PageSize tokens,
// so a page moves in one copy and part of a page in one 2D copy (a row per
// layer and K/V). [NewKVPool] and [NewSWAPool] allocate device KV pools,
// [NewStatePool] Mamba state pools (one contiguous state a slot);
// [NewHostKVPool], [NewHostSWAPool] and [NewHostStatePool] pinned host pools
// (cuMemHostAlloc, mapped into the device's address space) with the same
// layouts. All of them are native.PagedPool: slot accounting is
// host/native's page-granular allocator with the layout's pages
// (all-or-nothing, double free and foreign slots detected), so a
// controller allocating by page gets pages that move in one copy; a
// device pool's Read, Write and Copy are synchronous copies through a pinned
// staging buffer (the KV canary's records travel that way), a host pool's
// touch host memory directly.
//
// # Transfers
//
// [Pools] is a native.Pools and a native.Transport, so the native
// controller sends every copy between pools through it. Start takes a
// native.Batch (an action's slot lists: backups device to host, load-backs
// host to device, Mamba forks device to device), checks it in linear time
// (shape, pools, every slot allocated, no slot written twice or both read
// and written, equal layouts), coalesces slots contiguous on both sides
// (ascending, or descending as a LIFO free list hands them back): whole
// pages into one cuMemcpyAsync, partial pages into one cuMemcpy2DAsync
// each. It issues each direction's copies in one cgo call on that
// direction's non-blocking stream and records an event after them. The
// Completion polls the events with cuEventQuery (Done) or waits with
// cuEventSynchronize (Wait), and may be used from any goroutine. A batch
// the driver refuses part way is synchronised before Start returns, so
// nothing of it is still running.
//
// With [CopyKernel] the scattered whole pages of a segment move with one
// launch of a gather/scatter kernel written as PTX text ([CopyPagesPTX],
// loaded with cuModuleLoadData, so no nvcc is needed), reading or writing
// pinned host pages through their device mapping. [CopyAuto] times both
// ways on the fresh pools and keeps the faster ([Pools.Calibration]). The
// PTX is checked for well-formedness by the tests here; only a GPU run
// (TestGPU_Kernel in scripts/gpu-check.sh) shows the driver accepts it.
//
// [Pools.Stats] counts batches, copy calls, kernels, bytes each way, the
// CUDA event time of the batches (PoolsConfig.Timing) and the synchronous
// slot traffic (canary records through the staging buffer).
//
// # Locking rules
//
// Drivers and Devices are safe for concurrent use. Pools serialises its own
// counters, events and buffers; the pools themselves follow native.Pool's
// rule (one caller at a time, the controller's mutex). Completions may be
// polled and waited on from any goroutine.
package cuda
