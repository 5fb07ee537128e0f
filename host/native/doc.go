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
// never-allocated slot fails the whole call and changes nothing. The Pool
// documentation says which calls may fail and how the controller copes.
//
// A [PagedPool] hands out whole pages of PageSize contiguous slots
// ([NewPagedMemPool]). The tree's values stay slot indices, but a
// controller whose Full device pool pages by the tree's page size (and
// whose tree has no SWA) takes a request's slots a page at a time: the
// request fills its last page as it decodes, Finish and Abort give whole
// pages back, and every node the tree caches holds whole pool pages, so
// per-token work is writing an index, not a free-list step.
//
// [Pools] names one pool per (component, [Tier]); [PoolSet] is the plain
// table. The controller needs the Full device pool, and the SWA and Mamba
// device pools when the tree has those components; with a host tier it
// needs a host pool for each of them as well. Device pools from other
// packages (CUDA) and pinned host pools plug in behind the same interfaces.
//
// # Transfers
//
// Every copy between pools (a backup device to host, a load-back host to
// device, a Mamba fork inside the device pool) is one [Batch] of
// [Segment]s, started with [Transport].Start, which returns a
// [Completion] that the controller polls (Done) or waits on (Wait). A
// Pools that implements Transport (a CUDA pool set copying on a stream,
// host/native/pooltest's delaying and failing transport) is used for
// them; any other Pools gets [CopyBatch], which copies before it
// returns. The Transport documentation lists the duties on both sides.
//
// Backups an insert triggers (a write-through chain, write-back's SWA
// top-up) stay in flight across calls: the node is locked so its device
// data stays put, the host slots are the controller's own, and the
// backup is committed to the tree (CommitBackup, and for write-through
// MarkWriteThroughPending and FinishWriteThrough) only once its batch
// completed. Every lifecycle call polls first; [Controller.Poll] and
// [Controller.Drain] finish completed (or all) transfers, and
// [Controller.InFlight] counts them. A batch that fails, or a commit the
// tree refuses because it changed meanwhile, is rolled back: the host
// slots go back (poisoned), the lock is released, the tree never hears
// of the backup. A load-back is committed (CommitLoadBack, FinishLoadBack)
// once its batch completed too; a failed one is abandoned before the tree
// hears of it and the arrival recomputes. By default Arrive waits for the
// load-back's batch; with ControllerConfig.AsyncLoadBack it may return a
// request that is still loading (Request.Loading), holding host and
// device locks on the anchor and the device slots being written: its next
// call, or [Controller.Await], waits for the copy and finishes arriving,
// and [Controller.Abort] waits for it and rolls it back. Write-back
// demotions and Mamba forks wait for their batch inside the call.
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
// # Hybrid trees (SWA, Mamba)
//
// When the engine's tree has the SWA or Mamba component, the controller
// needs that component's device pool as well (Pools, ErrNoPool otherwise).
//
// SWA: the tree stores an SWA value in the node's Full slots, so the
// controller keeps a Full→SWA slot mapping: every Full slot it allocates
// gets an SWA slot (evicting SWA data when the SWA pool is short). A
// running request drops the SWA slots of its own positions a window
// (rounded up to pages) before its aligned end, each time it computes
// more tokens, and tells the insert how far it got (SWAEvictedSeqlen);
// once that point passes its locked prefix it releases the SWA part of
// its lock early (Engine.UnlockSWA, then Unlock with skipSWA). A request
// whose match stopped at an SWA tombstone (SWABranchingSeqlen) caches
// that prefix, as a chunk, before its window slides past it, so the
// tombstone gets SWA data again. FreeDeviceKV frees Full slots and their
// SWA slots, FreeDeviceKVFullOnly and Full evictions free Full slots only
// (their SWA side must already be gone), an SWA FreeDeviceSlots frees the
// SWA slots its Full slots map to, SWARebuild checks the mapping, and
// RecoverSWAWithLockedFull moves the incoming slots' SWA slots under the
// kept Full slots and frees the incoming Full slots; anything else is
// ErrSWAMapping.
//
// Mamba: each request owns one state slot, a copy of the state its match
// ended on (MatchResult.MambaSlot; the tree's state is never written) or
// a fresh one. Cached prefixes end on state checkpoints, multiples of
// lcm(MambaChunkSize, PageSize): Finish inserts up to the last one and
// donates the request's state (the host is assumed to track the state at
// that checkpoint), freeing it when the tree already has one there
// (MambaExist); FinishChunk donates a copy and keeps running. A request
// whose match stopped short of a state (MambaBranchingSeqlen) also caches
// that prefix with a state before it finishes. Under the marconi Mamba
// policy (core.Config.MambaPolicy) those two are the only states admitted:
// FinishChunk caches nothing (Stats.MambaChunksSkipped), and the tree
// evicts states by Marconi's utility. MambaEvictExcessPathStates
// calls Engine.EvictExcessPathStates and executes its frees.
//
// Audit checks each auxiliary pool like the Full one (free + cached +
// owned = capacity) and that the mapping names each SWA slot once.
//
// # Host tier (HiCache)
//
// With core.Config.HostTier the controller runs the host tier between the
// device pools and a host pool per component (Pools at [Host], each with
// its device pool's slot size). The tree decides what moves and the
// controller copies the slots' bytes (core's host.go has the protocol):
//
//   - A BackupKV action of an insert (write-through, or write-back's SWA
//     top-up) backs each node of its chain up, ancestors first:
//     BackupSpec, room in the host pools (EvictHost, executing its
//     FreeHostSlots), the copy device to host (SWA through the Full→SWA
//     mapping), CommitBackup; under write-through the node is then locked
//     while its copy is in flight, marked pending, acknowledged
//     (FinishWriteThrough) and unlocked. The first node the host has no
//     room for ends the chain.
//   - Evictions run step by step (EvictStart / EvictNext / EvictEnd).
//     Under write-back a step hands an unbacked leaf over as a BackupKV:
//     the controller backs it up and Demotes it, or, when the host has no
//     room, drops it (DropSubtreeNoHost). Backed-up leaves are demoted by
//     the walk itself.
//   - An arrival whose match has a host hit (MatchResult.Best below
//     LastDevice) takes HostLock and Lock on Best, plans the load-back,
//     makes device room, copies host to device (Full, the window's SWA
//     runs, the Mamba state), commits it (mapping the loaded SWA slots
//     as its RebuildFullToSWAMapping actions say), finishes it, releases
//     both locks and matches again. A pinned or empty plan, or a device
//     that cannot make room, leaves the first match: the request
//     recomputes instead. Request.HostHitLen is what the load-back added.
//
// A write-through is acknowledged when its batch completes, which may be
// after the call that started it returned (see Transfers). The
// controller records which host slots the tree holds (committed, not
// freed since); Audit checks that they, the free ones and those of
// backups in flight make up each host pool and, with the canary, that
// every held host slot holds a record. Without a host tier
// the controller runs exactly as before (one-shot evictions, no copies).
//
// # KV-integrity canary
//
// With ControllerConfig.Canary the controller writes a [CanaryBytes] record
// into every slot it fills, derived from the namespace, the token's
// position and a hash chain over the token prefix up to that token, and
// poisons (zeroes) slots it gives up: this package's paged pools zero a
// freed whole page when they hand it out again, unless Prefill is about to
// write it whole, and a freed slot handed back fails verification by its
// allocation bit meanwhile; other pools and loose slots are zeroed as they
// are freed. [Controller.Verify] and
// [Controller.VerifyMatch] (and ControllerConfig.VerifyMatches, on every
// arrival) then check that the slots a match hands back hold exactly the
// data of that prefix: nothing lost, recycled or mixed between tenants
// (a wrong slot slips by with chance 2^-32; see [CanaryBytes]).
// In hybrid trees the SWA slot of each Full slot holds the same record
// (matches check the last window's, Audit every mapped pair, so a wrong
// remap or free shows), and a Mamba state holds a record of the prefix it
// ends, derived when it advances from what the slot held before, so a
// state forked from the wrong slot stays wrong until Verify or a later
// match that forks it reports it.
// The records travel with the bytes between the tiers (a freed host slot
// is zeroed too), so a load-back from a wrong or stale host slot fails the
// arrival's verification (VerifyMatches) with ErrCanaryMismatch.
// With the canary off the controller writes no records; backups and
// load-backs still copy whatever the slots hold.
//
// # The second seed: block cache and SSM snapshots
//
// Every engine also implements [SnapshotEngine] (the instance's SSM
// snapshot index, core/snapshot, through ABI ops 0x0060-0x0067) and
// [BlocksEngine] (a block-granular prefix cache beside the tree,
// core/blockcache, ops 0x0068-0x006E, whose lookups use that index); a
// type assertion reaches them, and the three engines answer identically.
// [Controller.Snapshots] and [Controller.Blocks] run a function with them
// under the controller's mutex, serialised with the request lifecycle.
// [BlockCache] is the block cache on its own, without a tree, behind a
// mutex: safe for concurrent use, each call atomic.
//
// # Pool failures
//
// The controller survives every failure the Pool contract allows with
// its accounting whole: a failed Alloc changes nothing, a failed Free is
// kept and retried by later calls (Audit counts those slots), a poison
// record that cannot be written does not keep a slot from its pool, a
// canary record that cannot be written undoes the Prefill that needed it
// (so nothing unwritten is ever cached), a failed backup is simply not
// made, and a Read that fails while verifying is reported as that I/O
// error, not as a canary mismatch.
//
// A host slot that an asynchronous load-back (AsyncLoadBack) is still
// reading is never freed, reused or poisoned under it: when the tree gives
// it up meanwhile (a host eviction making room for a write-back demotion),
// the controller keeps it allocated, counted by Audit, and frees it once
// the last batch reading it completed.
//
// # Engine failures
//
// An engine whose guest trapped, failed in transport or answered garbage
// fails every call with [ErrEngineFailed] (and [ErrGuest]); its tree is
// lost. [Controller.ReplaceEngine] recovers over the same pools: batches
// in flight are waited for and dropped, every allocated slot of every pool
// goes back (the pools list them: [SlotLister]), the fresh engine starts
// empty, and each request that was running fails its next call with
// [ErrEngineReplaced] (it is done; the scheduler arrives it again). Audit
// is whole right after. Running requests are not carried over: their
// locks and node ids name the old tree, and two of them may share the
// slots of a prefix the old tree held. [InjectTrap] makes this package's
// engines fail that way on a chosen call, for tests and the simulator.
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
