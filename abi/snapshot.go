package abi

import (
	"math"

	"github.com/radixkv/radixkv/core/snapshot"
)

// The SSM snapshot index ops (issue 14's range 0x0060-0x007F). Each
// instance owns one core/snapshot index beside its tree, created with the
// default configuration on first use; snapshot_configure replaces it with
// an empty one. Slots and blobs the index gives back travel in the
// result, not as actions: the index never touches the tree's pools.
const (
	OpSnapshotConfigure  Op = 0x0060 // snapshot.New: replace the index
	OpSnapshotLookup     Op = 0x0061 // snapshot.Index.Lookup
	OpSnapshotInsert     Op = 0x0062 // Insert, InsertTail, InsertSibling
	OpSnapshotEvict      Op = 0x0063 // EvictLRU, EvictToTier
	OpSnapshotPromote    Op = 0x0064 // snapshot.Index.Promote
	OpSnapshotForget     Op = 0x0065 // snapshot.Index.Forget
	OpSnapshotEndSession Op = 0x0066 // snapshot.Index.EndSession
	OpSnapshotStats      Op = 0x0067 // snapshot.Index.Stats
)

// Codes of the snapshot index's errors (its ErrInvalidConfig,
// ErrInvalidArgument and ErrSanity use invalid_config, invalid_argument
// and sanity).
const (
	CodeUnknownKey     Code = 28 // snapshot.ErrUnknownKey
	CodeUnknownSession Code = 29 // snapshot.ErrUnknownSession
	CodeWrongAdapter   Code = 30 // snapshot.ErrWrongAdapter
	CodeResident       Code = 31 // snapshot.ErrResident
	CodeSlotInUse      Code = 32 // snapshot.ErrSlotInUse
)

func init() {
	for op, name := range map[Op]string{
		OpSnapshotConfigure: "snapshot_configure", OpSnapshotLookup: "snapshot_lookup", OpSnapshotInsert: "snapshot_insert",
		OpSnapshotEvict: "snapshot_evict", OpSnapshotPromote: "snapshot_promote", OpSnapshotForget: "snapshot_forget",
		OpSnapshotEndSession: "snapshot_end_session", OpSnapshotStats: "snapshot_stats",
	} {
		opNames[op] = name
		opTable[op] = name // opTable was filled before this init ran
	}
	for c, name := range map[Code]string{
		CodeUnknownKey: "unknown_key", CodeUnknownSession: "unknown_session", CodeWrongAdapter: "wrong_adapter",
		CodeResident: "resident", CodeSlotInUse: "slot_in_use",
	} {
		codeNames[c] = name
	}
}

// IsSnapshotOp reports whether op is one of the snapshot index ops.
func (op Op) IsSnapshotOp() bool { return op >= OpSnapshotConfigure && op <= OpSnapshotStats }

// SnapshotRequest is the body of the snapshot ops; which fields are
// meaningful depends on the op (SPEC.md §4.9).
type SnapshotRequest struct {
	Config    snapshot.Config // configure (Config.Marconi nil or set)
	Kind      snapshot.Kind   // insert
	Tokens    []uint32        // lookup, insert
	Matched   int32           // lookup
	Session   uint64          // lookup, insert, promote, end_session
	Adapter   uint64          // lookup, insert, promote, forget
	Slot      int32           // insert, promote
	Key       uint64          // promote, forget
	ToTier    bool            // evict
	MinTokens int32           // evict (with ToTier)
}

// SnapshotResult is the result of the snapshot ops.
type SnapshotResult struct {
	Match     snapshot.Match     // lookup
	Displaced snapshot.Displaced // insert, end_session
	Evicted   bool               // evict: false when nothing was resident
	Evict     snapshot.TierEvict // evict (Outcome 0: removed by the LRU form)
	Stats     snapshot.Stats     // stats
	Alpha     float64            // stats: Marconi's alpha (0 without Marconi)
}

