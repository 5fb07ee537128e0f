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
// every engine is interchangeable behind the controller.
// [NewDirectEngine] calls a core.Tree in process without any encoding; it
// is the reference engine the others are compared with.
//
// Two more engines implement the same interface on top of the wire format
// of package abi. The in-process engine encodes each call into a request
// message, hands it to the dispatcher's Call(req []byte) []byte, and
// decodes the response (status, result, actions) back into core's types;
// the WebAssembly engine does the same, but copies the request into the
// radixkv.wasm module's memory through its alloc export, runs its call
// export under wazero and reads the response out. Because both sit behind
// Engine, the controller, the pools and every test here run unchanged on
// them, and a differential test can drive the direct engine and another
// one with the same command stream and require identical results.
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
//     state machines, like core.Tree.
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
