package abi

import (
	"github.com/radixkv/radixkv/core/blockcache"
)

// The block-cache facade ops (issue 14's range, after the snapshot ops).
// Each instance may own one core/blockcache cache beside its tree, made
// on first use with the tree's page size as block size; its lookups use
// the instance's snapshot index.
const (
	OpBlocksConfigure Op = 0x0068 // blockcache.New: replace the block cache
	OpBlocksLookup    Op = 0x0069 // blockcache.Cache.Lookup
	OpBlocksPeek      Op = 0x006A // blockcache.Cache.Peek
	OpBlocksInsert    Op = 0x006B // blockcache.Cache.Insert
	OpBlocksRelease   Op = 0x006C // blockcache.Cache.ReleaseMatched (Release with matched -1)
	OpBlocksEvict     Op = 0x006D // blockcache.Cache.Evict
	OpBlocksStats     Op = 0x006E // blockcache.Cache.Stats
)

// Codes of the block cache's own errors.
const (
	CodeBlockInUse  Code = 33 // blockcache.ErrBlockInUse
	CodeOverRelease Code = 34 // blockcache.ErrOverRelease
)

func init() {
	for op, name := range map[Op]string{
		OpBlocksConfigure: "blocks_configure", OpBlocksLookup: "blocks_lookup", OpBlocksPeek: "blocks_peek",
		OpBlocksInsert: "blocks_insert", OpBlocksRelease: "blocks_release", OpBlocksEvict: "blocks_evict",
		OpBlocksStats: "blocks_stats",
	} {
		opNames[op] = name
		opTable[op] = name // opTable was filled before this init ran
	}
	codeNames[CodeBlockInUse] = "block_in_use"
	codeNames[CodeOverRelease] = "over_release"
}

// IsBlocksOp reports whether op is one of the block-cache ops.
func (op Op) IsBlocksOp() bool { return op >= OpBlocksConfigure && op <= OpBlocksStats }

// BlocksRequest is the body of the block-cache ops (SPEC.md §4.10).
type BlocksRequest struct {
	BlockSize    uint32   // configure
	SubBlockTail bool     // configure
	Tokens       []uint32 // lookup, peek, insert, release
	Table, Disks []uint32 // insert
	Matched      int32    // insert, release (-1: all of the tokens)
	Session      uint64   // lookup
	Adapter      uint64   // lookup, peek, insert, release
	Want         int32    // evict
}

// BlocksResult is the result of the block-cache ops.
type BlocksResult struct {
	Match    blockcache.Match    // lookup (Snapshot too), peek (MatchedTokens)
	Acquired blockcache.Acquired // insert
	Evicted  blockcache.Evicted  // evict
	Stats    blockcache.Stats    // stats (the cache's own part; snapshot_stats has the index's)
}

func appendBlocksRequest(b []byte, op Op, q *BlocksRequest) []byte {
	switch op {
	case OpBlocksConfigure:
		b = putU32(b, q.BlockSize)
		b = putBool(b, q.SubBlockTail)
	case OpBlocksLookup:
		b = putU32s(b, q.Tokens)
		b = putU64(b, q.Session)
		b = putU64(b, q.Adapter)
	case OpBlocksPeek:
		b = putU32s(b, q.Tokens)
		b = putU64(b, q.Adapter)
	case OpBlocksInsert:
		b = putU32s(b, q.Tokens)
		b = putU32s(b, q.Table)
		b = putU32s(b, q.Disks)
		b = putI32(b, q.Matched)
		b = putU64(b, q.Adapter)
	case OpBlocksRelease:
		b = putU32s(b, q.Tokens)
		b = putI32(b, q.Matched)
		b = putU64(b, q.Adapter)
	case OpBlocksEvict:
		b = putI32(b, q.Want)
	}
	return b
}

