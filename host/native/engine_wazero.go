package native

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/radixkv/radixkv/abi"
	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/wasmmod"
)

// WasmRuntime is a wazero runtime with WASI preview 1 and the embedded
// radixkv.wasm module compiled in it. Compiling the module is the
// expensive step (hundreds of milliseconds for its few megabytes of
// code); instantiating it is cheap, so one WasmRuntime serves any number
// of engines, each with a module instance of its own.
//
// A WasmRuntime is safe for concurrent use. Most programs need only the
// process-wide one that [NewWasmEngine] uses ([SharedWasmRuntime]).
type WasmRuntime struct {
	rt       wazero.Runtime
	compiled wazero.CompiledModule
	cache    wazero.CompilationCache
	modCfg   wazero.ModuleConfig
}

// WasmRuntimeConfig configures [NewWasmRuntime].
type WasmRuntimeConfig struct {
	// CacheDir, when set, keeps the compiled module in this directory
	// (created when missing), so later processes skip compilation. The
	// directory's contents are specific to the wazero version; guard it
	// from outside changes. Empty means an in-memory cache only.
	CacheDir string
}

// NewWasmRuntime creates a runtime, instantiates WASI preview 1 in it and
// compiles the embedded module through a compilation cache.
// Errors: ErrGuest wrapping wazero's error.
func NewWasmRuntime(ctx context.Context, cfg WasmRuntimeConfig) (*WasmRuntime, error) {
	var cache wazero.CompilationCache
	if cfg.CacheDir != "" {
		c, err := wazero.NewCompilationCacheWithDir(cfg.CacheDir)
		if err != nil {
			return nil, fmt.Errorf("%w: compilation cache: %w", ErrGuest, err)
		}
		cache = c
	} else {
		cache = wazero.NewCompilationCache()
	}
	r, err := newWasmRuntime(ctx, cache)
	if err != nil {
		_ = cache.Close(ctx)
		return nil, err
	}
	return r, nil
}

// newWasmRuntime builds a runtime on cache, which the runtime closes.
func newWasmRuntime(ctx context.Context, cache wazero.CompilationCache) (*WasmRuntime, error) {
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCompilationCache(cache))
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		_ = rt.Close(ctx)
		return nil, fmt.Errorf("%w: instantiating WASI: %w", ErrGuest, err)
	}
	compiled, err := rt.CompileModule(ctx, wasmmod.Module)
	if err != nil {
		_ = rt.Close(ctx)
		return nil, fmt.Errorf("%w: compiling radixkv.wasm: %w", ErrGuest, err)
	}
	return &WasmRuntime{
		rt: rt, compiled: compiled, cache: cache,
		// Anonymous instances, so any number can coexist; a reactor
		// module runs _initialize, never _start.
		modCfg: wazero.NewModuleConfig().WithName("").WithStartFunctions("_initialize"),
	}, nil
}

// Close releases the runtime, every module instance in it (engines made
// from it then fail with ErrGuest) and its compilation cache (the
// directory's contents stay).
func (r *WasmRuntime) Close(ctx context.Context) error {
	return errors.Join(r.rt.Close(ctx), r.cache.Close(ctx))
}

var sharedWasm = sync.OnceValues(func() (*WasmRuntime, error) {
	return NewWasmRuntime(context.Background(), WasmRuntimeConfig{})
})

// SharedWasmRuntime returns the process-wide runtime, created and
// compiled on first use and kept for the life of the process. Do not
// Close it.
func SharedWasmRuntime() (*WasmRuntime, error) { return sharedWasm() }

// WasmOptions configures [NewWasmEngineWith].
type WasmOptions struct {
	// Runtime to instantiate the module in; nil means SharedWasmRuntime.
	Runtime *WasmRuntime
}

