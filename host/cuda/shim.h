// The CUDA driver API as radixkv uses it, declared by hand: no CUDA toolkit
// or header is needed to build. Every driver type here is a plain integer or
// an opaque handle, and every entry point is reached through rkv_cu, a table
// of function pointers filled either from libcuda.so.1 (dlopen + dlsym of the
// versioned names) or by the fake driver in fake.c.

#ifndef RADIXKV_CUDA_SHIM_H
#define RADIXKV_CUDA_SHIM_H

#include <stddef.h>
#include <stdint.h>

typedef int rkv_result;            // CUresult
typedef int rkv_device;            // CUdevice
typedef void *rkv_context;         // CUcontext
typedef void *rkv_stream;          // CUstream
typedef void *rkv_event;           // CUevent
typedef void *rkv_module;          // CUmodule
typedef void *rkv_function;        // CUfunction
typedef unsigned long long rkv_dptr; // CUdeviceptr

enum {
	RKV_SUCCESS = 0,
	RKV_ERROR_INVALID_VALUE = 1,
	RKV_ERROR_OUT_OF_MEMORY = 2,
	RKV_ERROR_NOT_INITIALIZED = 3,
	RKV_ERROR_NO_DEVICE = 100,
	RKV_ERROR_INVALID_DEVICE = 101,
	RKV_ERROR_INVALID_PTX = 218,
	RKV_ERROR_INVALID_HANDLE = 400,
	RKV_ERROR_NOT_FOUND = 500,
	RKV_ERROR_NOT_READY = 600,
	RKV_ERROR_ILLEGAL_ADDRESS = 700,
	RKV_ERROR_LAUNCH_FAILED = 719,
};

// CUmemorytype
enum { RKV_MEM_HOST = 1, RKV_MEM_DEVICE = 2 };

// CUDA_MEMCPY2D (the _v2 layout: size_t offsets and pitches).
typedef struct {
	size_t srcXInBytes, srcY;
	int srcMemoryType;
	const void *srcHost;
	rkv_dptr srcDevice;
	void *srcArray;
	size_t srcPitch;
	size_t dstXInBytes, dstY;
	int dstMemoryType;
	void *dstHost;
	rkv_dptr dstDevice;
	void *dstArray;
	size_t dstPitch;
	size_t WidthInBytes, Height;
} rkv_memcpy2d;

typedef struct {
	void *lib; // dlopen handle, NULL for the fake
	rkv_result (*Init)(unsigned);
	rkv_result (*DriverGetVersion)(int *);
	rkv_result (*DeviceGetCount)(int *);
	rkv_result (*DeviceGet)(rkv_device *, int);
	rkv_result (*DeviceGetName)(char *, int, rkv_device);
	rkv_result (*DeviceTotalMem)(size_t *, rkv_device);
	rkv_result (*PrimaryCtxRetain)(rkv_context *, rkv_device);
	rkv_result (*PrimaryCtxRelease)(rkv_device);
	rkv_result (*CtxSetCurrent)(rkv_context);
	rkv_result (*MemGetInfo)(size_t *, size_t *);
	rkv_result (*MemAlloc)(rkv_dptr *, size_t);
	rkv_result (*MemFree)(rkv_dptr);
	rkv_result (*MemHostAlloc)(void **, size_t, unsigned);
	rkv_result (*MemFreeHost)(void *);
	rkv_result (*MemHostGetDevicePointer)(rkv_dptr *, void *, unsigned);
	rkv_result (*MemcpyHtoDAsync)(rkv_dptr, const void *, size_t, rkv_stream);
	rkv_result (*MemcpyDtoHAsync)(void *, rkv_dptr, size_t, rkv_stream);
	rkv_result (*MemcpyDtoDAsync)(rkv_dptr, rkv_dptr, size_t, rkv_stream);
	rkv_result (*Memcpy2DAsync)(const rkv_memcpy2d *, rkv_stream);
	rkv_result (*MemsetD8Async)(rkv_dptr, unsigned char, size_t, rkv_stream);
	rkv_result (*StreamCreate)(rkv_stream *, unsigned);
	rkv_result (*StreamDestroy)(rkv_stream);
	rkv_result (*StreamSynchronize)(rkv_stream);
	rkv_result (*EventCreate)(rkv_event *, unsigned);
	rkv_result (*EventDestroy)(rkv_event);
	rkv_result (*EventRecord)(rkv_event, rkv_stream);
	rkv_result (*EventQuery)(rkv_event);
	rkv_result (*EventSynchronize)(rkv_event);
	rkv_result (*EventElapsedTime)(float *, rkv_event, rkv_event);
	rkv_result (*ModuleLoadData)(rkv_module *, const void *);
	rkv_result (*ModuleUnload)(rkv_module);
	rkv_result (*ModuleGetFunction)(rkv_function *, rkv_module, const char *);
	rkv_result (*LaunchKernel)(rkv_function, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
	                           unsigned, rkv_stream, void **, void **);
	rkv_result (*GetErrorName)(rkv_result, const char **);
} rkv_cu;

// rkv_load fills t from the shared library at path. On failure it returns
// nonzero and writes a message naming what was looked for into err.
int rkv_load(rkv_cu *t, const char *path, char *err, size_t errlen);
void rkv_unload(rkv_cu *t);

