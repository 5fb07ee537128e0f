package abi_test

import (
	"github.com/radixkv/radixkv/abi"
	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/core/snapshot"
)

func init() { instances[9], instances[10] = "create-snap", "create-blocks" }

func snapReq(op abi.Op, mod func(s *abi.SnapshotRequest)) func(seen) abi.Request {
	return func(seen) abi.Request {
		q := req(op, 9)
		mod(&q.Snap)
		return q
	}
}

func snapInsert(kind snapshot.Kind, toks []uint32, slot int32, session uint64) func(seen) abi.Request {
	return snapReq(abi.OpSnapshotInsert, func(s *abi.SnapshotRequest) {
		s.Kind, s.Tokens, s.Slot, s.Session = kind, toks, slot, session
	})
}

func snapLookup(toks []uint32, matched int32, session uint64) func(seen) abi.Request {
	return snapReq(abi.OpSnapshotLookup, func(s *abi.SnapshotRequest) { s.Tokens, s.Matched, s.Session = toks, matched, session })
}

// snapshotScript covers the snapshot index ops (0x0060-0x0067) on their
// own instance: every producer, the lookup gates, eviction to the tier,
// the tier ops and their typed errors, Marconi, and reset.
func snapshotScript() []step {
	noop := func(*abi.SnapshotRequest) {}
	spilled := func(s seen) uint64 { return s["snapshot-evict-tier"].Snap.Evict.Key }
	return []step{
		{name: "create-snap", req: create(core.Config{PageSize: 4})},
		{name: "snapshot-stats-empty", req: snapReq(abi.OpSnapshotStats, noop)},
		{name: "snapshot-insert-8", req: snapInsert(snapshot.Plain, seq(1, 8), 1, 0)},
		{name: "snapshot-insert-16", req: snapInsert(snapshot.Plain, seq(1, 16), 2, 7)},
		{name: "snapshot-insert-tail-12", req: snapInsert(snapshot.Tail, seq(1, 12), 3, 7)},
		{name: "snapshot-insert-sibling-10", req: snapInsert(snapshot.Sibling, seq(1, 10), 4, 7)},
		{name: "snapshot-insert-tail-no-session", req: snapInsert(snapshot.Tail, seq(1, 12), 5, 0)},
		{name: "snapshot-insert-slot-in-use", req: snapInsert(snapshot.Plain, seq(100, 4), 1, 0)},
		{name: "snapshot-insert-empty", req: snapInsert(snapshot.Plain, nil, 5, 0)},
		{name: "snapshot-insert-overwrite-8", req: snapInsert(snapshot.Plain, seq(1, 8), 6, 0)},
		{name: "snapshot-lookup-own-tail", req: snapLookup(seq(1, 14), 14, 7)},
		{name: "snapshot-lookup-other-session", req: snapLookup(seq(1, 14), 14, 8)},
		{name: "snapshot-lookup-deepest", req: snapLookup(seq(1, 20), 20, 0)},
		{name: "snapshot-lookup-miss", req: snapLookup(seq(50, 20), 20, 0)},
		{name: "snapshot-lookup-matched-beyond", req: snapLookup(seq(1, 4), 5, 0)},
		{name: "snapshot-lookup-adapter", req: snapReq(abi.OpSnapshotLookup, func(s *abi.SnapshotRequest) {
			s.Tokens, s.Matched, s.Adapter = seq(1, 16), 16, 3
		})},
		{name: "snapshot-evict-tier", req: snapReq(abi.OpSnapshotEvict, func(s *abi.SnapshotRequest) { s.ToTier, s.MinTokens = true, 4 })},
		{name: "snapshot-evict-tier-drop", req: snapReq(abi.OpSnapshotEvict, func(s *abi.SnapshotRequest) { s.ToTier, s.MinTokens = true, 100 })},
		{name: "snapshot-evict-negative-gate", req: snapReq(abi.OpSnapshotEvict, func(s *abi.SnapshotRequest) { s.ToTier, s.MinTokens = true, -1 })},
		{name: "snapshot-lookup-after-spill", req: snapLookup(seq(1, 20), 20, 0)},
		{name: "snapshot-promote-unknown", req: snapReq(abi.OpSnapshotPromote, func(s *abi.SnapshotRequest) { s.Key, s.Slot = 42, 9 })},
		{name: "snapshot-promote-wrong-adapter", req: func(sn seen) abi.Request {
			q := req(abi.OpSnapshotPromote, 9)
			q.Snap.Key, q.Snap.Adapter, q.Snap.Slot = spilled(sn), 3, 9
			return q
		}},
		{name: "snapshot-promote-slot-in-use", req: func(sn seen) abi.Request {
			q := req(abi.OpSnapshotPromote, 9)
			q.Snap.Key, q.Snap.Slot = spilled(sn), 4
			return q
		}},
		{name: "snapshot-promote", req: func(sn seen) abi.Request {
			q := req(abi.OpSnapshotPromote, 9)
			q.Snap.Key, q.Snap.Slot, q.Snap.Session = spilled(sn), 9, 8
			return q
		}},
		{name: "snapshot-promote-resident", req: func(sn seen) abi.Request {
			q := req(abi.OpSnapshotPromote, 9)
			q.Snap.Key, q.Snap.Slot = spilled(sn), 10
			return q
		}},
		{name: "snapshot-forget-unknown", req: snapReq(abi.OpSnapshotForget, func(s *abi.SnapshotRequest) { s.Key = 42 })},
		{name: "snapshot-forget-resident", req: func(sn seen) abi.Request {
			q := req(abi.OpSnapshotForget, 9)
			q.Snap.Key = spilled(sn)
			return q
		}},
		{name: "snapshot-evict-lru", req: snapReq(abi.OpSnapshotEvict, noop)},
		{name: "snapshot-end-session", req: snapReq(abi.OpSnapshotEndSession, func(s *abi.SnapshotRequest) { s.Session = 7 })},
		{name: "snapshot-end-session-unknown", req: snapReq(abi.OpSnapshotEndSession, func(s *abi.SnapshotRequest) { s.Session = 99 })},
		{name: "snapshot-stats", req: snapReq(abi.OpSnapshotStats, noop)},
		{name: "snapshot-configure-bad", req: snapReq(abi.OpSnapshotConfigure, func(s *abi.SnapshotRequest) { s.Config.Alpha = 9 })},
		{name: "snapshot-configure-marconi", req: snapReq(abi.OpSnapshotConfigure, func(s *abi.SnapshotRequest) {
			s.Config.Marconi = &snapshot.MarconiConfig{Model: snapshot.Model7BHybrid, Alpha: 1.5}
		})},
		{name: "snapshot-marconi-insert-4", req: snapInsert(snapshot.Plain, seq(1, 4), 1, 0)},
		{name: "snapshot-marconi-insert-6", req: snapInsert(snapshot.Plain, seq(1, 6), 2, 0)},
		{name: "snapshot-marconi-insert-64", req: snapInsert(snapshot.Plain, seq(200, 64), 3, 0)},
		{name: "snapshot-marconi-evict", req: snapReq(abi.OpSnapshotEvict, noop)},
		{name: "snapshot-marconi-stats", req: snapReq(abi.OpSnapshotStats, noop)},
		{name: "snapshot-reset", req: plain(abi.OpReset, 9)},
		{name: "snapshot-stats-after-reset", req: snapReq(abi.OpSnapshotStats, noop)},
		{name: "snapshot-destroy", req: plain(abi.OpDestroy, 9)},
		{name: "snapshot-stats-destroyed", req: snapReq(abi.OpSnapshotStats, noop)},
	}
}

