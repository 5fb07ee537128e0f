package abi_test

import (
	"strconv"

	"github.com/radixkv/radixkv/abi"
	"github.com/radixkv/radixkv/core"
)

// The JSON forms below are the golden vectors' structured side: the JS
// codec encodes requests from them and must decode responses to exactly
// them. Integers up to 32 bits are JSON numbers; 64-bit integers and node
// ids are decimal strings; arrays are never null.

func s64[T ~int64 | ~int](v T) string { return strconv.FormatInt(int64(v), 10) }

func u64[T ~uint64](v T) string { return strconv.FormatUint(uint64(v), 10) }

func u32s(v []uint32) []any {
	out := make([]any, len(v))
	for i, x := range v {
		out[i] = x
	}
	return out
}

func i32s[T ~int32 | ~int](v []T) []any {
	out := make([]any, len(v))
	for i, x := range v {
		out[i] = int64(x)
	}
	return out
}

func idsJSON(v []core.NodeID) []any {
	out := make([]any, len(v))
	for i, x := range v {
		out[i] = u64(x)
	}
	return out
}

func nsJSON(ns core.Namespace) map[string]any {
	return map[string]any{"extra_key": ns.ExtraKey, "cache_salt": ns.CacheSalt, "lora": ns.LoRA}
}

func receiptJSON(r core.Receipt) map[string]any {
	return map[string]any{
		"node": u64(r.Node), "serial": u64(r.Serial), "delta": s64(int64(r.Delta)),
		"swa_uuid": s64(r.SWAUUID), "swa_host_uuid": s64(r.SWAHostUUID), "skipped": int64(r.Skipped),
		"host": r.Host,
	}
}

