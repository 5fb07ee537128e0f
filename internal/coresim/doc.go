// Package coresim replays a workload through a [core.Tree] the way a
// serving engine drives it, with a simulated device pool, and reports the
// cache's hit rate and eviction work.
//
// # The replay loop
//
// [Run] builds an empty tree from a [Config] and a free list of
// Config.Capacity device slots (slot indices 0..Capacity-1), then takes each
// request in order:
//
//  1. Match the request's tokens (into a reused buffer) and lock the
//     match's LastDevice, so the matched prefix cannot be evicted while the
//     request runs.
//  2. Allocate a fresh slot for every unmatched token from the free list.
//     When the list is short, evict the missing number of atoms with
//     [core.Tree.Evict] and return the slots of every
//     [core.ActionFreeDeviceSlots] action to the list. If it is still short
//     because everything left in the tree is locked (the request needs more
//     slots than the pool can give), Run stops with an error.
//  3. Insert the request's page-aligned tokens with PrevPrefixLen set to
//     the matched length, return the slots of every [core.ActionFreeDeviceKV]
//     action (duplicates of cached data) to the list, and return the slots
//     of the ragged tail (tokens past the last whole page, which are
//     computed but never cached) right away.
//  4. Unlock.
//
// At the end Run checks the slot accounting: every slot is either on the
// free list or held by the tree, evictable or protected, so
// free + Evictable(Full) + Protected(Full) == Capacity.
//
// Run is deterministic: the same Config and requests give the same [Stats]
// on every machine. Requests of a tenant (a non-empty
// workload.Request.Namespace) are cached under a [core.Namespace] whose
// CacheSalt is the tenant, so tenants never share prefixes.
//
// # The block-cache replay
//
// [RunBlocks] replays the same requests through core/blockcache, the
// second seed's block-table API: look up (referencing the matched
// blocks), take fresh blocks for the rest of the sequence from a pool of
// Capacity/BlockSize blocks (evicting when short), write a per-block
// canary, insert, and release the sequence's references. With
// BlocksConfig.States it also keeps SSM snapshots in the cache's index (a
// state pool, an optional spill tier) under the lru or marconi policy,
// reporting snapshot hits, recompute and FLOPs saved ([SnapshotStats]).
//
// [RunMamba] replays requests through the unified tree with the {full,
// mamba} components, a KV pool and a small state pool: each request's
// speculative match gives the state it resumes from and its branch point
// (MambaBranchingSeqlen), and it checkpoints states at every chunk
// ("chunk", vLLM+-style), at the branch point and the end ("branch",
// Marconi's admission) or at the end only ("leaf"), under the tree's lru
// or marconi Mamba policy, with marconi's alpha tuned online on fresh
// shadow trees ([MambaConfig]). It reports state hits and prefill FLOPs
// saved ([MambaStats]); BenchmarkMarconiTreeSharedTrace compares the
// policies on the shared trace.
//
// The loop reuses its buffers (match result, slot list, actions), so that
// profiles of Run show the tree's own costs rather than the simulator's.
package coresim
