// Package events is radixkv's KV-event wire codec: the msgpack payloads
// that vLLM and SGLang workers publish to KV-aware routers, and that
// radixkv's own workers publish too.
//
// A payload is one [Batch]: a timestamp, a list of [Event] values
// (BlockStored, BlockRemoved, AllBlocksCleared) and an optional
// data-parallel rank. Two shapes are deployed: positional tagged arrays
// (["BlockStored", block_hashes, parent_block_hash, ...], batch
// [ts, events, rank]) and maps with a "type" key (batch {"ts", "events",
// rank key}). Each dialect orders its positional fields differently past
// the sixth, so a [Format] names dialect, shape and layout version, and
// [Encode] writes exactly one of them. [Decode] reads any shape and
// version: unknown keys and trailing elements are ignored, missing
// defaulted fields take their defaults, events of an unknown type are
// skipped and counted, and anything else fails with a [*DecodeError]
// (errors.Is ErrMalformed) that names the path of the bad value.
//
// SPEC.md in this directory documents the layouts with golden payloads;
// testdata/ holds the golden bytes of every format.
//
// [FromCore] converts the events a core.Tree records, and [BlockHashes]
// computes the block ids a radixkv worker publishes for a token sequence,
// so that a router can look a request up by the same ids.
//
// Package events uses msgpack (github.com/vmihailenco/msgpack/v5) and core.
package events