// NewWasmEngine returns an Engine that runs the tree inside the embedded
// radixkv.wasm module under wazero, in a module instance of its own
// (instances share compiled code, never memory), speaking the ABI of
// abi/SPEC.md. It is NewWasmEngineWith with a background context and the
// shared runtime.
func NewWasmEngine(cfg core.Config) (Engine, error) {
	return NewWasmEngineWith(context.Background(), cfg, WasmOptions{})
}

// NewWasmEngineWith is NewWasmEngine with a context and options. ctx is
// used for instantiation and kept for every later call into the module
// (the Engine interface has no context of its own); the runtime's
// defaults never cancel a call.
//
// Each call copies the request into a guest buffer from radixkv_alloc
// (allocated once, grown when a request does not fit, freed by Close),
// runs radixkv_call and decodes the response straight out of the
// module's memory; every memory access is bounds-checked. Matches go
// into a keep region of their own instead, by radixkv_call_keeping (where
// the module has it), so the guest keeps their tokens in place for the
// insert that names them (abi/SPEC.md §8, "Kept requests"). The slot lists
// of returned actions may be views of that memory (see Engine: valid
// until the next call on the engine, Close included). Results,
// actions and errors are those of [NewInProcessEngine], byte for byte.
// The engine is not safe for concurrent use; engines on one runtime may
// run concurrently.
// Errors: ErrGuest when the module cannot be instantiated or does not
// speak this ABI version; otherwise those of core.New.
func NewWasmEngineWith(ctx context.Context, cfg core.Config, opts WasmOptions) (Engine, error) {
	rt := opts.Runtime
	if rt == nil {
		var err error
		if rt, err = SharedWasmRuntime(); err != nil {
			return nil, err
		}
	}
	g, err := rt.instantiate(ctx)
	if err != nil {
		return nil, err
	}
	e, err := newWireEngine(cfg, g)
	if err != nil {
		return nil, err
	}
	return e, nil
}

// wasmGuest is one module instance: the transport of a WebAssembly
// engine.
type wasmGuest struct {
	ctx                  context.Context
	mod                  api.Module
	mem                  api.Memory
	alloc, free, callFun api.Function
	stack                []uint64

	req guestBuf // the request buffer in guest memory (ptr 0: none yet)

	// callKeep is radixkv_call_keeping, nil in a module without it. The
	// engine's matches go through it from keep[cur], which the engine
	// then leaves as it is until its next match, so the guest keeps the
	// match's tokens where they are. Under clobberRequests the two
	// regions alternate and the one released by a match is poisoned
	// after it.
	callKeep api.Function
	keep     [2]guestBuf
	cur      int
}

// guestBuf is a buffer from radixkv_alloc: its address and size.
type guestBuf struct{ ptr, size uint32 }

// initialRequestBuffer fits a match of about 16k tokens before growing.
const initialRequestBuffer = 64 << 10

func (r *WasmRuntime) instantiate(ctx context.Context) (*wasmGuest, error) {
	mod, err := r.rt.InstantiateModule(experimental.WithMemoryAllocator(ctx, guestMemory{}), r.compiled, r.modCfg)
	if err != nil {
		return nil, fmt.Errorf("%w: instantiating radixkv.wasm: %w", ErrGuest, err)
	}
	g := &wasmGuest{
		ctx: ctx, mod: mod, mem: mod.Memory(),
		alloc: mod.ExportedFunction("radixkv_alloc"), free: mod.ExportedFunction("radixkv_free"),
		callFun: mod.ExportedFunction("radixkv_call"), stack: make([]uint64, 2),
		callKeep: mod.ExportedFunction("radixkv_call_keeping"),
	}
	version := mod.ExportedFunction("radixkv_abi_version")
	if g.mem == nil || g.alloc == nil || g.free == nil || g.callFun == nil || version == nil {
		_ = mod.Close(ctx)
		return nil, fmt.Errorf("%w: radixkv.wasm lacks the memory or a radixkv_* export", ErrGuest)
	}
	if err := version.CallWithStack(ctx, g.stack); err != nil {
		_ = mod.Close(ctx)
		return nil, fmt.Errorf("%w: radixkv_abi_version: %w", ErrGuest, err)
	}
	if v := uint32(g.stack[0]); v != uint32(abi.Version) {
		_ = mod.Close(ctx)
		return nil, fmt.Errorf("%w: radixkv.wasm speaks ABI version %d, this host %d", ErrGuest, v, abi.Version)
	}
	if err := g.growBuf(&g.req, initialRequestBuffer); err != nil {
		_ = mod.Close(ctx)
		return nil, err
	}
	return g, nil
}