func requestJSON(q *abi.Request) map[string]any {
	m := map[string]any{"op": q.Op.String(), "instance": int64(q.Instance), "id": u64(q.ID)}
	switch q.Op {
	case abi.OpCreate:
		c := q.Config
		comps := make([]any, len(c.Components))
		for i, x := range c.Components {
			comps[i] = int64(x)
		}
		m["config"] = map[string]any{
			"page_size": int64(c.PageSize), "components": comps, "policy": c.Policy,
			"bigram": c.Bigram, "host_tier": c.HostTier, "write_policy": int64(c.WritePolicy),
			"write_through_threshold": int64(c.WriteThroughThreshold), "kv_events": c.KVEvents,
			"hash_convention": int64(c.HashConvention), "swa_window": int64(c.SWAWindow),
			"mamba_chunk_size": int64(c.MambaChunkSize), "mamba_max_path_states": int64(c.MambaMaxPathStates),
			"external_linker": c.ExternalLinker, "mamba_policy": c.MambaPolicy,
			"mamba_ssm_layers": int64(c.MambaModel.SSMLayers), "mamba_attn_layers": int64(c.MambaModel.AttnLayers),
			"mamba_mlp_layers": int64(c.MambaModel.MLPLayers), "mamba_d": int64(c.MambaModel.D), "mamba_n": int64(c.MambaModel.N),
			"mamba_alpha": c.MambaAlpha,
		}
	case abi.OpMatch, abi.OpProtect:
		m["namespace"] = nsJSON(q.Insert.Namespace)
		m["tokens"] = u32s(q.Insert.Tokens)
	case abi.OpUnprotect:
		m["serial"] = u64(q.Serial)
	case abi.OpInsert, abi.OpBeginInsert:
		p := q.Insert
		m["namespace"] = nsJSON(p.Namespace)
		m["tokens"] = u32s(p.Tokens)
		m["slots"] = i32s(p.Slots)
		m["prev_prefix_len"] = int64(p.PrevPrefixLen)
		m["priority"] = s64(p.Priority)
		m["chunked"] = p.Chunked
		m["track_adopted"] = p.TrackAdopted
		m["session_id"] = p.SessionID
		m["swa_evicted_seqlen"] = int64(p.SWAEvictedSeqlen)
		m["swa_branching_seqlen"] = int64(p.SWABranchingSeqlen)
		m["mamba_slot"] = int64(p.MambaSlot)
	case abi.OpBeginInsertMatched, abi.OpBeginInsertMatchedUnlock:
		if q.Op == abi.OpBeginInsertMatchedUnlock {
			m["node"] = u64(q.Node)
			m["receipt"] = receiptJSON(q.Receipt)
			m["skip_swa"] = q.SkipSWA
		}
		p := q.Insert
		m["match_id"] = u64(q.Matched.MatchID)
		m["namespace"] = nsJSON(p.Namespace)
		m["token_count"] = int64(q.Matched.Tokens)
		m["slot_prefix"] = int64(q.Matched.Slots)
		m["slots"] = i32s(p.Slots)
		m["prev_prefix_len"] = int64(p.PrevPrefixLen)
		m["priority"] = s64(p.Priority)
		m["chunked"] = p.Chunked
		m["track_adopted"] = p.TrackAdopted
		m["session_id"] = p.SessionID
		m["swa_evicted_seqlen"] = int64(p.SWAEvictedSeqlen)
		m["swa_branching_seqlen"] = int64(p.SWABranchingSeqlen)
		m["mamba_slot"] = int64(p.MambaSlot)
	case abi.OpLock:
		m["node"] = u64(q.Node)
		m["skip"] = int64(q.Skip)
	case abi.OpMatchLock:
		m["namespace"] = nsJSON(q.Insert.Namespace)
		m["tokens"] = u32s(q.Insert.Tokens)
		m["skip"] = int64(q.Skip)
	case abi.OpUnlock:
		m["node"] = u64(q.Node)
		m["receipt"] = receiptJSON(q.Receipt)
		m["skip_swa"] = q.SkipSWA
	case abi.OpUnlockSWAEarly, abi.OpHostUnlock:
		m["node"] = u64(q.Node)
		m["receipt"] = receiptJSON(q.Receipt)
	case abi.OpMambaSetAlpha:
		m["alpha"] = q.Alpha
	case abi.OpEvict, abi.OpEvictStart, abi.OpEvictHost:
		m["component"] = int64(q.Component)
		m["want"] = s64(q.Want)
	case abi.OpInspect, abi.OpEvictExcessPathStates, abi.OpHostLock, abi.OpBackupSpec, abi.OpDemote,
		abi.OpDropSubtreeNoHost, abi.OpStorageSpec, abi.OpLinkerChain:
		m["node"] = u64(q.Node)
	case abi.OpLoadBack, abi.OpFinishLoadBack:
		m["anchor"] = u64(q.Node)
	case abi.OpCommitBackup:
		c := q.Backup
		m["node"] = u64(q.Node)
		m["full"] = optI32s(c.Full)
		m["swa"] = slotListsJSON(c.SWA)
		m["mamba"] = int64(c.Mamba)
	case abi.OpCommitLoadBack:
		c := q.LoadBack
		m["anchor"] = u64(q.Node)
		m["full"] = slotListsJSON(c.Full)
		m["swa"] = slotListsJSON(c.SWA)
		m["mamba"] = int64(c.Mamba)
	case abi.OpMarkWriteThroughPending, abi.OpFinishWriteThrough:
		m["nodes"] = idsJSON(q.Nodes)
		m["ack"] = s64(q.Ack)
	case abi.OpInsertHost:
		m["anchor"] = u64(q.Node)
		m["namespace"] = nsJSON(q.Insert.Namespace)
		m["tokens"] = u32s(q.Insert.Tokens)
		m["host_slots"] = i32s(q.Insert.Slots)
	case abi.OpMarkLinkerPending:
		m["nodes"] = idsJSON(q.Nodes)
		m["offload_id"] = s64(q.OffloadID)
	case abi.OpFinishLinkerOffload:
		m["nodes"] = idsJSON(q.Nodes)
		m["offload_id"] = s64(q.OffloadID)
		m["ok"] = q.OK
	case abi.OpMarkLinkerStoredPath:
		m["from"] = u64(q.Node)
		m["until"] = u64(q.Until)
	case abi.OpSanityCheckOngoing:
		m["write_through"] = optIDs(q.Ongoing.WriteThrough)
		m["load_back"] = optIDs(q.Ongoing.LoadBack)
	case abi.OpLRUOrder:
		m["component"] = int64(q.Component)
		m["host"] = q.Host
	case abi.OpDFSOrder:
		m["ids"] = idsJSON(q.Nodes)
	default:
		snapRequestJSON(q, m)
	}
	return m
}