func putF64(b []byte, v float64) []byte { return putU64(b, math.Float64bits(v)) }

func (r *reader) f64(field string) float64 { return math.Float64frombits(r.u64(field)) }

func putU64s(b []byte, v []uint64) []byte {
	b = putU32(b, uint32(len(v)))
	for _, x := range v {
		b = putU64(b, x)
	}
	return b
}

func (r *reader) u64s(field string) []uint64 {
	n := r.count(field, 8)
	if n == 0 || r.err != nil {
		return nil
	}
	out := make([]uint64, n)
	for i := range out {
		out[i] = r.u64(field)
	}
	return out
}

func appendSnapshotRequest(b []byte, op Op, q *SnapshotRequest) []byte {
	switch op {
	case OpSnapshotConfigure:
		c := &q.Config
		b = putF64(b, c.Alpha)
		b = putI32(b, int32(c.LeaseTTL))
		b = putBool(b, c.NoLease)
		b = putBool(b, c.GlobalLRU)
		m := c.Marconi
		b = putBool(b, m != nil)
		if m == nil {
			m = &snapshot.MarconiConfig{}
		}
		for _, v := range []int{m.Model.SSMLayers, m.Model.AttnLayers, m.Model.MLPLayers, m.Model.D, m.Model.N} {
			b = putI32(b, int32(v))
		}
		b = putF64(b, m.Alpha)
	case OpSnapshotLookup:
		b = putU32s(b, q.Tokens)
		b = putI32(b, q.Matched)
		b = putU64(b, q.Session)
		b = putU64(b, q.Adapter)
	case OpSnapshotInsert:
		b = putU8(b, uint8(q.Kind))
		b = putU32s(b, q.Tokens)
		b = putU64(b, q.Adapter)
		b = putI32(b, q.Slot)
		b = putU64(b, q.Session)
	case OpSnapshotEvict:
		b = putBool(b, q.ToTier)
		b = putI32(b, q.MinTokens)
	case OpSnapshotPromote:
		b = putU64(b, q.Key)
		b = putU64(b, q.Adapter)
		b = putI32(b, q.Slot)
		b = putU64(b, q.Session)
	case OpSnapshotForget:
		b = putU64(b, q.Key)
		b = putU64(b, q.Adapter)
	case OpSnapshotEndSession:
		b = putU64(b, q.Session)
	}
	return b
}

func decodeSnapshotRequest(r *reader, op Op, q *SnapshotRequest, toks []uint32) {
	switch op {
	case OpSnapshotConfigure:
		c := &q.Config
		c.Alpha = r.f64("alpha")
		c.LeaseTTL = int(r.i32("lease_ttl"))
		c.NoLease = r.boolean("no_lease")
		c.GlobalLRU = r.boolean("global_lru")
		on := r.boolean("marconi")
		var m snapshot.MarconiConfig
		m.Model.SSMLayers, m.Model.AttnLayers, m.Model.MLPLayers = int(r.i32("ssm_layers")), int(r.i32("attn_layers")), int(r.i32("mlp_layers"))
		m.Model.D, m.Model.N = int(r.i32("d")), int(r.i32("n"))
		m.Alpha = r.f64("marconi_alpha")
		if on {
			c.Marconi = &m
		} else if m != (snapshot.MarconiConfig{}) && r.err == nil {
			r.fail(CodeMalformed, "marconi fields must be 0 when marconi is false")
		}
	case OpSnapshotLookup:
		q.Tokens = r.u32s("tokens", toks)
		q.Matched = r.i32("matched")
		q.Session = r.u64("session")
		q.Adapter = r.u64("adapter")
	case OpSnapshotInsert:
		k := r.u8("kind")
		if k > uint8(snapshot.Sibling) && r.err == nil {
			r.fail(CodeMalformed, "snapshot kind %d is not plain (0), tail (1) or sibling (2)", k)
		}
		q.Kind = snapshot.Kind(k)
		q.Tokens = r.u32s("tokens", toks)
		q.Adapter = r.u64("adapter")
		q.Slot = r.i32("slot")
		q.Session = r.u64("session")
	case OpSnapshotEvict:
		q.ToTier = r.boolean("to_tier")
		q.MinTokens = r.i32("min_tokens")
	case OpSnapshotPromote:
		q.Key = r.u64("key")
		q.Adapter = r.u64("adapter")
		q.Slot = r.i32("slot")
		q.Session = r.u64("session")
	case OpSnapshotForget:
		q.Key = r.u64("key")
		q.Adapter = r.u64("adapter")
	case OpSnapshotEndSession:
		q.Session = r.u64("session")
	}
}

