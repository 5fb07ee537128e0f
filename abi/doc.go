// Package abi is radixkv's wire contract: operation codes, error codes,
// the request and response types, and the versioned little-endian binary
// codec that carries them between a host and the core (in WebAssembly or
// in process).
//
// The contract is abi/SPEC.md, not these Go types: it is written so that
// a codec in another language needs nothing else, and abi/testdata holds
// golden request/response pairs that every codec (this one, abi/js)
// reproduces byte for byte.
//
// # Codec
//
// [AppendRequest] and [AppendResponse] append in the style of the
// standard library; [DecodeRequest] and [DecodeResponse] decode into a
// caller-owned value. Token and slot arrays travel as a u32 count plus a
// raw little-endian run, decoded by one bulk loop into reused buffers, so
// the hot path (match) adds no allocation. An insert of tokens just
// matched need not send them again: [OpBeginInsertMatched] names the
// instance's last match instead. A serving loop's arrival and finish
// take one call each: [OpMatchLock] matches and locks the match, and
// [OpBeginInsertMatchedUnlock] inserts and releases that lock. Every
// decoding failure is an [*Error]
// carrying its wire [Code].
//
// Results, actions and KV events are core's own types ([core.MatchResult],
// [core.InsertResult], [core.Receipt], [core.Action], [core.Event], ...);
// the dispatcher that runs requests lives in abi/dispatch.
package abi
