package abi_test

import (
	"github.com/radixkv/radixkv/abi"
	"github.com/radixkv/radixkv/core"
)

// hostScript covers the host-tier, storage and linker ops on two
// instances: 7 under write-through (with the external linker and KV
// events), 8 under write-back with SWA and Mamba. It mirrors what a host
// does: back up and acknowledge, demote or drop on eviction, load back
// under a host lock and a device lock, insert prefetched host KV, evict
// the host tier.
func hostScript() []step {
	const wt, wb = 7, 8
	insert := func(inst uint32, toks []uint32, sl []int32, mamba int32) func(seen) abi.Request {
		return func(seen) abi.Request {
			q := req(abi.OpInsert, inst)
			q.Insert = core.InsertParams{Tokens: toks, Slots: sl, MambaSlot: mamba}
			return q
		}
	}
	match := func(inst uint32, toks []uint32) func(seen) abi.Request {
		return func(seen) abi.Request {
			q := req(abi.OpMatch, inst)
			q.Insert.Tokens = toks
			return q
		}
	}
	last := func(name string) func(seen) core.NodeID {
		return func(s seen) core.NodeID { return s[name].Insert.LastDevice }
	}
	parent := func(name string) func(seen) core.NodeID {
		return func(s seen) core.NodeID { return s[name].Info.Parent }
	}
	evicted := func(name string) func(seen) core.NodeID {
		return func(s seen) core.NodeID { return s[name].Node }
	}
	nodes := func(op abi.Op, inst uint32, ack int64, ids ...func(seen) core.NodeID) func(seen) abi.Request {
		return func(s seen) abi.Request {
			q := req(op, inst)
			for _, id := range ids {
				q.Nodes = append(q.Nodes, id(s))
			}
			q.Ack, q.OffloadID = ack, ack
			return q
		}
	}
	hostUnlock := func(inst uint32, node func(seen) core.NodeID, lock string) func(seen) abi.Request {
		return func(s seen) abi.Request {
			q := req(abi.OpHostUnlock, inst)
			q.Node, q.Receipt = node(s), s[lock].Receipt
			return q
		}
	}
	unlock := func(inst uint32, lock string) func(seen) abi.Request {
		return func(s seen) abi.Request {
			q := req(abi.OpUnlock, inst)
			q.Receipt = s[lock].Receipt
			q.Node = q.Receipt.Node
			return q
		}
	}
	ongoing := func(inst uint32, wtIDs, lbIDs []func(seen) core.NodeID) func(seen) abi.Request {
		return func(s seen) abi.Request {
			q := req(abi.OpSanityCheckOngoing, inst)
			if wtIDs != nil {
				q.Ongoing.WriteThrough = []core.NodeID{}
				for _, id := range wtIDs {
					q.Ongoing.WriteThrough = append(q.Ongoing.WriteThrough, id(s))
				}
			}
			if lbIDs != nil {
				q.Ongoing.LoadBack = []core.NodeID{}
				for _, id := range lbIDs {
					q.Ongoing.LoadBack = append(q.Ongoing.LoadBack, id(s))
				}
			}
			return q
		}
	}
	none := []func(seen) core.NodeID{}
	insertHost := func(inst uint32, anchor func(seen) core.NodeID, toks []uint32, hs []int32) func(seen) abi.Request {
		return func(s seen) abi.Request {
			q := req(abi.OpInsertHost, inst)
			q.Node = anchor(s)
			q.Insert = core.InsertParams{Tokens: toks, Slots: hs}
			return q
		}
	}
	linkerStored := func(inst uint32, from, until func(seen) core.NodeID) func(seen) abi.Request {
		return func(s seen) abi.Request {
			q := req(abi.OpMarkLinkerStoredPath, inst)
			q.Node, q.Until = from(s), until(s)
			return q
		}
	}
	finishLinker := func(inst uint32, id int64, ok bool, ids ...func(seen) core.NodeID) func(seen) abi.Request {
		return func(s seen) abi.Request {
			q := nodes(abi.OpFinishLinkerOffload, inst, id, ids...)(s)
			q.OK = ok
			return q
		}
	}
	root := func(s seen) core.NodeID { return s["wt-inspect-p"].Info.Parent }
	wtX, wtY, wtP := last("wt-insert-x"), last("wt-insert-y"), parent("wt-inspect-x")
	wbX, wbY := last("wb-insert-x"), last("wb-insert-y")
	return []step{
		// Write-through, page 2, with the external linker and KV events.
		// p [1-4] has children x [5-8] and y [9 10].
		{name: "create-host-tier-bad-write-policy", req: create(core.Config{PageSize: 1, HostTier: true, WritePolicy: 2})},
		{name: "create-host-linker-mamba", req: create(core.Config{PageSize: 1, Components: []core.Component{core.Full, core.Mamba},
			HostTier: true, ExternalLinker: true})},
		{name: "create-host-wt", req: create(core.Config{PageSize: 2, HostTier: true, ExternalLinker: true, KVEvents: true})},
		{name: "wt-insert-x", req: insert(wt, seq(1, 8), slots(100, 8), 0)},
		{name: "wt-insert-y", req: insert(wt, append(seq(1, 4), 9, 10), slots(110, 6), 0)},
		{name: "wt-inspect-x", req: nodeOp(abi.OpInspect, wt, wtX)},
		{name: "wt-inspect-p", req: nodeOp(abi.OpInspect, wt, wtP)},
		// Write-through backs ancestors up first.
		{name: "wt-backup-spec-x", req: nodeOp(abi.OpBackupSpec, wt, wtX)},
		{name: "wt-commit-backup-x-before-p", req: commitBackup(wt, wtX, "wt-backup-spec-x", 1000)},
		{name: "wt-backup-spec-p", req: nodeOp(abi.OpBackupSpec, wt, wtP)},
		{name: "wt-commit-backup-p", req: commitBackup(wt, wtP, "wt-backup-spec-p", 1000)},
		// The spec of a node already on the host has no Full slots: the
		// commit must not name any either.
		{name: "wt-commit-backup-p-again", req: commitBackup(wt, wtP, "wt-backup-spec-p", 1010)},
		{name: "wt-backup-spec-p-backed-up", req: nodeOp(abi.OpBackupSpec, wt, wtP)},
		{name: "wt-commit-backup-p-nothing", req: commitBackup(wt, wtP, "wt-backup-spec-p-backed-up", 1010)},
		{name: "wt-commit-backup-x", req: commitBackup(wt, wtX, "wt-backup-spec-x", 1004)},
		{name: "wt-backup-spec-root", req: nodeOp(abi.OpBackupSpec, wt, root)},
		// The copy runs under a device lock and a pending mark.
		{name: "wt-lock-x", req: nodeOp(abi.OpLock, wt, wtX)},
		{name: "wt-mark-pending", req: nodes(abi.OpMarkWriteThroughPending, wt, 7, wtX, wtP)},
		{name: "wt-mark-pending-again", req: nodes(abi.OpMarkWriteThroughPending, wt, 8, wtX)},
		{name: "wt-mark-pending-zero-ack", req: nodes(abi.OpMarkWriteThroughPending, wt, 0, wtY)},
		{name: "wt-inspect-x-pending", req: nodeOp(abi.OpInspect, wt, wtX)},
		{name: "wt-sanity-ongoing", req: ongoing(wt, []func(seen) core.NodeID{wtP, wtX}, none)},
		{name: "wt-sanity-ongoing-unlisted", req: ongoing(wt, []func(seen) core.NodeID{wtX}, none)},
		{name: "wt-sanity-ongoing-unknown", req: ongoing(wt, nil, nil)},
		{name: "wt-finish-wrong-ack", req: nodes(abi.OpFinishWriteThrough, wt, 8, wtP, wtX)},
		{name: "wt-finish", req: nodes(abi.OpFinishWriteThrough, wt, 7, wtP, wtX)},
		{name: "wt-unlock-x", req: unlock(wt, "wt-lock-x")},
		// Storage keys of host data, and the backfill of page hashes.
		{name: "wt-storage-spec-x", req: nodeOp(abi.OpStorageSpec, wt, wtX)},
		{name: "wt-storage-spec-y", req: nodeOp(abi.OpStorageSpec, wt, wtY)},
		{name: "wt-backfill-hashes", req: plain(abi.OpBackfillHashes, wt)},
		// The external linker's marks.
		{name: "wt-linker-chain-y", req: nodeOp(abi.OpLinkerChain, wt, wtY)},
		{name: "wt-linker-pending", req: nodes(abi.OpMarkLinkerPending, wt, 5, wtP, wtY)},
		{name: "wt-linker-pending-again", req: nodes(abi.OpMarkLinkerPending, wt, 6, wtY)},
		{name: "wt-linker-pending-zero-id", req: nodes(abi.OpMarkLinkerPending, wt, 0, wtX)},
		{name: "wt-linker-chain-y-pending", req: nodeOp(abi.OpLinkerChain, wt, wtY)},
		{name: "wt-linker-finish-wrong-id", req: finishLinker(wt, 6, true, wtP, wtY)},
		{name: "wt-linker-finish", req: finishLinker(wt, 5, true, wtP, wtY)},
		{name: "wt-linker-stored-x", req: linkerStored(wt, wtX, wtP)},
		{name: "wt-linker-stored-not-ancestor", req: linkerStored(wt, wtX, wtY)},
		{name: "wt-inspect-y-linker", req: nodeOp(abi.OpInspect, wt, wtY)},
		// Eviction demotes backed-up leaves (they stay on the host) and
		// deletes the others.
		{name: "wt-evict", req: evict(abi.OpEvict, wt, core.Full, 100)},
		{name: "wt-match-x", req: match(wt, seq(1, 8))},
		// A load-back of x under a host lock and a device lock.
		{name: "wt-host-lock-x", req: nodeOp(abi.OpHostLock, wt, wtX)},
		{name: "wt-unlock-host-receipt", req: unlock(wt, "wt-host-lock-x")},
		{name: "wt-lock-x-anchor", req: nodeOp(abi.OpLock, wt, wtX)},
		{name: "wt-load-back-x", req: nodeOp(abi.OpLoadBack, wt, wtX)},
		{name: "wt-commit-load-back-bad-shape", req: func(s seen) abi.Request {
			q := req(abi.OpCommitLoadBack, wt)
			q.Node, q.LoadBack = wtX(s), core.LoadBackCommit{Full: [][]int32{slots(200, 4)}, Mamba: -1}
			return q
		}},
		{name: "wt-commit-load-back-x", req: commitLoadBack(wt, wtX, "wt-load-back-x", 200, 500)},
		{name: "wt-sanity-ongoing-load-back", req: ongoing(wt, none, []func(seen) core.NodeID{wtX})},
		{name: "wt-finish-load-back-x", req: nodeOp(abi.OpFinishLoadBack, wt, wtX)},
		{name: "wt-host-unlock-device-receipt", req: hostUnlock(wt, wtX, "wt-lock-x-anchor")},
		{name: "wt-unlock-x-anchor", req: unlock(wt, "wt-lock-x-anchor")},
		{name: "wt-host-unlock-x", req: hostUnlock(wt, wtX, "wt-host-lock-x")},
		{name: "wt-host-unlock-x-again", req: hostUnlock(wt, wtX, "wt-host-lock-x")},
		// Prefetched KV below x becomes a host-only node z.
		{name: "wt-insert-host", req: insertHost(wt, wtX, seq(11, 4), slots(2000, 4))},
		{name: "wt-insert-host-too-few-slots", req: insertHost(wt, wtX, seq(11, 4), slots(2000, 3))},
		{name: "wt-insert-host-cached", req: insertHost(wt, root, seq(1, 4), slots(2010, 4))},
		{name: "wt-evict-host", req: evict(abi.OpEvictHost, wt, core.Full, 2)},
		{name: "wt-evict-host-no-swa", req: evict(abi.OpEvictHost, wt, core.SWA, 2)},
		{name: "wt-demote-inner", req: nodeOp(abi.OpDemote, wt, wtP)},
		{name: "wt-drop-subtree-backed-up", req: nodeOp(abi.OpDropSubtreeNoHost, wt, wtX)},
		{name: "wt-take-events", req: plain(abi.OpTakeEvents, wt)},
		{name: "wt-render", req: plain(abi.OpRender, wt)},
		{name: "wt-sanity", req: plain(abi.OpSanityCheck, wt)},
		{name: "destroy-host-wt", req: plain(abi.OpDestroy, wt)},

		// Write-back with SWA (window 4) and Mamba, page 2: p [1-4] with
		// x [5-8] and y [9 10], and w [20-23] beside them. An eviction
		// step hands out BackupKV and changes nothing; the host backs up
		// and demotes, or drops when its memory is full.
		{name: "create-host-wb", req: create(core.Config{PageSize: 2, Components: []core.Component{core.Full, core.SWA, core.Mamba},
			SWAWindow: 4, HostTier: true, WritePolicy: core.WriteBack})},
		{name: "wb-insert-x", req: insert(wb, seq(1, 8), slots(300, 8), 1)},
		{name: "wb-insert-y", req: insert(wb, append(seq(1, 4), 9, 10), slots(310, 6), 2)},
		{name: "wb-insert-w", req: insert(wb, seq(20, 4), slots(320, 4), 3)},
		{name: "wb-evict-start", req: evict(abi.OpEvictStart, wb, core.Full, 100)},
		{name: "wb-evict-next-1", req: plain(abi.OpEvictNext, wb)},
		{name: "wb-backup-spec-1", req: nodeOp(abi.OpBackupSpec, wb, evicted("wb-evict-next-1"))},
		{name: "wb-commit-backup-1-no-mamba", req: func(s seen) abi.Request {
			q := commitBackup(wb, evicted("wb-evict-next-1"), "wb-backup-spec-1", 3000)(s)
			q.Backup.Mamba = -1
			return q
		}},
		{name: "wb-commit-backup-1", req: commitBackup(wb, evicted("wb-evict-next-1"), "wb-backup-spec-1", 3000)},
		{name: "wb-demote-1", req: nodeOp(abi.OpDemote, wb, evicted("wb-evict-next-1"))},
		{name: "wb-evict-next-2", req: plain(abi.OpEvictNext, wb)},
		{name: "wb-backup-spec-2", req: nodeOp(abi.OpBackupSpec, wb, evicted("wb-evict-next-2"))},
		{name: "wb-commit-backup-2", req: commitBackup(wb, evicted("wb-evict-next-2"), "wb-backup-spec-2", 3020)},
		{name: "wb-demote-2", req: nodeOp(abi.OpDemote, wb, evicted("wb-evict-next-2"))},
		{name: "wb-evict-next-3", req: plain(abi.OpEvictNext, wb)},
		{name: "wb-backup-spec-3", req: nodeOp(abi.OpBackupSpec, wb, evicted("wb-evict-next-3"))},
		{name: "wb-commit-backup-3", req: commitBackup(wb, evicted("wb-evict-next-3"), "wb-backup-spec-3", 3040)},
		{name: "wb-demote-3", req: nodeOp(abi.OpDemote, wb, evicted("wb-evict-next-3"))},
		{name: "wb-demote-3-again", req: nodeOp(abi.OpDemote, wb, evicted("wb-evict-next-3"))},
		{name: "wb-evict-next-4", req: plain(abi.OpEvictNext, wb)},
		{name: "wb-drop-subtree-4", req: nodeOp(abi.OpDropSubtreeNoHost, wb, evicted("wb-evict-next-4"))},
		{name: "wb-evict-next-5", req: plain(abi.OpEvictNext, wb)},
		{name: "wb-evict-end", req: plain(abi.OpEvictEnd, wb)},
		{name: "wb-lru-order-swa-host", req: lruOrder(wb, core.SWA, true)},
		{name: "wb-storage-spec-x", req: nodeOp(abi.OpStorageSpec, wb, wbX)},
		{name: "wb-match-x", req: match(wb, seq(1, 8))},
		// Load x back; its nodes stay pinned to it until the finish, so
		// y's plan, which needs p's host SWA, comes back pinned.
		{name: "wb-host-lock-x", req: nodeOp(abi.OpHostLock, wb, wbX)},
		{name: "wb-lock-x", req: nodeOp(abi.OpLock, wb, wbX)},
		{name: "wb-load-back-x", req: nodeOp(abi.OpLoadBack, wb, wbX)},
		{name: "wb-commit-load-back-x", req: commitLoadBack(wb, wbX, "wb-load-back-x", 400, 600)},
		{name: "wb-inspect-x-pinned", req: nodeOp(abi.OpInspect, wb, wbX)},
		{name: "wb-host-lock-y", req: nodeOp(abi.OpHostLock, wb, wbY)},
		{name: "wb-lock-y", req: nodeOp(abi.OpLock, wb, wbY)},
		{name: "wb-load-back-y-pinned", req: nodeOp(abi.OpLoadBack, wb, wbY)},
		{name: "wb-commit-load-back-y-pinned", req: commitLoadBack(wb, wbY, "wb-load-back-y-pinned", 420, 620)},
		{name: "wb-sanity-ongoing-unlisted", req: ongoing(wb, none, none)},
		{name: "wb-finish-load-back-x", req: nodeOp(abi.OpFinishLoadBack, wb, wbX)},
		{name: "wb-unlock-x", req: unlock(wb, "wb-lock-x")},
		{name: "wb-host-unlock-x", req: hostUnlock(wb, wbX, "wb-host-lock-x")},
		{name: "wb-load-back-y", req: nodeOp(abi.OpLoadBack, wb, wbY)},
		{name: "wb-commit-load-back-y", req: commitLoadBack(wb, wbY, "wb-load-back-y", 420, 620)},
		{name: "wb-finish-load-back-y", req: nodeOp(abi.OpFinishLoadBack, wb, wbY)},
		{name: "wb-unlock-y", req: unlock(wb, "wb-lock-y")},
		{name: "wb-host-unlock-y", req: hostUnlock(wb, wbY, "wb-host-lock-y")},
		// Host eviction reclaims copies of data also on the device first.
		{name: "wb-evict-host-swa", req: evict(abi.OpEvictHost, wb, core.SWA, 2)},
		{name: "wb-evict-host-mamba", req: evict(abi.OpEvictHost, wb, core.Mamba, 1)},
		{name: "wb-evict-host-full", req: evict(abi.OpEvictHost, wb, core.Full, 4)},
		{name: "wb-evict-host-negative", req: evict(abi.OpEvictHost, wb, core.Full, -1)},
		// Write-back keeps prefetched KV below a node that is not backed up.
		{name: "wb-insert-host", req: insertHost(wb, wbY, seq(30, 4), slots(3100, 4))},
		{name: "wb-insert-host-stale", req: insertHost(wb, func(seen) core.NodeID { return 0xdead00000063 }, seq(30, 4), slots(3100, 4))},
		{name: "wb-linker-chain-linker-off", req: nodeOp(abi.OpLinkerChain, wb, wbX)},
		{name: "wb-inspect-x", req: nodeOp(abi.OpInspect, wb, wbX)},
		{name: "wb-render", req: plain(abi.OpRender, wb)},
		{name: "wb-sanity", req: plain(abi.OpSanityCheck, wb)},
		{name: "destroy-host-wb", req: plain(abi.OpDestroy, wb)},
	}
}