// growBuf replaces b by a buffer of at least n bytes (at least twice
// b's size): the new buffer is allocated before b is freed, so a failure
// leaves b in place.
func (g *wasmGuest) growBuf(b *guestBuf, n uint32) error {
	size := max(n, initialRequestBuffer)
	if b.size > 0 && uint64(b.size)*2 <= math.MaxUint32 {
		size = max(size, 2*b.size)
	}
	g.stack[0] = uint64(size)
	if err := g.alloc.CallWithStack(g.ctx, g.stack); err != nil {
		return fmt.Errorf("radixkv_alloc(%d): %w", size, err)
	}
	ptr := uint32(g.stack[0])
	if ptr == 0 {
		return fmt.Errorf("radixkv_alloc(%d) returned 0", size)
	}
	if _, ok := g.mem.Read(ptr, size); !ok {
		return fmt.Errorf("radixkv_alloc(%d) returned 0x%x, outside the %d bytes of memory", size, ptr, g.mem.Size())
	}
	if err := g.releaseBuf(b); err != nil {
		return err
	}
	*b = guestBuf{ptr, size}
	return nil
}

// release frees the request buffer and the keep regions.
func (g *wasmGuest) release() error {
	return errors.Join(g.releaseBuf(&g.req), g.releaseBuf(&g.keep[0]), g.releaseBuf(&g.keep[1]))
}

// releaseBuf frees b (when it has one) and zeroes it.
func (g *wasmGuest) releaseBuf(b *guestBuf) error {
	if b.ptr == 0 {
		return nil
	}
	g.stack[0] = uint64(b.ptr)
	*b = guestBuf{}
	if err := g.free.CallWithStack(g.ctx, g.stack); err != nil {
		return fmt.Errorf("radixkv_free: %w", err)
	}
	return nil
}

func (g *wasmGuest) call(req []byte) ([]byte, error) {
	if err := g.usable(); err != nil {
		return nil, err
	}
	if err := g.writeAt(&g.req, req); err != nil {
		return nil, err
	}
	return g.run(uint32(len(req)))
}

// writeAt copies req into b, growing b first when req does not fit.
func (g *wasmGuest) writeAt(b *guestBuf, req []byte) error {
	if uint64(len(req)) > math.MaxUint32 {
		return fmt.Errorf("request of %d bytes exceeds 32-bit memory", len(req))
	}
	if n := uint32(len(req)); n > b.size {
		if err := g.growBuf(b, n); err != nil {
			return err
		}
	}
	if !g.mem.Write(b.ptr, req) {
		return fmt.Errorf("writing %d request bytes at 0x%x: out of range", len(req), b.ptr)
	}
	return nil
}

// encodeAt encodes q straight into b in guest memory and returns its
// length; a request that outgrows b is encoded on the host instead and
// copied into a bigger b (writeAt).
func (g *wasmGuest) encodeAt(b *guestBuf, q *abi.Request) (uint32, error) {
	var view []byte
	if b.ptr != 0 {
		var ok bool
		if view, ok = g.mem.Read(b.ptr, b.size); !ok {
			return 0, fmt.Errorf("guest buffer 0x%x+%d is outside the %d bytes of memory", b.ptr, b.size, g.mem.Size())
		}
	}
	// The full slice expression caps appends at the buffer: Read's view
	// may extend to the end of memory, over the guest's own data.
	enc := abi.AppendRequest(view[:0:len(view)], q)
	if len(enc) > 0 && len(view) > 0 && &enc[0] == &view[0] {
		return uint32(len(enc)), nil
	}
	// AppendRequest outgrew b and moved to a new Go slice.
	return uint32(len(enc)), g.writeAt(b, enc)
}

