// Package router is radixkv's KV-aware request router: a global index of
// which workers cache which KV blocks, fed by the workers' KV events, and
// a scorer that sends each request to the worker that already caches most
// of its prefix without overloading it.
//
// # The index
//
// Blocks are keyed by their chained hashes (the ids in the events; see
// package events). Each block records its parent and, per worker, a tier
// bit mask (device, host, storage, from the event's medium) for each cache
// group class: full attention, sliding window (SWA) and recurrent state
// (Mamba), from vLLM's kv_cache_spec_kind (or a group_idx announced with
// one before). A worker's cached prefix of a request counts only where it
// can really resume: every block's full KV; for a worker that announced
// an SWA group, the SWA KV of the last window (the window comes from
// kv_cache_spec_sliding_window) ending at the prefix's last block; for a
// worker with Mamba states, a state at that block. radixkv's own workers
// publish full-attention events only (the core emits none for SWA or
// Mamba changes), so they are indexed as full-attention workers.
//
// The index is deterministic (no map order reaches an output: dumps,
// snapshots and decisions are sorted) and bounded: Config.BudgetBytes caps
// an estimate of its memory (112 bytes per block plus 40 per holder; the
// heap measured for 100,000 blocks of two workers is 0.8 of it), and
// least recently used blocks (stored or matched) are forgotten when an
// ingest goes over it; a chain is touched from its deepest block up, so
// the budget trims chains from their tips and never strands a tail
// behind a forgotten ancestor. Stats reports bytes, budget and
// evictions. On the shared trace with 8 workers (about 95,000 blocks,
// 15.6 MB unbounded), a 4 MB budget cuts prefix-aware routing's hit rate
// from 42.4% to 19%: the index should be sized to the cluster's cache.
//
// # Streams: gaps, duplicates, restarts, snapshots
//
// [Router.Ingest] takes one [Message] (worker, epoch, sequence number,
// batch) at a time and applies each worker's batches in sequence order:
// an old sequence number is a duplicate and dropped; one past a gap is
// buffered (up to Config.ReorderWindow) and the gap listed by
// [Router.Gaps] until the transport replays it from the publisher (ZMQ's
// replay socket, or JetStream). A new epoch (the NATS publisher sends its
// start time), or without epochs a sequence back at 0 (plain ZMQ: vLLM's
// and SGLang's publishers count from 0 per process), is a publisher
// restart: that worker's blocks are cleared first. Without epochs, a
// restart whose first messages were lost is seen only when a later live
// one numbers at or below the last live one (kvpub's ZMQ subscriber then
// marks the stream with [Router.Reconnected], since PUB/SUB never repeats
// or reorders); a publisher that restarted and passed its old sequence before
// the subscriber reconnected looks like a gap, and a late duplicate of
// sequence 0 reads as a restart (replay then repairs the state): prefer
// a transport with epochs. [Router.Snapshot] writes the index with each
// worker's epoch and next sequence number and a transport cursor;
// [Restore] brings a restarted router back to that point so that it only
// needs what came after.
//
// # Routing
//
// [Router.Route] scores every worker with Dynamo's cost form,
//
//	cost = PrefillWeight · prefill_blocks + active_blocks
//
// where prefill_blocks is the request's blocks minus the worker's cached
// prefix (a block on the host or in storage saves Config.TierCredit of a
// device block) and active_blocks is the load the router has sent there
// and not yet seen completed ([Router.Start], [Router.Complete]). The
// cheapest worker wins; ties go to the less loaded, then the smaller name.
// [Handler] serves the same over HTTP with JSON (POST /route, POST
// /complete, GET /stats, GET /snapshot).
//
// Package router uses the standard library and packages core and events;
// the transports (ZMQ, NATS JetStream) live in package kvpub.
package router
