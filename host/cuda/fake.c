//go:build cgo && linux

// The fake driver: the entry points of shim.h implemented on host memory,
// so the whole cgo path (table, batches, streams, events, kernels) runs in
// CI without a GPU. Device pointers are host addresses of malloc'd blocks;
// every copy is checked against the live allocations. Asynchronous work is
// queued per stream and runs when the stream or an event recorded on it is
// synchronized, or when an event has been queried query_delay times, so
// callers see copies complete late. Faults are injected by count.

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"

enum { OP_COPY, OP_COPY2D, OP_SET, OP_EVENT, OP_KERNEL };

typedef struct {
	int kind;
	rkv_dptr dst, src;
	size_t width, rows, dpitch, spitch;
	unsigned char val;
	struct fevent *ev;
	// kernel parameters
	rkv_dptr dpages, spages;
	unsigned long long page_words;
	unsigned n;
} fop;

typedef struct fstream {
	fop *ops;
	int head, len, cap;
	int err; // execution failure not yet reported
	struct fstream *next;
} fstream;

typedef struct fevent {
	int pending;
	int err;
	int polls;
	fstream *s;
} fevent;

typedef struct {
	char *image;
} fmodule;

typedef struct {
	fmodule *m;
	char name[64];
} ffunction;

typedef struct falloc {
	unsigned char *p;
	size_t n;
	int host;
	struct falloc *next;
} falloc;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static rkv_fake_config cfg;
static rkv_fake_stats st;
static falloc *allocs;
static fstream *streams;
static fstream null_stream;
static long allocs_tried, execs;
static int initialized;
static int ctx_token;

static falloc *find(rkv_dptr p, size_t n) {
	for (falloc *a = allocs; a != NULL; a = a->next) {
		rkv_dptr lo = (rkv_dptr)(uintptr_t)a->p;
		if (p >= lo && n <= a->n && p - lo <= a->n - n) return a;
	}
	return NULL;
}

// dev_ok: [p, p+n) lies in device memory, or in pinned host memory (which
// is mapped into the device's address space, as with unified addressing).
static int dev_ok(rkv_dptr p, size_t n) { return n == 0 || find(p, n) != NULL; }
// host_ok: [p, p+n) is not device memory (pinned or pageable host memory).
static int host_ok(rkv_dptr p, size_t n) {
	falloc *a = find(p, n ? n : 1);
	return p != 0 && (a == NULL || a->host);
}

static fstream *stream_of(rkv_stream s) { return s == NULL ? &null_stream : (fstream *)s; }

static int push(fstream *s, fop op) {
	if (s->head + s->len == s->cap) {
		if (s->head > 0) {
			memmove(s->ops, s->ops + s->head, (size_t)s->len * sizeof(fop));
			s->head = 0;
		} else {
			int cap = s->cap ? 2 * s->cap : 64;
			fop *ops = realloc(s->ops, (size_t)cap * sizeof(fop));
			if (ops == NULL) return RKV_ERROR_OUT_OF_MEMORY;
			s->ops = ops;
			s->cap = cap;
		}
	}
	s->ops[s->head + s->len++] = op;
	return RKV_SUCCESS;
}