func insertResultJSON(ir core.InsertResult) map[string]any {
	var adopted any
	if ir.Adopted != nil {
		per := make([]any, len(ir.Adopted))
		for c, rs := range ir.Adopted {
			list := make([]any, len(rs))
			for k, rg := range rs {
				list[k] = []any{int64(rg.Start), int64(rg.End)}
			}
			per[c] = list
		}
		adopted = per
	}
	return map[string]any{
		"prefix_len": int64(ir.PrefixLen), "total_len": int64(ir.TotalLen),
		"last_device": u64(ir.LastDevice), "mamba_exist": ir.MambaExist,
		"swa_branch_inserted": ir.SWABranchInserted, "adopted": adopted,
	}
}

func optI32s(v []int32) any {
	if v == nil {
		return nil
	}
	return i32s(v)
}

func optIDs(v []core.NodeID) any {
	if v == nil {
		return nil
	}
	return idsJSON(v)
}

func slotListsJSON(v [][]int32) []any {
	out := make([]any, len(v))
	for i, s := range v {
		out[i] = i32s(s)
	}
	return out
}

func nodeSlotsJSON(v []core.NodeSlots) []any {
	out := make([]any, len(v))
	for i, e := range v {
		out[i] = map[string]any{"node": u64(e.Node), "slots": i32s(e.Slots)}
	}
	return out
}

func strsJSON(v []string) []any {
	out := make([]any, len(v))
	for i, s := range v {
		out[i] = s
	}
	return out
}