func decodeBlocksRequest(r *reader, op Op, q *BlocksRequest, toks []uint32) {
	switch op {
	case OpBlocksConfigure:
		q.BlockSize = r.u32("block_size")
		q.SubBlockTail = r.boolean("sub_block_tail")
	case OpBlocksLookup:
		q.Tokens = r.u32s("tokens", toks)
		q.Session = r.u64("session")
		q.Adapter = r.u64("adapter")
	case OpBlocksPeek:
		q.Tokens = r.u32s("tokens", toks)
		q.Adapter = r.u64("adapter")
	case OpBlocksInsert:
		q.Tokens = r.u32s("tokens", toks)
		q.Table = r.u32s("table", nil)
		q.Disks = r.u32s("disks", nil)
		q.Matched = r.i32("matched")
		q.Adapter = r.u64("adapter")
	case OpBlocksRelease:
		q.Tokens = r.u32s("tokens", toks)
		q.Matched = r.i32("matched")
		q.Adapter = r.u64("adapter")
	case OpBlocksEvict:
		q.Want = r.i32("want")
	}
}

func blocksCounters(s *blockcache.Stats) []*uint64 {
	return []*uint64{&s.Lookups, &s.Hits, &s.Misses, &s.SubBlockHits, &s.LookupTokens, &s.MatchedTokens, &s.Inserts, &s.EvictedBlocks}
}

func blocksSizes(s *blockcache.Stats) []*int {
	return []*int{&s.Nodes, &s.PartialBlocks, &s.Blocks, &s.Runs, &s.Referenced, &s.Adapters}
}

func appendBlocksResult(b []byte, op Op, res *BlocksResult) []byte {
	switch op {
	case OpBlocksLookup:
		m := &res.Match
		b = putU32s(b, m.Blocks)
		b = putU32s(b, m.DiskIDs)
		b = putI32(b, int32(m.MatchedTokens))
		sm := &SnapshotResult{Match: m.Snapshot}
		b = appendSnapshotResult(b, OpSnapshotLookup, sm)
	case OpBlocksPeek:
		b = putI32(b, int32(res.Match.MatchedTokens))
	case OpBlocksInsert:
		a := &res.Acquired
		for _, v := range [][]uint32{a.Blocks, a.DiskIDs, a.Released, a.ReleasedDiskIDs, a.Unused} {
			b = putU32s(b, v)
		}
	case OpBlocksEvict:
		b = putU32s(b, res.Evicted.Blocks)
		b = putU32s(b, res.Evicted.DiskIDs)
	case OpBlocksStats:
		for _, p := range blocksCounters(&res.Stats) {
			b = putU64(b, *p)
		}
		for _, p := range blocksSizes(&res.Stats) {
			b = putU32(b, uint32(*p))
		}
	}
	return b
}

func decodeBlocksResult(d *reader, op Op, res *BlocksResult) {
	switch op {
	case OpBlocksLookup:
		m := &res.Match
		m.Blocks = d.u32s("blocks", nil)
		m.DiskIDs = d.u32s("disk_ids", nil)
		m.MatchedTokens = int(d.i32("matched_tokens"))
		var sm SnapshotResult
		decodeSnapshotResult(d, OpSnapshotLookup, &sm)
		m.Snapshot = sm.Match
	case OpBlocksPeek:
		res.Match.MatchedTokens = int(d.i32("matched_tokens"))
	case OpBlocksInsert:
		a := &res.Acquired
		for _, p := range []*[]uint32{&a.Blocks, &a.DiskIDs, &a.Released, &a.ReleasedDiskIDs, &a.Unused} {
			*p = d.u32s("blocks", nil)
		}
	case OpBlocksEvict:
		res.Evicted.Blocks = d.u32s("blocks", nil)
		res.Evicted.DiskIDs = d.u32s("disk_ids", nil)
	case OpBlocksStats:
		for _, p := range blocksCounters(&res.Stats) {
			*p = d.u64("counter")
		}
		for _, p := range blocksSizes(&res.Stats) {
			*p = int(d.u32("size"))
		}
	}
}
