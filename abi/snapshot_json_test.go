package abi_test

import (
	"github.com/radixkv/radixkv/abi"
	"github.com/radixkv/radixkv/core/snapshot"
)

func u64s(v []uint64) []any {
	out := make([]any, len(v))
	for i, x := range v {
		out[i] = u64(x)
	}
	return out
}

// snapRequestJSON adds the snapshot ops' request fields to m.
func snapRequestJSON(q *abi.Request, m map[string]any) {
	if q.Op.IsBlocksOp() {
		blocksRequestJSON(q, m)
		return
	}
	s := &q.Snap
	switch q.Op {
	case abi.OpSnapshotConfigure:
		c := s.Config
		cfg := map[string]any{"alpha": c.Alpha, "lease_ttl": int64(c.LeaseTTL), "no_lease": c.NoLease, "global_lru": c.GlobalLRU, "marconi": c.Marconi != nil}
		mc := snapshot.MarconiConfig{}
		if c.Marconi != nil {
			mc = *c.Marconi
		}
		cfg["ssm_layers"], cfg["attn_layers"], cfg["mlp_layers"] = int64(mc.Model.SSMLayers), int64(mc.Model.AttnLayers), int64(mc.Model.MLPLayers)
		cfg["d"], cfg["n"], cfg["marconi_alpha"] = int64(mc.Model.D), int64(mc.Model.N), mc.Alpha
		m["config"] = cfg
	case abi.OpSnapshotLookup:
		m["tokens"], m["matched"], m["session"], m["adapter"] = u32s(s.Tokens), int64(s.Matched), u64(s.Session), u64(s.Adapter)
	case abi.OpSnapshotInsert:
		m["kind"], m["tokens"], m["adapter"], m["slot"], m["session"] = int64(s.Kind), u32s(s.Tokens), u64(s.Adapter), int64(s.Slot), u64(s.Session)
	case abi.OpSnapshotEvict:
		m["to_tier"], m["min_tokens"] = s.ToTier, int64(s.MinTokens)
	case abi.OpSnapshotPromote:
		m["key"], m["adapter"], m["slot"], m["session"] = u64(s.Key), u64(s.Adapter), int64(s.Slot), u64(s.Session)
	case abi.OpSnapshotForget:
		m["key"], m["adapter"] = u64(s.Key), u64(s.Adapter)
	case abi.OpSnapshotEndSession:
		m["session"] = u64(s.Session)
	}
}

// snapResponseJSON adds the snapshot ops' results to m.
func snapResponseJSON(r *abi.Response, m map[string]any) {
	if r.Op.IsBlocksOp() {
		blocksResponseJSON(r, m)
		return
	}
	s := &r.Snap
	switch r.Op {
	case abi.OpSnapshotLookup:
		x := s.Match
		m["match"] = map[string]any{"found": x.Found, "tiered": x.Tiered, "slot": int64(x.Slot), "key": u64(x.Key),
			"tokens": int64(x.Tokens), "kind": int64(x.Kind)}
	case abi.OpSnapshotInsert, abi.OpSnapshotEndSession:
		m["displaced"] = map[string]any{"slots": i32s(s.Displaced.Slots), "blobs": u64s(s.Displaced.Blobs)}
	case abi.OpSnapshotEvict:
		e := s.Evict
		m["evicted"] = s.Evicted
		m["evict"] = map[string]any{"outcome": int64(e.Outcome), "slot": int64(e.Slot), "key": u64(e.Key),
			"adapter": u64(e.Adapter), "tokens": int64(e.Tokens)}
	case abi.OpSnapshotStats:
		st := s.Stats
		m["stats"] = map[string]any{
			"saves": u64(st.Saves), "overwrites": u64(st.Overwrites), "swept": u64(st.Swept), "lookups": u64(st.Lookups),
			"hits": u64(st.Hits), "tier_hits": u64(st.TierHits), "anchor_tokens": u64(st.AnchorTokens),
			"recompute_on_hit": u64(st.RecomputeOnHit), "recompute_on_miss": u64(st.RecomputeOnMiss),
			"evictions": u64(st.Evictions), "spills": u64(st.Spills), "drops": u64(st.Drops),
			"fault_ins": u64(st.FaultIns), "reaps": u64(st.Reaps),
			"entries": int64(st.Entries), "resident": int64(st.ResidentEntries), "tiered": int64(st.TieredEntries),
			"leased": int64(st.LeasedEntries), "alpha": s.Alpha,
		}
	}
}

// blocksRequestJSON adds the block-cache ops' request fields to m.
func blocksRequestJSON(q *abi.Request, m map[string]any) {
	b := &q.Blocks
	switch q.Op {
	case abi.OpBlocksConfigure:
		m["block_size"], m["sub_block_tail"] = int64(b.BlockSize), b.SubBlockTail
	case abi.OpBlocksLookup:
		m["tokens"], m["session"], m["adapter"] = u32s(b.Tokens), u64(b.Session), u64(b.Adapter)
	case abi.OpBlocksPeek:
		m["tokens"], m["adapter"] = u32s(b.Tokens), u64(b.Adapter)
	case abi.OpBlocksInsert:
		m["tokens"], m["table"], m["disks"], m["matched"], m["adapter"] = u32s(b.Tokens), u32s(b.Table), u32s(b.Disks), int64(b.Matched), u64(b.Adapter)
	case abi.OpBlocksRelease:
		m["tokens"], m["matched"], m["adapter"] = u32s(b.Tokens), int64(b.Matched), u64(b.Adapter)
	case abi.OpBlocksEvict:
		m["want"] = int64(b.Want)
	}
}

// blocksResponseJSON adds the block-cache ops' results to m.
func blocksResponseJSON(r *abi.Response, m map[string]any) {
	b := &r.Blocks
	switch r.Op {
	case abi.OpBlocksLookup:
		x := b.Match.Snapshot
		m["blocks"], m["disk_ids"], m["matched_tokens"] = u32s(b.Match.Blocks), u32s(b.Match.DiskIDs), int64(b.Match.MatchedTokens)
		m["match"] = map[string]any{"found": x.Found, "tiered": x.Tiered, "slot": int64(x.Slot), "key": u64(x.Key),
			"tokens": int64(x.Tokens), "kind": int64(x.Kind)}
	case abi.OpBlocksPeek:
		m["matched_tokens"] = int64(b.Match.MatchedTokens)
	case abi.OpBlocksInsert:
		a := b.Acquired
		m["acquired"] = map[string]any{"blocks": u32s(a.Blocks), "disk_ids": u32s(a.DiskIDs), "released": u32s(a.Released),
			"released_disk_ids": u32s(a.ReleasedDiskIDs), "unused": u32s(a.Unused)}
	case abi.OpBlocksEvict:
		m["blocks"], m["disk_ids"] = u32s(b.Evicted.Blocks), u32s(b.Evicted.DiskIDs)
	case abi.OpBlocksStats:
		s := b.Stats
		m["stats"] = map[string]any{"lookups": u64(s.Lookups), "hits": u64(s.Hits), "misses": u64(s.Misses),
			"sub_block_hits": u64(s.SubBlockHits), "lookup_tokens": u64(s.LookupTokens), "matched_tokens": u64(s.MatchedTokens),
			"inserts": u64(s.Inserts), "evicted_blocks": u64(s.EvictedBlocks), "nodes": int64(s.Nodes),
			"partial_blocks": int64(s.PartialBlocks), "blocks": int64(s.Blocks), "runs": int64(s.Runs),
			"referenced": int64(s.Referenced), "adapters": int64(s.Adapters)}
	}
}