// snapshotCounters lists the stats counters in wire order.
func snapshotCounters(s *snapshot.Stats) []*uint64 {
	return []*uint64{&s.Saves, &s.Overwrites, &s.Swept, &s.Lookups, &s.Hits, &s.TierHits, &s.AnchorTokens,
		&s.RecomputeOnHit, &s.RecomputeOnMiss, &s.Evictions, &s.Spills, &s.Drops, &s.FaultIns, &s.Reaps}
}

func snapshotSizes(s *snapshot.Stats) []*int {
	return []*int{&s.Entries, &s.ResidentEntries, &s.TieredEntries, &s.LeasedEntries}
}

func appendSnapshotResult(b []byte, op Op, res *SnapshotResult) []byte {
	switch op {
	case OpSnapshotLookup:
		m := &res.Match
		b = putBool(b, m.Found)
		b = putBool(b, m.Tiered)
		b = putI32(b, m.Slot)
		b = putU64(b, m.Key)
		b = putI32(b, int32(m.Tokens))
		b = putU8(b, uint8(m.Kind))
	case OpSnapshotInsert, OpSnapshotEndSession:
		b = putI32s(b, res.Displaced.Slots)
		b = putU64s(b, res.Displaced.Blobs)
	case OpSnapshotEvict:
		e := &res.Evict
		b = putBool(b, res.Evicted)
		b = putU8(b, uint8(e.Outcome))
		b = putI32(b, e.Slot)
		b = putU64(b, e.Key)
		b = putU64(b, e.Adapter)
		b = putI32(b, int32(e.Tokens))
	case OpSnapshotStats:
		for _, p := range snapshotCounters(&res.Stats) {
			b = putU64(b, *p)
		}
		for _, p := range snapshotSizes(&res.Stats) {
			b = putU32(b, uint32(*p))
		}
		b = putF64(b, res.Alpha)
	}
	return b
}

func decodeSnapshotResult(d *reader, op Op, res *SnapshotResult) {
	switch op {
	case OpSnapshotLookup:
		m := &res.Match
		m.Found = d.boolean("found")
		m.Tiered = d.boolean("tiered")
		m.Slot = d.i32("slot")
		m.Key = d.u64("key")
		m.Tokens = int(d.i32("tokens"))
		m.Kind = snapshot.Kind(d.u8("kind"))
	case OpSnapshotInsert, OpSnapshotEndSession:
		res.Displaced.Slots = d.i32s("slots", nil)
		res.Displaced.Blobs = d.u64s("blobs")
	case OpSnapshotEvict:
		e := &res.Evict
		res.Evicted = d.boolean("evicted")
		e.Outcome = snapshot.TierOutcome(d.u8("outcome"))
		e.Slot = d.i32("slot")
		e.Key = d.u64("key")
		e.Adapter = d.u64("adapter")
		e.Tokens = int(d.i32("tokens"))
	case OpSnapshotStats:
		for _, p := range snapshotCounters(&res.Stats) {
			*p = d.u64("counter")
		}
		for _, p := range snapshotSizes(&res.Stats) {
			*p = int(d.u32("size"))
		}
		res.Alpha = d.f64("alpha")
	}
}