static void exec_op(fstream *s, fop *o) {
	switch (o->kind) {
	case OP_EVENT:
		o->ev->pending = 0;
		o->ev->err = s->err;
		s->err = 0;
		return;
	case OP_SET:
		memset((void *)(uintptr_t)o->dst, o->val, o->width);
		return;
	default:
		break;
	}
	st.copies_run += o->kind != OP_KERNEL;
	execs++;
	if ((cfg.fail_exec_at > 0 && execs == cfg.fail_exec_at) || (cfg.fail_exec_every > 0 && execs % cfg.fail_exec_every == 0)) {
		if (s->err == 0) s->err = cfg.fail_exec_code ? cfg.fail_exec_code : RKV_ERROR_ILLEGAL_ADDRESS;
		st.kernels_run += o->kind == OP_KERNEL;
		return;
	}
	switch (o->kind) {
	case OP_COPY:
		memmove((void *)(uintptr_t)o->dst, (const void *)(uintptr_t)o->src, o->width);
		st.bytes_copied += o->width;
		break;
	case OP_COPY2D:
		for (size_t r = 0; r < o->rows; r++) {
			memmove((void *)(uintptr_t)(o->dst + r * o->dpitch), (const void *)(uintptr_t)(o->src + r * o->spitch),
			        o->width);
		}
		st.bytes_copied += o->width * o->rows;
		break;
	case OP_KERNEL: {
		st.kernels_run++;
		size_t pb = (size_t)o->page_words * 16;
		const uint32_t *dp = (const uint32_t *)(uintptr_t)o->dpages;
		const uint32_t *sp = (const uint32_t *)(uintptr_t)o->spages;
		for (unsigned i = 0; i < o->n; i++) {
			rkv_dptr d = o->dst + (rkv_dptr)dp[i] * pb, sr = o->src + (rkv_dptr)sp[i] * pb;
			if (!dev_ok(d, pb) || !dev_ok(sr, pb)) {
				if (s->err == 0) s->err = RKV_ERROR_ILLEGAL_ADDRESS;
				return;
			}
			memmove((void *)(uintptr_t)d, (const void *)(uintptr_t)sr, pb);
			st.bytes_copied += pb;
		}
		break;
	}
	}
}

// run_until runs s's queue up to and including the marker of ev (all of it
// when ev is NULL).
static void run_until(fstream *s, fevent *ev) {
	while (s->len > 0) {
		fop o = s->ops[s->head];
		s->head++;
		s->len--;
		exec_op(s, &o);
		if (ev != NULL && o.kind == OP_EVENT && o.ev == ev) break;
	}
	if (s->len == 0) s->head = 0;
}

static void run_all_locked(void) {
	run_until(&null_stream, NULL);
	for (fstream *s = streams; s != NULL; s = s->next) run_until(s, NULL);
}

#define LOCKED(body)                           \
	do {                                   \
		pthread_mutex_lock(&mu);       \
		rkv_result r_ = (body);        \
		pthread_mutex_unlock(&mu);     \
		return r_;                     \
	} while (0)

static rkv_result f_init(unsigned flags) {
	(void)flags;
	pthread_mutex_lock(&mu);
	initialized = 1;
	pthread_mutex_unlock(&mu);
	return RKV_SUCCESS;
}
static rkv_result f_version(int *v) {
	*v = 12040;
	return RKV_SUCCESS;
}
static rkv_result f_count(int *n) {
	if (!initialized) return RKV_ERROR_NOT_INITIALIZED;
	*n = cfg.devices;
	return RKV_SUCCESS;
}
static rkv_result f_get(rkv_device *d, int ordinal) {
	if (!initialized) return RKV_ERROR_NOT_INITIALIZED;
	if (cfg.devices == 0) return RKV_ERROR_NO_DEVICE;
	if (ordinal < 0 || ordinal >= cfg.devices) return RKV_ERROR_INVALID_DEVICE;
	*d = ordinal;
	return RKV_SUCCESS;
}
static rkv_result f_name(char *name, int len, rkv_device d) {
	if (d < 0 || d >= cfg.devices) return RKV_ERROR_INVALID_DEVICE;
	if (len < 1) return RKV_ERROR_INVALID_VALUE;
	strncpy(name, "radixkv fake device", (size_t)len - 1);
	name[len - 1] = 0;
	return RKV_SUCCESS;
}
static rkv_result f_total(size_t *n, rkv_device d) {
	if (d < 0 || d >= cfg.devices) return RKV_ERROR_INVALID_DEVICE;
	*n = cfg.mem_limit ? cfg.mem_limit : (size_t)1 << 34;
	return RKV_SUCCESS;
}
static rkv_result f_retain(rkv_context *c, rkv_device d) {
	if (d < 0 || d >= cfg.devices) return RKV_ERROR_INVALID_DEVICE;
	*c = &ctx_token;
	return RKV_SUCCESS;
}
static rkv_result f_release(rkv_device d) { return d < 0 || d >= cfg.devices ? RKV_ERROR_INVALID_DEVICE : RKV_SUCCESS; }
static rkv_result f_current(rkv_context c) { return c == &ctx_token || c == NULL ? RKV_SUCCESS : RKV_ERROR_INVALID_VALUE; }

