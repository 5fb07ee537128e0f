//go:build cgo && linux

// The loader and the thin calls of shim.h.

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "shim.h"

#define RESOLVE(field, sym)                                                                    \
	do {                                                                                   \
		*(void **)(&t->field) = dlsym(lib, sym);                                       \
		if (t->field == NULL) {                                                        \
			snprintf(err, errlen, "%s has no symbol %s (driver too old?)", path, sym); \
			dlclose(lib);                                                          \
			memset(t, 0, sizeof *t);                                               \
			return 1;                                                              \
		}                                                                              \
	} while (0)

int rkv_load(rkv_cu *t, const char *path, char *err, size_t errlen) {
	memset(t, 0, sizeof *t);
	void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (lib == NULL) {
		const char *why = dlerror();
		snprintf(err, errlen, "dlopen(\"%s\"): %s", path, why ? why : "unknown error");
		return 1;
	}
	RESOLVE(Init, "cuInit");
	RESOLVE(DriverGetVersion, "cuDriverGetVersion");
	RESOLVE(DeviceGetCount, "cuDeviceGetCount");
	RESOLVE(DeviceGet, "cuDeviceGet");
	RESOLVE(DeviceGetName, "cuDeviceGetName");
	RESOLVE(DeviceTotalMem, "cuDeviceTotalMem_v2");
	RESOLVE(PrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
	RESOLVE(PrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
	RESOLVE(CtxSetCurrent, "cuCtxSetCurrent");
	RESOLVE(MemGetInfo, "cuMemGetInfo_v2");
	RESOLVE(MemAlloc, "cuMemAlloc_v2");
	RESOLVE(MemFree, "cuMemFree_v2");
	RESOLVE(MemHostAlloc, "cuMemHostAlloc");
	RESOLVE(MemFreeHost, "cuMemFreeHost");
	RESOLVE(MemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2");
	RESOLVE(MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
	RESOLVE(MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
	RESOLVE(MemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2");
	RESOLVE(Memcpy2DAsync, "cuMemcpy2DAsync_v2");
	RESOLVE(MemsetD8Async, "cuMemsetD8Async");
	RESOLVE(StreamCreate, "cuStreamCreate");
	RESOLVE(StreamDestroy, "cuStreamDestroy_v2");
	RESOLVE(StreamSynchronize, "cuStreamSynchronize");
	RESOLVE(EventCreate, "cuEventCreate");
	RESOLVE(EventDestroy, "cuEventDestroy_v2");
	RESOLVE(EventRecord, "cuEventRecord");
	RESOLVE(EventQuery, "cuEventQuery");
	RESOLVE(EventSynchronize, "cuEventSynchronize");
	RESOLVE(EventElapsedTime, "cuEventElapsedTime");
	RESOLVE(ModuleLoadData, "cuModuleLoadData");
	RESOLVE(ModuleUnload, "cuModuleUnload");
	RESOLVE(ModuleGetFunction, "cuModuleGetFunction");
	RESOLVE(LaunchKernel, "cuLaunchKernel");
	RESOLVE(GetErrorName, "cuGetErrorName");
	t->lib = lib;
	return 0;
}

void rkv_unload(rkv_cu *t) {
	if (t->lib != NULL) {
		dlclose(t->lib);
	}
	memset(t, 0, sizeof *t);
}

// CUDA contexts are current per OS thread and goroutines move between
// threads, so every call that needs one makes ctx current first.
#define CURRENT()                                         \
	do {                                              \
		rkv_result r_ = t->CtxSetCurrent(ctx);    \
		if (r_ != RKV_SUCCESS) return r_;         \
	} while (0)

rkv_result rkv_copy_batch(rkv_cu *t, rkv_context ctx, rkv_stream s, const rkv_copy *ops, int n, int *failed) {
	*failed = -1;
	CURRENT();
	for (int i = 0; i < n; i++) {
		const rkv_copy *o = &ops[i];
		rkv_result r;
		if (o->rows <= 1) {
			switch (o->kind) {
			case 0: r = t->MemcpyHtoDAsync((rkv_dptr)o->dst, (const void *)(uintptr_t)o->src, o->width, s); break;
			case 1: r = t->MemcpyDtoHAsync((void *)(uintptr_t)o->dst, (rkv_dptr)o->src, o->width, s); break;
			case 2: r = t->MemcpyDtoDAsync((rkv_dptr)o->dst, (rkv_dptr)o->src, o->width, s); break;
			default: r = RKV_ERROR_INVALID_VALUE;
			}
		} else {
			rkv_memcpy2d c;
			memset(&c, 0, sizeof c);
			c.WidthInBytes = o->width;
			c.Height = o->rows;
			c.srcPitch = o->spitch;
			c.dstPitch = o->dpitch;
			if (o->kind == 0) {
				c.srcMemoryType = RKV_MEM_HOST;
				c.srcHost = (const void *)(uintptr_t)o->src;
			} else {
				c.srcMemoryType = RKV_MEM_DEVICE;
				c.srcDevice = (rkv_dptr)o->src;
			}
			if (o->kind == 1) {
				c.dstMemoryType = RKV_MEM_HOST;
				c.dstHost = (void *)(uintptr_t)o->dst;
			} else {
				c.dstMemoryType = RKV_MEM_DEVICE;
				c.dstDevice = (rkv_dptr)o->dst;
			}
			r = (o->kind >= 0 && o->kind <= 2) ? t->Memcpy2DAsync(&c, s) : RKV_ERROR_INVALID_VALUE;
		}
		if (r != RKV_SUCCESS) {
			*failed = i;
			return r;
		}
	}
	return RKV_SUCCESS;
}

rkv_result rkv_init(rkv_cu *t) { return t->Init(0); }
rkv_result rkv_driver_version(rkv_cu *t, int *v) { return t->DriverGetVersion(v); }
rkv_result rkv_device_count(rkv_cu *t, int *n) { return t->DeviceGetCount(n); }

rkv_result rkv_device_open(rkv_cu *t, int ordinal, rkv_device *dev, rkv_context *ctx, char *name, int namelen,
                           size_t *total) {
	rkv_result r = t->DeviceGet(dev, ordinal);
	if (r != RKV_SUCCESS) return r;
	r = t->DeviceGetName(name, namelen, *dev);
	if (r != RKV_SUCCESS) return r;
	r = t->DeviceTotalMem(total, *dev);
	if (r != RKV_SUCCESS) return r;
	r = t->PrimaryCtxRetain(ctx, *dev);
	if (r != RKV_SUCCESS) return r;
	r = t->CtxSetCurrent(*ctx);
	if (r != RKV_SUCCESS) t->PrimaryCtxRelease(*dev);
	return r;
}

rkv_result rkv_device_close(rkv_cu *t, rkv_device dev) { return t->PrimaryCtxRelease(dev); }

rkv_result rkv_mem_info(rkv_cu *t, rkv_context ctx, size_t *free_, size_t *total) {
	CURRENT();
	return t->MemGetInfo(free_, total);
}
rkv_result rkv_mem_alloc(rkv_cu *t, rkv_context ctx, rkv_dptr *p, size_t n) {
	CURRENT();
	return t->MemAlloc(p, n);
}
rkv_result rkv_mem_free(rkv_cu *t, rkv_context ctx, rkv_dptr p) {
	CURRENT();
	return t->MemFree(p);
}
rkv_result rkv_host_alloc(rkv_cu *t, rkv_context ctx, void **p, size_t n, unsigned flags) {
	CURRENT();
	return t->MemHostAlloc(p, n, flags);
}
rkv_result rkv_host_free(rkv_cu *t, rkv_context ctx, void *p) {
	CURRENT();
	return t->MemFreeHost(p);
}
rkv_result rkv_host_device_ptr(rkv_cu *t, rkv_context ctx, rkv_dptr *d, void *p) {
	CURRENT();
	return t->MemHostGetDevicePointer(d, p, 0);
}
rkv_result rkv_memset_async(rkv_cu *t, rkv_context ctx, rkv_dptr p, unsigned char v, size_t n, rkv_stream s) {
	CURRENT();
	return t->MemsetD8Async(p, v, n, s);
}
rkv_result rkv_stream_create(rkv_cu *t, rkv_context ctx, rkv_stream *s, unsigned flags) {
	CURRENT();
	return t->StreamCreate(s, flags);
}
rkv_result rkv_stream_destroy(rkv_cu *t, rkv_context ctx, rkv_stream s) {
	CURRENT();
	return t->StreamDestroy(s);
}
rkv_result rkv_stream_sync(rkv_cu *t, rkv_context ctx, rkv_stream s) {
	CURRENT();
	return t->StreamSynchronize(s);
}
rkv_result rkv_event_create(rkv_cu *t, rkv_context ctx, rkv_event *e, unsigned flags) {
	CURRENT();
	return t->EventCreate(e, flags);
}
rkv_result rkv_event_destroy(rkv_cu *t, rkv_context ctx, rkv_event e) {
	CURRENT();
	return t->EventDestroy(e);
}
rkv_result rkv_event_record(rkv_cu *t, rkv_context ctx, rkv_event e, rkv_stream s) {
	CURRENT();
	return t->EventRecord(e, s);
}
rkv_result rkv_event_query(rkv_cu *t, rkv_context ctx, rkv_event e) {
	CURRENT();
	return t->EventQuery(e);
}
rkv_result rkv_event_sync(rkv_cu *t, rkv_context ctx, rkv_event e) {
	CURRENT();
	return t->EventSynchronize(e);
}
rkv_result rkv_event_elapsed(rkv_cu *t, rkv_context ctx, float *ms, rkv_event a, rkv_event b) {
	CURRENT();
	return t->EventElapsedTime(ms, a, b);
}
rkv_result rkv_module_load(rkv_cu *t, rkv_context ctx, rkv_module *m, const char *image) {
	CURRENT();
	return t->ModuleLoadData(m, image);
}
rkv_result rkv_module_unload(rkv_cu *t, rkv_context ctx, rkv_module m) {
	CURRENT();
	return t->ModuleUnload(m);
}
rkv_result rkv_module_function(rkv_cu *t, rkv_context ctx, rkv_function *f, rkv_module m, const char *name) {
	CURRENT();
	return t->ModuleGetFunction(f, m, name);
}

rkv_result rkv_launch_copy_pages(rkv_cu *t, rkv_context ctx, rkv_function f, unsigned grid_x, unsigned grid_y,
                                 unsigned block, rkv_stream s, rkv_dptr dst, rkv_dptr src, rkv_dptr dst_pages,
                                 rkv_dptr src_pages, unsigned long long page_words, unsigned n) {
	CURRENT();
	void *params[6] = {&dst, &src, &dst_pages, &src_pages, &page_words, &n};
	return t->LaunchKernel(f, grid_x, grid_y, 1, block, 1, 1, 0, s, params, NULL);
}

const char *rkv_error_name(rkv_cu *t, rkv_result code) {
	const char *name = NULL;
	if (t->GetErrorName == NULL || t->GetErrorName(code, &name) != RKV_SUCCESS) return NULL;
	return name;
}
