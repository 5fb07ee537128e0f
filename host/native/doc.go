// Package native is radixkv's Go embedding API: engines that run the
// prefix-cache tree, the pools that hold KV slots, and the controller that
// runs the request lifecycle and executes the tree's actions on the pools.
//
// The tree decides and the host executes. An [Engine] answers match,
// insert, lock and evict commands with results and ordered [core.Action]
// lists; the [Controller] carries out each action on a [Pool] (free these
// slots, ...) and keeps the slot accounting straight.
//
// # Engines
//
// [Engine] mirrors core.Tree with core's own types (core.MatchResult,
// core.InsertParams, core.InsertStep, core.Receipt, core.Action, ...), so
// every engine is interchangeable behind the controller. With
// core.Config.KVEvents an engine records KV cache events (BlockStored,
// BlockRemoved, AllBlocksCleared) that the host drains with
// Engine.TakeEvents, or [Controller.TakeEvents], regularly and forwards to
// its router; on the wire engines they travel by the take_events op.
// [NewDirectEngine] calls a core.Tree in process without any encoding; it
// is the reference engine the others are compared with.
//
// Two more engines implement the same interface on top of the wire format
// of package abi, sharing one implementation: each call is encoded into a
// reused request buffer, handed to a guest, and the response (status,
// result, actions) is decoded back into core's types. An error response
// becomes a [*RemoteError] that unwraps to core's sentinel, so
// errors.Is(err, core.ErrStaleNode) works whichever engine reported it;
// a failure of the guest itself (a trap, a malformed response, an ABI
// code such as unknown_instance) wraps [ErrGuest]. Each engine creates
// one cache instance when it is built and destroys it on Close.
//
// [NewInProcessEngine] hands the request to a dispatcher of its own
// (abi/dispatch, the very code the module runs) in this process.
// [NewWasmEngine] runs the embedded radixkv.wasm under wazero: the module
// is compiled once per process, through a compilation cache, in the
// runtime [SharedWasmRuntime] returns ([NewWasmRuntime] and
// [NewWasmEngineWith] give a runtime of one's own, optionally with an
// on-disk cache). Each engine instantiates its own module instance
// (separate linear memory), copies requests into a guest buffer from
// radixkv_alloc that it reuses and grows, checks every memory access, and
// closes the instance on Close.
//
// Node ids are opaque and specific to an engine: the wire engines XOR
// the guest's ids with a mask of their own, so a node id or receipt of
// one engine handed to another is rejected as stale instead of naming a
// node there. Because all engines sit behind Engine, the controller, the
// pools and every test here run unchanged on them, and the differential
// and transcript tests drive all three with the same commands and require
// identical results, actions, errors and renderings.
//
// # Pools
//
// A [Pool] is a slot allocator plus storage: Alloc, Free, Read, Write and
// Copy on int32 slot indices, each slot SlotBytes bytes. [NewMemPool]
// stores slots in Go memory; [NewMmapPool] maps anonymous host memory
// with mmap and unmaps it on Close (ErrMmapUnavailable where the platform
// or the call fails, so the caller can fall back to NewMemPool). Frees are
// all-or-nothing: a double free, a slot listed twice, an out-of-range or
// never-allocated slot fails the whole call and changes nothing.
//
// [Pools] names one pool per (component, [Tier]); [PoolSet] is the plain
// table. The controller needs the Full device pool and looks the others
// up when an action names them, so SWA, Mamba and host pools, and device
// pools from other packages (CUDA), plug in behind the same interfaces.
//
// # Request lifecycle
//
//	r, _ := ctl.Arrive(ns, prompt)     // match + lock; r.Slots() = cached prefix
//	_ = ctl.Prefill(r, r.Pending())    // fresh slots for the rest (evicts when short)
//	_ = ctl.Extend(r, decoded...)      // one slot per generated token
//	_ = ctl.Finish(r)                  // insert, run actions, free the ragged tail, unlock
//
// Chunked prefill calls [Controller.FinishChunk] after each chunk: the
// computed prefix is inserted (no hit counting), matched again, and the
// lock moves down to its last node, so the chunk's pages are shared and
// protected while the request continues. [Controller.Abort] frees the
// request's own slots and releases its lock.
//
// Every slot is always in exactly one place: free in the pool, cached in
// the tree (evictable or locked), or owned by one running request.
// [Controller.Audit] checks that these add up to the pool's capacity and
// runs the tree's sanity check.
//
// # KV-integrity canary
//
// With ControllerConfig.Canary the controller writes a [CanaryBytes] record
// into every slot it fills, derived from the namespace, the token's
// position and a hash chain over the token prefix up to that token, and
// zeroes slots as they are freed. [Controller.Verify] and
// [Controller.VerifyMatch] (and ControllerConfig.VerifyMatches, on every
// arrival) then prove that the slots a match hands back hold exactly the
// data of that prefix: nothing lost, recycled or mixed between tenants.
// With the canary off the controller never touches slot bytes.
//
// # Locking rules
//
//   - Engines and pools are not safe for concurrent use; they are plain
//     state machines, like core.Tree. WebAssembly engines on one
//     [WasmRuntime] may be used concurrently, each by one goroutine.
//   - The Controller is safe for concurrent use. One mutex guards the
//     engine, the pools, the accounting and the counters; every exported
//     method takes it for its whole duration, so each lifecycle call is
//     atomic with respect to the others and actions are executed before
//     any other caller sees the tree.
//   - A Request belongs to one goroutine at a time; its accessors read
//     without the mutex, so do not call them while another goroutine
//     runs a controller method on the same request.
//   - Controller.Engine hands out the engine for inspection; use it only
//     while no other goroutine uses the controller.
package native
