// Package snapshot is radixkv's index of saved recurrent-state (SSM / Mamba)
// snapshots: a deterministic, standard-library-only structure that maps a
// token prefix to the state slot saved after it, independent of the KV
// tree (evicting KV never removes a snapshot).
//
// # Keys
//
// An entry is keyed by [Hash] of its prefix, an FNV-shaped hash over whole
// tokens with the adapter folded in first; adapter 0 gives the plain hash.
// It is bit-identical to the reference module's, so tier blobs named by it
// stay valid across implementations. One entry per key: a later snapshot
// of the same prefix overwrites the earlier one whatever its session.
//
// # Producers and lookup
//
// [Index.Insert] records finish-leaf, intermediate and decode checkpoints;
// [Index.InsertTail] a mid-chunk tail, which serves only its session and
// supersedes that session's previous tail and sibling; [Index.InsertSibling]
// the checkpoint one block before the tail. [Index.Lookup] returns the
// deepest anchor within the KV-matched length, resident or tiered, and
// re-stamps only that winner.
//
// # Eviction and tiers
//
// [Index.EvictLRU] and [Index.EvictToTier] pick the victim: the live
// session's tails and siblings are leased (skipped while anything else is
// resident) until [Config.LeaseTTL] evictions pass without a lookup of
// that session; then the least fresh session goes first, and within it the
// lowest recency-plus-depth score. EvictToTier spills (the entry stays,
// tiered, for [Index.Promote] after a fault-in, or [Index.Forget] when the
// blob is lost) or drops entries shallower than a gate.
//
// Every call validates its input and returns a package error (match with
// errors.Is) with nothing changed. Whatever leaves the index (slots to
// free, blobs to delete) is returned to the caller; see [Displaced].
// The behaviour follows SNAPSHOTS.md §6; the choices where it is ambiguous
// are in RATIONALE.md.
package snapshot