func blocksReq(op abi.Op, mod func(b *abi.BlocksRequest)) func(seen) abi.Request {
	return func(seen) abi.Request {
		q := req(op, 10)
		mod(&q.Blocks)
		return q
	}
}

// blocksScript covers the block-cache ops (0x0068-0x006E) on their own
// instance: a cold lookup, inserts with disk ids and a partial block,
// references and their release, the typed errors, eviction, a snapshot
// found through blocks_lookup, and reconfiguration.
func blocksScript() []step {
	noop := func(*abi.BlocksRequest) {}
	lookup := func(toks []uint32) func(seen) abi.Request {
		return blocksReq(abi.OpBlocksLookup, func(b *abi.BlocksRequest) { b.Tokens = toks })
	}
	return []step{
		{name: "create-blocks", req: create(core.Config{PageSize: 4})},
		{name: "blocks-lookup-cold", req: lookup(seq(1, 10))},
		{name: "blocks-insert", req: blocksReq(abi.OpBlocksInsert, func(b *abi.BlocksRequest) {
			b.Tokens, b.Table, b.Disks = seq(1, 10), []uint32{7, 8, 9}, []uint32{70, 0xffffffff}
		})},
		{name: "blocks-insert-owned", req: blocksReq(abi.OpBlocksInsert, func(b *abi.BlocksRequest) {
			b.Tokens, b.Table = seq(50, 4), []uint32{8}
		})},
		{name: "blocks-insert-matched-beyond", req: blocksReq(abi.OpBlocksInsert, func(b *abi.BlocksRequest) {
			b.Tokens, b.Table, b.Matched = seq(50, 4), []uint32{20}, 5
		})},
		{name: "blocks-release-insert", req: blocksReq(abi.OpBlocksRelease, func(b *abi.BlocksRequest) { b.Tokens, b.Matched = seq(1, 10), -1 })},
		{name: "blocks-release-over", req: blocksReq(abi.OpBlocksRelease, func(b *abi.BlocksRequest) { b.Tokens, b.Matched = seq(1, 10), 8 })},
		{name: "blocks-peek", req: blocksReq(abi.OpBlocksPeek, func(b *abi.BlocksRequest) { b.Tokens = seq(1, 12) })},
		{name: "blocks-snapshot", req: snapReqOn(10, abi.OpSnapshotInsert, func(s *abi.SnapshotRequest) { s.Tokens, s.Slot = seq(1, 4), 3 })},
		{name: "blocks-lookup", req: lookup(seq(1, 12))},
		{name: "blocks-lookup-adapter", req: blocksReq(abi.OpBlocksLookup, func(b *abi.BlocksRequest) { b.Tokens, b.Adapter = seq(1, 12), 2 })},
		{name: "blocks-evict-referenced", req: blocksReq(abi.OpBlocksEvict, func(b *abi.BlocksRequest) { b.Want = 4 })},
		{name: "blocks-release-lookup", req: blocksReq(abi.OpBlocksRelease, func(b *abi.BlocksRequest) { b.Tokens, b.Matched = seq(1, 12), 8 })},
		{name: "blocks-evict", req: blocksReq(abi.OpBlocksEvict, func(b *abi.BlocksRequest) { b.Want = 4 })},
		{name: "blocks-evict-negative", req: blocksReq(abi.OpBlocksEvict, func(b *abi.BlocksRequest) { b.Want = -1 })},
		{name: "blocks-stats", req: blocksReq(abi.OpBlocksStats, noop)},
		{name: "blocks-configure-bad", req: blocksReq(abi.OpBlocksConfigure, noop)},
		{name: "blocks-configure", req: blocksReq(abi.OpBlocksConfigure, func(b *abi.BlocksRequest) { b.BlockSize, b.SubBlockTail = 2, true })},
		{name: "blocks-insert-2", req: blocksReq(abi.OpBlocksInsert, func(b *abi.BlocksRequest) { b.Tokens, b.Table = seq(1, 4), []uint32{1, 2} })},
		{name: "blocks-lookup-sub-block", req: lookup(seq(1, 3))},
		{name: "blocks-stats-2", req: blocksReq(abi.OpBlocksStats, noop)},
		{name: "destroy-blocks", req: plain(abi.OpDestroy, 10)},
	}
}

func snapReqOn(inst uint32, op abi.Op, mod func(s *abi.SnapshotRequest)) func(seen) abi.Request {
	return func(seen) abi.Request {
		q := req(op, inst)
		mod(&q.Snap)
		return q
	}
}