// One copy of a batch. kind: 0 HtoD, 1 DtoH, 2 DtoD. rows == 1 is a plain
// copy of width bytes; rows > 1 is a 2D copy of rows rows of width bytes
// with the given pitches (cuMemcpy2DAsync).
typedef struct {
	unsigned long long dst, src; // device pointers or host addresses
	size_t width, rows, dpitch, spitch;
	int kind;
} rkv_copy;

// rkv_copy_batch issues n copies on stream s in order, with ctx current. It
// returns RKV_SUCCESS, or the first failing code with *failed set to the
// index of the copy that failed (copies before it were issued).
rkv_result rkv_copy_batch(rkv_cu *t, rkv_context ctx, rkv_stream s, const rkv_copy *ops, int n, int *failed);

// Thin calls through the table (cgo cannot call function pointers).
rkv_result rkv_init(rkv_cu *t);
rkv_result rkv_driver_version(rkv_cu *t, int *v);
rkv_result rkv_device_count(rkv_cu *t, int *n);
rkv_result rkv_device_open(rkv_cu *t, int ordinal, rkv_device *dev, rkv_context *ctx, char *name, int namelen,
                           size_t *total);
rkv_result rkv_device_close(rkv_cu *t, rkv_device dev);
rkv_result rkv_mem_info(rkv_cu *t, rkv_context ctx, size_t *free_, size_t *total);
rkv_result rkv_mem_alloc(rkv_cu *t, rkv_context ctx, rkv_dptr *p, size_t n);
rkv_result rkv_mem_free(rkv_cu *t, rkv_context ctx, rkv_dptr p);
rkv_result rkv_host_alloc(rkv_cu *t, rkv_context ctx, void **p, size_t n, unsigned flags);
rkv_result rkv_host_free(rkv_cu *t, rkv_context ctx, void *p);
rkv_result rkv_host_device_ptr(rkv_cu *t, rkv_context ctx, rkv_dptr *d, void *p);
rkv_result rkv_memset_async(rkv_cu *t, rkv_context ctx, rkv_dptr p, unsigned char v, size_t n, rkv_stream s);
rkv_result rkv_stream_create(rkv_cu *t, rkv_context ctx, rkv_stream *s, unsigned flags);
rkv_result rkv_stream_destroy(rkv_cu *t, rkv_context ctx, rkv_stream s);
rkv_result rkv_stream_sync(rkv_cu *t, rkv_context ctx, rkv_stream s);
rkv_result rkv_event_create(rkv_cu *t, rkv_context ctx, rkv_event *e, unsigned flags);
rkv_result rkv_event_destroy(rkv_cu *t, rkv_context ctx, rkv_event e);
rkv_result rkv_event_record(rkv_cu *t, rkv_context ctx, rkv_event e, rkv_stream s);
rkv_result rkv_event_query(rkv_cu *t, rkv_context ctx, rkv_event e);
rkv_result rkv_event_sync(rkv_cu *t, rkv_context ctx, rkv_event e);
rkv_result rkv_event_elapsed(rkv_cu *t, rkv_context ctx, float *ms, rkv_event a, rkv_event b);
rkv_result rkv_module_load(rkv_cu *t, rkv_context ctx, rkv_module *m, const char *image);
rkv_result rkv_module_unload(rkv_cu *t, rkv_context ctx, rkv_module m);
rkv_result rkv_module_function(rkv_cu *t, rkv_context ctx, rkv_function *f, rkv_module m, const char *name);
// rkv_launch_copy_pages launches the page copy kernel (kernel.go) with its
// six parameters.
rkv_result rkv_launch_copy_pages(rkv_cu *t, rkv_context ctx, rkv_function f, unsigned grid_x, unsigned grid_y,
                                 unsigned block, rkv_stream s, rkv_dptr dst, rkv_dptr src, rkv_dptr dst_pages,
                                 rkv_dptr src_pages, unsigned long long page_words, unsigned n);
// rkv_error_name returns the driver's name for code, or NULL.
const char *rkv_error_name(rkv_cu *t, rkv_result code);

// The fake driver (fake.c): host memory behind the same table.
typedef struct {
	int devices;               // cuDeviceGetCount
	size_t mem_limit;          // device bytes cuMemAlloc may hand out (0: unlimited)
	int query_delay;           // cuEventQuery answers NOT_READY this many times before work runs
	long fail_enqueue_at;      // the n-th async copy issued (1-based) fails at once (0: never)
	int fail_enqueue_code;     // with this code
	long fail_exec_at;         // the n-th copy executed fails when it runs (0: never)
	int fail_exec_code;        // reported by the next event query/synchronize on its stream
	int fail_alloc_at;         // the n-th cuMemAlloc/cuMemHostAlloc fails with OUT_OF_MEMORY (0: never)
	long fail_enqueue_every;   // every n-th async copy issued fails at once (0: never)
	long fail_exec_every;      // every n-th copy executed fails when it runs (0: never)
} rkv_fake_config;

typedef struct {
	long copies_issued, copies_run, kernels_run, events_recorded;
	long live_allocs;
	size_t device_bytes, host_bytes, bytes_copied;
} rkv_fake_stats;

void rkv_fake_install(rkv_cu *t, const rkv_fake_config *cfg);
void rkv_fake_configure(const rkv_fake_config *cfg);
void rkv_fake_get_stats(rkv_fake_stats *st);
// rkv_fake_run_all runs every queued operation on every stream.
void rkv_fake_run_all(void);
// rkv_fake_pending returns the number of queued operations.
long rkv_fake_pending(void);

#endif