static rkv_result f_info_locked(size_t *free_, size_t *total) {
	size_t lim = cfg.mem_limit ? cfg.mem_limit : (size_t)1 << 34;
	*total = lim;
	*free_ = st.device_bytes >= lim ? 0 : lim - st.device_bytes;
	return RKV_SUCCESS;
}
static rkv_result f_info(size_t *free_, size_t *total) { LOCKED(f_info_locked(free_, total)); }

static rkv_result alloc_locked(void **p, size_t n, int host) {
	if (p == NULL || n == 0) return RKV_ERROR_INVALID_VALUE;
	allocs_tried++;
	if (cfg.fail_alloc_at > 0 && allocs_tried == cfg.fail_alloc_at) return RKV_ERROR_OUT_OF_MEMORY;
	if (!host && cfg.mem_limit && (st.device_bytes > cfg.mem_limit || n > cfg.mem_limit - st.device_bytes))
		return RKV_ERROR_OUT_OF_MEMORY;
	falloc *a = malloc(sizeof *a);
	unsigned char *m = malloc(n);
	if (a == NULL || m == NULL) {
		free(a);
		free(m);
		return RKV_ERROR_OUT_OF_MEMORY;
	}
	// Fresh driver memory is not zeroed: poison it so a read of bytes
	// nobody wrote shows.
	memset(m, host ? 0x5a : 0xa5, n);
	a->p = m;
	a->n = n;
	a->host = host;
	a->next = allocs;
	allocs = a;
	st.live_allocs++;
	if (host)
		st.host_bytes += n;
	else
		st.device_bytes += n;
	*p = m;
	return RKV_SUCCESS;
}

static rkv_result free_locked(void *p, int host) {
	for (falloc **pa = &allocs; *pa != NULL; pa = &(*pa)->next) {
		falloc *a = *pa;
		if (a->p == p && a->host == host) {
			// The driver finishes outstanding work before freeing.
			run_all_locked();
			*pa = a->next;
			st.live_allocs--;
			if (host)
				st.host_bytes -= a->n;
			else
				st.device_bytes -= a->n;
			free(a->p);
			free(a);
			return RKV_SUCCESS;
		}
	}
	return RKV_ERROR_INVALID_VALUE;
}

static rkv_result f_alloc(rkv_dptr *p, size_t n) {
	void *m = NULL;
	pthread_mutex_lock(&mu);
	rkv_result r = alloc_locked(&m, n, 0);
	pthread_mutex_unlock(&mu);
	if (r == RKV_SUCCESS) *p = (rkv_dptr)(uintptr_t)m;
	return r;
}
static rkv_result f_free(rkv_dptr p) { LOCKED(free_locked((void *)(uintptr_t)p, 0)); }
static rkv_result f_host_alloc(void **p, size_t n, unsigned flags) {
	(void)flags;
	LOCKED(alloc_locked(p, n, 1));
}
static rkv_result f_host_free(void *p) { LOCKED(free_locked(p, 1)); }
static rkv_result f_host_dptr_locked(rkv_dptr *d, void *p) {
	falloc *a = find((rkv_dptr)(uintptr_t)p, 1);
	if (a == NULL || !a->host) return RKV_ERROR_INVALID_VALUE;
	*d = (rkv_dptr)(uintptr_t)p;
	return RKV_SUCCESS;
}
static rkv_result f_host_dptr(rkv_dptr *d, void *p, unsigned flags) {
	if (flags != 0) return RKV_ERROR_INVALID_VALUE;
	LOCKED(f_host_dptr_locked(d, p));
}