// commitBackup commits the backup that step spec returned, with host
// slots numbered from base (Full first, then the SWA runs, then Mamba).
func commitBackup(inst uint32, node func(seen) core.NodeID, spec string, base int32) func(seen) abi.Request {
	return func(s seen) abi.Request {
		sp := s[spec].Spec
		c := core.BackupCommit{Mamba: -1}
		next := func(n int) []int32 {
			v := slots(int(base), n)
			base += int32(n)
			return v
		}
		if sp.Full != nil {
			c.Full = next(len(sp.Full))
		}
		for _, e := range sp.SWA {
			c.SWA = append(c.SWA, next(len(e.Slots)))
		}
		if sp.Mamba >= 0 {
			c.Mamba = next(1)[0]
		}
		q := req(abi.OpCommitBackup, inst)
		q.Node, q.Backup = node(s), c
		return q
	}
}

// commitLoadBack commits the load-back that step plan returned, with
// device Full slots numbered from full and SWA and Mamba slots from aux.
func commitLoadBack(inst uint32, anchor func(seen) core.NodeID, plan string, full, aux int32) func(seen) abi.Request {
	return func(s seen) abi.Request {
		p := s[plan].Plan
		c := core.LoadBackCommit{Mamba: -1}
		for _, e := range p.Full {
			c.Full = append(c.Full, slots(int(full), len(e.Slots)))
			full += int32(len(e.Slots))
		}
		for _, e := range p.SWA {
			c.SWA = append(c.SWA, slots(int(aux), len(e.Slots)))
			aux += int32(len(e.Slots))
		}
		if p.Mamba >= 0 {
			c.Mamba = aux
		}
		q := req(abi.OpCommitLoadBack, inst)
		q.Node, q.LoadBack = anchor(s), c
		return q
	}
}
