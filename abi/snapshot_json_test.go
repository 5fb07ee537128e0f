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