// enqueue_copy validates and queues one copy (or fails it by count).
static rkv_result enqueue_locked(fstream *s, fop op, int dst_dev, int src_dev) {
	st.copies_issued++;
	if ((cfg.fail_enqueue_at > 0 && st.copies_issued == cfg.fail_enqueue_at) ||
	    (cfg.fail_enqueue_every > 0 && st.copies_issued % cfg.fail_enqueue_every == 0))
		return cfg.fail_enqueue_code ? cfg.fail_enqueue_code : RKV_ERROR_INVALID_VALUE;
	size_t rows = op.kind == OP_COPY2D ? op.rows : 1;
	if (op.width == 0 || rows == 0) return RKV_SUCCESS;
	if (op.kind == OP_COPY2D && (op.width > op.dpitch || op.width > op.spitch)) return RKV_ERROR_INVALID_VALUE;
	size_t dspan = (rows - 1) * op.dpitch + op.width, sspan = (rows - 1) * op.spitch + op.width;
	if (!(dst_dev ? dev_ok(op.dst, dspan) : host_ok(op.dst, dspan))) return RKV_ERROR_INVALID_VALUE;
	if (!(src_dev ? dev_ok(op.src, sspan) : host_ok(op.src, sspan))) return RKV_ERROR_INVALID_VALUE;
	return push(s, op);
}

static rkv_result f_htod(rkv_dptr dst, const void *src, size_t n, rkv_stream s) {
	fop op = {.kind = OP_COPY, .dst = dst, .src = (rkv_dptr)(uintptr_t)src, .width = n};
	LOCKED(enqueue_locked(stream_of(s), op, 1, 0));
}
static rkv_result f_dtoh(void *dst, rkv_dptr src, size_t n, rkv_stream s) {
	fop op = {.kind = OP_COPY, .dst = (rkv_dptr)(uintptr_t)dst, .src = src, .width = n};
	LOCKED(enqueue_locked(stream_of(s), op, 0, 1));
}
static rkv_result f_dtod(rkv_dptr dst, rkv_dptr src, size_t n, rkv_stream s) {
	fop op = {.kind = OP_COPY, .dst = dst, .src = src, .width = n};
	LOCKED(enqueue_locked(stream_of(s), op, 1, 1));
}
static rkv_result f_2d(const rkv_memcpy2d *c, rkv_stream s) {
	if (c->srcArray != NULL || c->dstArray != NULL || c->srcY != 0 || c->dstY != 0) return RKV_ERROR_INVALID_VALUE;
	int sd = c->srcMemoryType == RKV_MEM_DEVICE, dd = c->dstMemoryType == RKV_MEM_DEVICE;
	if ((!sd && c->srcMemoryType != RKV_MEM_HOST) || (!dd && c->dstMemoryType != RKV_MEM_HOST))
		return RKV_ERROR_INVALID_VALUE;
	fop op = {.kind = OP_COPY2D,
	          .dst = (dd ? c->dstDevice : (rkv_dptr)(uintptr_t)c->dstHost) + c->dstXInBytes,
	          .src = (sd ? c->srcDevice : (rkv_dptr)(uintptr_t)c->srcHost) + c->srcXInBytes,
	          .width = c->WidthInBytes,
	          .rows = c->Height,
	          .dpitch = c->dstPitch,
	          .spitch = c->srcPitch};
	LOCKED(enqueue_locked(stream_of(s), op, dd, sd));
}
static rkv_result f_set_locked(rkv_dptr p, unsigned char v, size_t n, fstream *s) {
	if (!dev_ok(p, n)) return RKV_ERROR_INVALID_VALUE;
	fop op = {.kind = OP_SET, .dst = p, .width = n, .val = v};
	return push(s, op);
}
static rkv_result f_set(rkv_dptr p, unsigned char v, size_t n, rkv_stream s) { LOCKED(f_set_locked(p, v, n, stream_of(s))); }

static rkv_result f_stream_create(rkv_stream *out, unsigned flags) {
	(void)flags;
	fstream *s = calloc(1, sizeof *s);
	if (s == NULL) return RKV_ERROR_OUT_OF_MEMORY;
	pthread_mutex_lock(&mu);
	s->next = streams;
	streams = s;
	pthread_mutex_unlock(&mu);
	*out = s;
	return RKV_SUCCESS;
}
static rkv_result f_stream_destroy_locked(fstream *s) {
	for (fstream **ps = &streams; *ps != NULL; ps = &(*ps)->next) {
		if (*ps == s) {
			run_until(s, NULL);
			*ps = s->next;
			free(s->ops);
			free(s);
			return RKV_SUCCESS;
		}
	}
	return RKV_ERROR_INVALID_HANDLE;
}
static rkv_result f_stream_destroy(rkv_stream s) { LOCKED(f_stream_destroy_locked((fstream *)s)); }
static rkv_result f_stream_sync_locked(fstream *s) {
	run_until(s, NULL);
	int err = s->err;
	s->err = 0;
	return err;
}
static rkv_result f_stream_sync(rkv_stream s) { LOCKED(f_stream_sync_locked(stream_of(s))); }