func responseJSON(r *abi.Response) map[string]any {
	m := map[string]any{
		"op": int64(r.Op), "status": int64(r.Status), "code": int64(r.Code),
		"instance": int64(r.Instance), "id": u64(r.ID),
	}
	acts := make([]any, len(r.Actions))
	for i, a := range r.Actions {
		acts[i] = map[string]any{
			"kind": int64(a.Kind), "component": int64(a.Component), "node": u64(a.Node),
			"ack": s64(a.Ack), "nodes": idsJSON(a.Nodes), "slots": i32s(a.Slots),
			"incoming": i32s(a.Incoming),
		}
	}
	m["actions"] = acts
	if r.Status != abi.StatusOK {
		m["message"] = r.Message
		return m
	}
	switch r.Op {
	case abi.OpVersion:
		m["abi_version"] = int64(r.ABIVersion)
		m["implementation"] = r.Impl
	case abi.OpCreate:
		m["handle"] = int64(r.Handle)
		m["root"] = u64(r.Root)
		m["page_size"] = int64(r.PageSize)
		m["components"] = int64(r.CompSet)
		m["policy"] = r.Policy
	case abi.OpReset:
		m["root"] = u64(r.Root)
	case abi.OpStats:
		s := r.Stats
		ev, pr := make([]any, abi.NumComponents), make([]any, abi.NumComponents)
		for c := range abi.NumComponents {
			ev[c], pr[c] = s64(s.Evictable[c]), s64(s.Protected[c])
		}
		m["root"] = u64(s.Root)
		m["page_size"] = int64(s.PageSize)
		m["components"] = int64(s.Components)
		m["policy"] = s.Policy
		m["evictable"] = ev
		m["protected"] = pr
		m["insert_in_flight"] = s.InsertInFlight
		m["eviction_in_flight"] = s.EvictionInFlight
		m["live_receipts"] = int64(s.LiveReceipts)
	case abi.OpMatch, abi.OpMatchLock:
		if r.Op == abi.OpMatchLock {
			m["receipt"] = receiptJSON(r.Receipt)
		}
		x := r.Match
		m["indices"] = i32s(x.Indices)
		m["last_device"] = u64(x.LastDevice)
		m["last_host"] = u64(x.LastHost)
		m["best"] = u64(x.Best)
		m["host_hit_len"] = int64(x.HostHitLen)
		m["swa_host_hit_len"] = int64(x.SWAHostHitLen)
		m["swa_branching_seqlen"] = int64(x.SWABranchingSeqlen)
		m["mamba_host_hit_len"] = int64(x.MambaHostHitLen)
		m["mamba_branching_seqlen"] = int64(x.MambaBranchingSeqlen)
		m["full_kv_hit_len"] = int64(x.FullKVHitLen)
		m["mamba_slot"] = int64(x.MambaSlot)
	case abi.OpInsert:
		m["result"] = insertResultJSON(r.Insert)
	case abi.OpBeginInsert, abi.OpResumeInsert, abi.OpBeginInsertMatched, abi.OpBeginInsertMatchedUnlock:
		m["done"] = r.Done
		m["result"] = insertResultJSON(r.Insert)
		if r.Op == abi.OpBeginInsertMatchedUnlock {
			m["unlocked"] = r.Unlock.Released
			m["unlock_code"] = int64(r.Unlock.Code)
			m["unlock_message"] = r.Unlock.Message
		}
	case abi.OpLock, abi.OpHostLock:
		m["receipt"] = receiptJSON(r.Receipt)
	case abi.OpEvict, abi.OpEvictHost:
		m["freed"] = s64(r.Freed)
	case abi.OpEvictNext:
		m["node"] = u64(r.Node)
		m["freed"] = s64(r.Freed)
		m["done"] = r.Done
	case abi.OpInspect:
		in := r.Info
		comps := make([]any, abi.NumComponents)
		for c := range abi.NumComponents {
			comps[c] = map[string]any{
				"device": optI32s(in.Device[c]), "host": optI32s(in.Host[c]),
				"lock": int64(in.Lock[c]), "host_lock": int64(in.HostLock[c]),
			}
		}
		m["info"] = map[string]any{
			"id": u64(in.ID), "parent": u64(in.Parent), "children": idsJSON(in.Children),
			"namespace": nsJSON(in.Namespace), "key": u32s(in.Key), "components": comps,
			"hits": s64(in.Hits), "priority": s64(in.Priority), "last_access": s64(in.LastAccess),
			"creation": s64(in.Creation), "dleaf": in.DLeaf, "swa_uuid": s64(in.SWAUUID),
			"hleaf": in.HLeaf, "write_through_pending": s64(in.WriteThroughPending), "pinned_by": u64(in.PinnedBy),
			"external_stored": in.ExternalStored, "external_pending": s64(in.ExternalPending),
		}
	case abi.OpRender:
		m["text"] = r.Text
	case abi.OpDeviceLeaves, abi.OpNodes, abi.OpLRUOrder, abi.OpMarkWriteThroughPending, abi.OpLinkerChain:
		m["nodes"] = idsJSON(r.Nodes)
	case abi.OpBackupSpec:
		s := r.Spec
		m["spec"] = map[string]any{"node": u64(s.Node), "full": optI32s(s.Full), "swa": nodeSlotsJSON(s.SWA), "mamba": int64(s.Mamba)}
	case abi.OpDropSubtreeNoHost:
		m["dropped"] = r.Dropped
	case abi.OpLoadBack:
		p := r.Plan
		m["plan"] = map[string]any{"anchor": u64(p.Anchor), "full": nodeSlotsJSON(p.Full), "swa": nodeSlotsJSON(p.SWA),
			"mamba": int64(p.Mamba), "pinned": p.Pinned}
	case abi.OpInsertHost:
		h := r.InsertHost
		m["result"] = map[string]any{"node": u64(h.Node), "prefix_len": int64(h.PrefixLen), "dropped": h.Dropped}
	case abi.OpStorageSpec:
		s := r.Storage
		m["storage"] = map[string]any{"node": u64(s.Node), "prefix_keys": strsJSON(s.PrefixKeys), "full": strsJSON(s.Full),
			"swa": strsJSON(s.SWA), "mamba": s.Mamba}
	case abi.OpBackfillHashes:
		m["hashed"] = int64(r.Hashed)
	case abi.OpProtect:
		m["serial"] = u64(r.Protection.Serial)
		m["len"] = int64(r.Protection.Len)
	case abi.OpDFSOrder:
		m["order"] = i32s(r.Order)
	case abi.OpTakeEvents:
		evs := make([]any, len(r.Events))
		for i, e := range r.Events {
			hs := make([]any, len(e.BlockHashes))
			for k, h := range e.BlockHashes {
				hs[k] = s64(h)
			}
			evs[i] = map[string]any{
				"kind": int64(e.Kind), "medium": int64(e.Medium), "has_parent": e.HasParent,
				"parent_block_hash": s64(e.ParentBlockHash), "block_size": int64(e.BlockSize),
				"block_hashes": hs, "token_ids": u32s(e.TokenIDs),
				"cache_salt": e.CacheSalt, "session_id": e.SessionID, "lora": e.LoRA,
			}
		}
		m["events"] = evs
	default:
		snapResponseJSON(r, m)
	}
	return m
}
