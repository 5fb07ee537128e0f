// Package offline computes the offline bound on a workload's prefix-cache
// hit rate: what a device cache of a given size could keep if it knew the
// future. It is a reference for the online policies of [core], not a policy
// a tree can run (it reads the whole trace before the first request).
//
// # The model
//
// [Belady] replays the requests in the block model that
// [github.com/radixkv/radixkv/internal/coresim] uses for a real tree: a
// request's whole pages are blocks, a block is identified by its namespace
// and the tokens of every page up to and including it, and the cache is a
// prefix-closed set of blocks (a block is cached only with its parent). For
// each request it
//
//  1. matches the longest cached prefix (m tokens) and locks it;
//  2. needs len(tokens)-m free slots (the ragged tail, past the last whole
//     page, is allocated and freed again, as coresim does); while short it
//     evicts the unlocked leaf block whose next use is furthest in the
//     future (never used again counts as infinitely far) — Belady's rule,
//     restricted to leaves so the cache stays prefix-closed;
//  3. caches the request's unmatched whole pages.
//
// A parent's next use is never later than its children's, so the block with
// the furthest next use can always be taken at a leaf: the leaf constraint
// costs nothing. Evicting pages one at a time is finer than a tree, which
// evicts whole nodes, so no online policy replayed by coresim on the same
// requests, capacity and page size keeps more (the package tests check this,
// and check the result against an exhaustive search on small traces).
//
// Cost: one backward pass for the next uses, then O(B log B) for B blocks.
package offline