// usable reports why the instance cannot take a call. A closed instance
// (also when its runtime was closed) has released its linear memory,
// which guestMemory unmaps or hands to the next instance: never touch
// it again.
func (g *wasmGuest) usable() error {
	if g.mod == nil || g.mod.IsClosed() {
		return errors.New("module instance closed")
	}
	return nil
}

// callInPlace encodes q straight into the request buffer in guest
// memory, saving call's copy (a trace request is ~180 KB of tokens and
// slots).
func (g *wasmGuest) callInPlace(q *abi.Request) ([]byte, error) {
	if err := g.usable(); err != nil {
		return nil, err
	}
	n, err := g.encodeAt(&g.req, q)
	if err != nil {
		return nil, err
	}
	return g.run(n)
}

// canKeep reports whether the module has radixkv_call_keeping.
func (g *wasmGuest) canKeep() bool { return g.callKeep != nil }

// callKeepingInPlace encodes a match q into a keep region and runs it
// with radixkv_call_keeping: the region then stays unchanged until the
// next callKeepingInPlace (the engine's next match), so the guest keeps
// the match's tokens in it for the insert that names the match. A
// request that outgrows the region gets a bigger one (freeing the old
// one, which drops the match it kept: this one replaces it anyway).
func (g *wasmGuest) callKeepingInPlace(q *abi.Request) ([]byte, error) {
	if err := g.usable(); err != nil {
		return nil, err
	}
	if clobberRequests {
		g.cur ^= 1
	}
	k := &g.keep[g.cur]
	n, err := g.encodeAt(k, q)
	if err != nil {
		return nil, err
	}
	out, err := g.runAt(g.callKeep, k.ptr, n)
	if o := g.keep[g.cur^1]; clobberRequests && o.ptr != 0 {
		// The guest's promise on the other region ended with this call.
		g.poison(o.ptr, o.size)
	}
	return out, err
}

// run calls radixkv_call on the first n bytes of the request buffer and
// returns a view of the response in guest memory.
func (g *wasmGuest) run(n uint32) ([]byte, error) {
	out, err := g.runAt(g.callFun, g.req.ptr, n)
	if clobberRequests {
		// The guest may not read the request after the call (it reads
		// arrays in place during it): poison it.
		g.poison(g.req.ptr, n)
	}
	return out, err
}

// runAt calls fn (radixkv_call or radixkv_call_keeping) on the n bytes
// at ptr and returns a view of the response in guest memory.
func (g *wasmGuest) runAt(fn api.Function, ptr, n uint32) ([]byte, error) {
	g.stack[0], g.stack[1] = uint64(ptr), uint64(n)
	if err := fn.CallWithStack(g.ctx, g.stack); err != nil {
		return nil, fmt.Errorf("radixkv_call: %w", err)
	}
	ptr, size := uint32(g.stack[0]>>32), uint32(g.stack[0])
	out, ok := g.mem.Read(ptr, size)
	if !ok {
		return nil, fmt.Errorf("response at 0x%x+%d is outside the %d bytes of memory", ptr, size, g.mem.Size())
	}
	return out, nil
}

// poison overwrites n guest bytes at ptr with 0xa5 (see clobberRequests).
func (g *wasmGuest) poison(ptr, n uint32) {
	if b, ok := g.mem.Read(ptr, n); ok {
		poison(b)
	}
}

// close frees the request buffer and closes the module instance, which
// releases its memory.
func (g *wasmGuest) close() error {
	if g.mod == nil {
		return nil
	}
	var err error
	if !g.mod.IsClosed() {
		err = g.release()
	}
	err = errors.Join(err, g.mod.Close(g.ctx))
	g.mod = nil
	return err
}
