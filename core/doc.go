// Package core is radixkv's deterministic prefix-cache tree: a radix tree
// over token keys whose values are KV-pool slot indices, shared by every
// request that has the same prefix.
//
// The tree decides and the host executes. [Tree] never touches memory
// pools, clocks, files or goroutines; every operation returns a result
// plus an ordered list of [Action]s (free these slots, back up these
// nodes) that the host runs on its pools. The same command stream yields
// byte-identical results everywhere, natively and in WebAssembly.
//
// # Keys and pages
//
// A key is a token sequence matched at page granularity: only whole pages
// are matched or inserted, and a node is split only at page boundaries. In
// bigram mode (EAGLE speculative decoding) each atom is a pair of
// adjacent tokens, so n tokens make n-1 atoms. A [Namespace] (extra key,
// cache salt, LoRA adapter) partitions the tree at the root.
//
// # Request lifecycle
//
//	res, _ := tree.Match(buf[:0], ns, prompt)      // cached prefix slots
//	rcpt, _ := tree.Lock(res.LastDevice, 0)        // protect it while running
//	... prefill the rest into fresh slots ...
//	_, acts, _ := tree.Insert(core.InsertParams{   // cache the whole sequence
//	    Tokens: seq, Slots: slots, PrevPrefixLen: res.DeviceLen})
//	execute(acts)                                  // free duplicate slots
//	tree.Unlock(res.LastDevice, rcpt, false)
//
// When the pool is short, [Tree.Evict] frees leaves in the configured
// policy's order (lru, lfu, fifo, mru, filo, priority, slru, gdsf, lrfu, admit, branch, lhd) and
// returns the freed slots as actions; [Tree.EvictStart] /
// [Tree.EvictNext] / [Tree.EvictEnd] do the same step by step.
// Scheduler-aware protection is opt-in: [Tree.Protect] marks the cached
// prefix of a request waiting in the host's queue, and a Full device walk
// takes every unprotected leaf first, until [Tree.Unprotect].
//
// # Handles and errors
//
// Nodes are named by generational [NodeID] handles: a handle to a freed
// node is an error ([ErrStaleNode]), never another node. Locks return a
// [Receipt] that must be presented to release them ([ErrReceipt]). Every
// method validates its input and returns a package-prefixed error; a
// failed call leaves the tree as it was. An internal invariant failure
// marks the tree broken ([ErrBroken]) until [Tree.Reset].
//
// # Components
//
// Per-node data is organised in components behind one internal interface
// (validator, insert overlap, commit, split, lock walk, eviction, recency
// refresh, match finalisation). [Full] (full-attention KV) is in every
// tree. [SWA] (sliding-window attention) keeps slots only inside its
// window and leaves "tombstones" elsewhere; its lock covers the window
// above a node and can be released early ([Tree.UnlockSWA]). [Mamba]
// keeps one recurrent-state slot per node where a state was saved; a
// match ends only at such a node, and [MatchResult.MambaSlot] is the state
// to fork. Eviction cascades: on a leaf every component goes together;
// inside the tree Full outranks SWA, which outranks Mamba, and SWA and
// Mamba evict inner nodes from their own recency lists. Under
// Config.MambaPolicy "marconi" a Mamba walk instead takes the state of
// lowest utility, normalised recency plus alpha times normalised FLOPs
// saved per byte over its nearest state-bearing ancestor (Marconi, MLSys
// 2025; the counts are package core/flops's, for Config.MambaModel);
// [Tree.SetMambaAlpha] retunes alpha.
//
// # Host tier
//
// With [Config.HostTier], evicted KV can keep a copy in host memory
// (write-through after a number of hits, or write-back at eviction) and
// be loaded back on a later hit; see [Tree.BackupSpec], [Tree.Demote],
// [Tree.LoadBackPlan], [Tree.EvictHost] and [Tree.InsertHost]. Storage
// keys ([Tree.StorageSpec]) and KV cache events ([Tree.TakeEvents]) are
// built on SHA-256 page hash chains.
package core