static rkv_result f_event_create(rkv_event *e, unsigned flags) {
	(void)flags;
	fevent *ev = calloc(1, sizeof *ev);
	if (ev == NULL) return RKV_ERROR_OUT_OF_MEMORY;
	*e = ev;
	return RKV_SUCCESS;
}
static rkv_result f_event_destroy(rkv_event e) {
	fevent *ev = e;
	pthread_mutex_lock(&mu);
	// A destroyed event whose marker is still queued must not be touched
	// later: run its stream past it first.
	if (ev->pending) run_until(ev->s, ev);
	pthread_mutex_unlock(&mu);
	free(ev);
	return RKV_SUCCESS;
}
static rkv_result f_record_locked(fevent *ev, fstream *s) {
	if (ev->pending) run_until(ev->s, ev); // re-recording: the old marker goes first
	ev->pending = 1;
	ev->err = 0;
	ev->polls = cfg.query_delay;
	ev->s = s;
	st.events_recorded++;
	fop op = {.kind = OP_EVENT, .ev = ev};
	return push(s, op);
}
static rkv_result f_record(rkv_event e, rkv_stream s) { LOCKED(f_record_locked((fevent *)e, stream_of(s))); }
static rkv_result f_query_locked(fevent *ev) {
	if (ev->pending) {
		if (ev->polls > 0) {
			ev->polls--;
			return RKV_ERROR_NOT_READY;
		}
		run_until(ev->s, ev);
	}
	int err = ev->err;
	ev->err = 0;
	return err;
}
static rkv_result f_query(rkv_event e) { LOCKED(f_query_locked((fevent *)e)); }
static rkv_result f_event_sync_locked(fevent *ev) {
	if (ev->pending) run_until(ev->s, ev);
	int err = ev->err;
	ev->err = 0;
	return err;
}
static rkv_result f_event_sync(rkv_event e) { LOCKED(f_event_sync_locked((fevent *)e)); }
static rkv_result f_elapsed(float *ms, rkv_event a, rkv_event b) {
	if (((fevent *)a)->pending || ((fevent *)b)->pending) return RKV_ERROR_NOT_READY;
	*ms = 0;
	return RKV_SUCCESS;
}

static rkv_result f_module_load(rkv_module *m, const void *image) {
	const char *text = image;
	if (text == NULL || strstr(text, ".version") == NULL || strstr(text, ".entry") == NULL) return RKV_ERROR_INVALID_PTX;
	fmodule *mod = malloc(sizeof *mod);
	if (mod == NULL) return RKV_ERROR_OUT_OF_MEMORY;
	mod->image = strdup(text);
	if (mod->image == NULL) {
		free(mod);
		return RKV_ERROR_OUT_OF_MEMORY;
	}
	*m = mod;
	return RKV_SUCCESS;
}
static rkv_result f_module_unload(rkv_module m) {
	fmodule *mod = m;
	free(mod->image);
	free(mod);
	return RKV_SUCCESS;
}
static rkv_result f_module_function(rkv_function *f, rkv_module m, const char *name) {
	fmodule *mod = m;
	char pat[80];
	if (strlen(name) >= 60) return RKV_ERROR_NOT_FOUND;
	strcpy(pat, ".entry ");
	strcat(pat, name);
	strcat(pat, "(");
	if (strstr(mod->image, pat) == NULL) return RKV_ERROR_NOT_FOUND;
	ffunction *fn = malloc(sizeof *fn);
	if (fn == NULL) return RKV_ERROR_OUT_OF_MEMORY;
	fn->m = mod;
	strcpy(fn->name, name);
	*f = fn;
	return RKV_SUCCESS;
}
static rkv_result f_launch_locked(ffunction *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                  unsigned bz, fstream *s, void **params) {
	if (strcmp(fn->name, "rkv_copy_pages") != 0) return RKV_ERROR_NOT_FOUND;
	if (gx == 0 || gy == 0 || gz != 1 || bx == 0 || bx > 1024 || by != 1 || bz != 1 || gy > 65535)
		return RKV_ERROR_INVALID_VALUE;
	fop op = {.kind = OP_KERNEL,
	          .dst = *(rkv_dptr *)params[0],
	          .src = *(rkv_dptr *)params[1],
	          .dpages = *(rkv_dptr *)params[2],
	          .spages = *(rkv_dptr *)params[3],
	          .page_words = *(unsigned long long *)params[4],
	          .n = *(unsigned *)params[5]};
	if (op.n > gy) return RKV_ERROR_INVALID_VALUE; // the kernel takes one page per grid row
	if (!dev_ok(op.dpages, (size_t)op.n * 4) || !dev_ok(op.spages, (size_t)op.n * 4)) return RKV_ERROR_INVALID_VALUE;
	return push(s, op);
}
static rkv_result f_launch(rkv_function f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                           unsigned shared, rkv_stream s, void **params, void **extra) {
	if (shared != 0 || extra != NULL || params == NULL) return RKV_ERROR_INVALID_VALUE;
	LOCKED(f_launch_locked((ffunction *)f, gx, gy, gz, bx, by, bz, stream_of(s), params));
}
static rkv_result f_error_name(rkv_result code, const char **name) {
	(void)code;
	*name = NULL;
	return RKV_ERROR_INVALID_VALUE; // the fake has no names: Go's table names the code
}

void rkv_fake_configure(const rkv_fake_config *c) {
	pthread_mutex_lock(&mu);
	cfg = *c;
	allocs_tried = 0;
	execs = 0;
	long live = st.live_allocs;
	size_t db = st.device_bytes, hb = st.host_bytes;
	memset(&st, 0, sizeof st);
	st.live_allocs = live;
	st.device_bytes = db;
	st.host_bytes = hb;
	pthread_mutex_unlock(&mu);
}

void rkv_fake_install(rkv_cu *t, const rkv_fake_config *c) {
	memset(t, 0, sizeof *t);
	rkv_fake_configure(c);
	t->Init = f_init;
	t->DriverGetVersion = f_version;
	t->DeviceGetCount = f_count;
	t->DeviceGet = f_get;
	t->DeviceGetName = f_name;
	t->DeviceTotalMem = f_total;
	t->PrimaryCtxRetain = f_retain;
	t->PrimaryCtxRelease = f_release;
	t->CtxSetCurrent = f_current;
	t->MemGetInfo = f_info;
	t->MemAlloc = f_alloc;
	t->MemFree = f_free;
	t->MemHostAlloc = f_host_alloc;
	t->MemFreeHost = f_host_free;
	t->MemHostGetDevicePointer = f_host_dptr;
	t->MemcpyHtoDAsync = f_htod;
	t->MemcpyDtoHAsync = f_dtoh;
	t->MemcpyDtoDAsync = f_dtod;
	t->Memcpy2DAsync = f_2d;
	t->MemsetD8Async = f_set;
	t->StreamCreate = f_stream_create;
	t->StreamDestroy = f_stream_destroy;
	t->StreamSynchronize = f_stream_sync;
	t->EventCreate = f_event_create;
	t->EventDestroy = f_event_destroy;
	t->EventRecord = f_record;
	t->EventQuery = f_query;
	t->EventSynchronize = f_event_sync;
	t->EventElapsedTime = f_elapsed;
	t->ModuleLoadData = f_module_load;
	t->ModuleUnload = f_module_unload;
	t->ModuleGetFunction = f_module_function;
	t->LaunchKernel = f_launch;
	t->GetErrorName = f_error_name;
}

void rkv_fake_get_stats(rkv_fake_stats *out) {
	pthread_mutex_lock(&mu);
	*out = st;
	pthread_mutex_unlock(&mu);
}

void rkv_fake_run_all(void) {
	pthread_mutex_lock(&mu);
	run_all_locked();
	pthread_mutex_unlock(&mu);
}

long rkv_fake_pending(void) {
	pthread_mutex_lock(&mu);
	long n = null_stream.len;
	for (fstream *s = streams; s != NULL; s = s->next) n += s->len;
	pthread_mutex_unlock(&mu);
	return n;
}
