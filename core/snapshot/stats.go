package snapshot

import (
	"fmt"
	"slices"
)

// Stats counts what the index did since New.
type Stats struct {
	Saves, Overwrites, Swept     uint64 // appended entries, overwritten ones, tails/siblings superseded
	Lookups, Hits, TierHits      uint64
	AnchorTokens                 uint64 // sum of winning anchors
	RecomputeOnHit               uint64 // sum of matched - anchor over hits
	RecomputeOnMiss              uint64 // sum of matched over misses
	Evictions, Spills, Drops     uint64 // Evictions counts every victim (spilled, dropped, removed)
	FaultIns, Reaps              uint64 // promotes, forgets
	Entries, ResidentEntries     int
	TieredEntries, LeasedEntries int
}

// Stats returns the counters and the current entry counts.
func (x *Index) Stats() Stats {
	s := x.stats
	s.Entries, s.ResidentEntries = len(x.entries), len(x.bySlot)
	s.TieredEntries = s.Entries - s.ResidentEntries
	lease := x.leaseActive()
	for i := range x.entries {
		e := &x.entries[i]
		if lease && !e.tiered && e.session == x.live && e.kind != Plain {
			s.LeasedEntries++
		}
	}
	return s
}

// Entry describes one snapshot for tests and tools.
type Entry struct {
	Key, Adapter, Session uint64
	Tokens                int
	Slot                  int32 // -1 when tiered
	Stamp                 uint64
	Kind                  Kind
	Tiered                bool
}

// Entries returns every entry ordered by key (a stable order independent of
// the internal layout).
func (x *Index) Entries() []Entry {
	out := make([]Entry, 0, len(x.entries))
	for _, e := range x.entries {
		out = append(out, Entry{Key: e.key, Adapter: e.adapter, Session: e.session, Tokens: e.tokens, Slot: e.slot, Stamp: e.stamp, Kind: e.kind, Tiered: e.tiered})
	}
	slices.SortFunc(out, func(a, b Entry) int {
		switch {
		case a.Key < b.Key:
			return -1
		case a.Key > b.Key:
			return 1
		}
		return 0
	})
	return out
}

// Check verifies the index's invariants and returns ErrSanity naming the
// first violation: the key and slot maps mirror the entries, a tiered
// entry has no slot, tails have a session, stamps are unique and not ahead
// of the clock.
func (x *Index) Check() error {
	bad := func(f string, a ...any) error { return fmt.Errorf("%w: "+f, append([]any{ErrSanity}, a...)...) }
	if len(x.byKey) != len(x.entries) {
		return bad("%d keys for %d entries", len(x.byKey), len(x.entries))
	}
	resident := 0
	stamps := make(map[uint64]bool, len(x.entries))
	for p := range x.entries {
		e := &x.entries[p]
		if q, ok := x.byKey[e.key]; !ok || int(q) != p {
			return bad("entry %d (%#x) not indexed by its key", p, e.key)
		}
		if e.tokens <= 0 || e.kind > Sibling || (e.kind == Tail && e.session == 0) {
			return bad("entry %#x: tokens %d kind %v session %d", e.key, e.tokens, e.kind, e.session)
		}
		if e.stamp == 0 || e.stamp > x.clock || stamps[e.stamp] {
			return bad("entry %#x: stamp %d (clock %d) not unique or ahead", e.key, e.stamp, x.clock)
		}
		stamps[e.stamp] = true
		if e.tiered {
			if e.slot != -1 {
				return bad("tiered entry %#x keeps slot %d", e.key, e.slot)
			}
			continue
		}
		resident++
		if k, ok := x.bySlot[e.slot]; !ok || k != e.key || e.slot < 0 {
			return bad("slot %d of %#x not owned by it", e.slot, e.key)
		}
	}
	lens := map[int]int{}
	for i := range x.entries {
		lens[x.entries[i].tokens]++
	}
	if len(lens) != len(x.lens) || len(lens) != len(x.lenN) || !slices.IsSorted(x.lens) {
		return bad("length index has %d lengths, entries %d", len(x.lens), len(lens))
	}
	for _, n := range x.lens {
		if lens[n] != x.lenN[n] {
			return bad("length %d counted %d times, entries have it %d times", n, x.lenN[n], lens[n])
		}
	}
	if err := x.checkForest(); err != nil {
		return err
	}
	if resident != len(x.bySlot) {
		return bad("%d slots for %d resident entries", len(x.bySlot), resident)
	}
	return nil
}

// checkForest verifies the Marconi bookkeeping against a brute-force
// recomputation: every entry's parent is the deepest other entry of its
// adapter whose tokens prefix its own, and the child lists mirror it.
func (x *Index) checkForest() error {
	f := x.mar
	if f == nil {
		return nil
	}
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: marconi: "+format, append([]any{ErrSanity}, a...)...)
	}
	if len(f.toks) != len(x.entries) {
		return bad("%d token lists for %d entries", len(f.toks), len(x.entries))
	}
	listed := 0
	for i := range x.entries {
		e := &x.entries[i]
		t, ok := f.toks[e.key]
		if !ok || len(t) != e.tokens || Hash(t, e.adapter) != e.key {
			return bad("entry %#x has no matching tokens", e.key)
		}
		want, has := uint64(0), false
		depth := -1
		for j := range x.entries {
			c := &x.entries[j]
			ct := f.toks[c.key]
			if j != i && c.adapter == e.adapter && len(ct) < len(t) && len(ct) > depth && slices.Equal(t[:len(ct)], ct) {
				want, has, depth = c.key, true, len(ct)
			}
		}
		got, gotHas := f.parent[e.key]
		if gotHas != has || got != want {
			return bad("entry %#x: parent %#x (%v), want %#x (%v)", e.key, got, gotHas, want, has)
		}
		if !slices.Contains(f.getList(want, has), e.key) {
			return bad("entry %#x missing from its parent's children", e.key)
		}
	}
	listed = len(f.top)
	for _, l := range f.children {
		listed += len(l)
	}
	if listed != len(x.entries) {
		return bad("%d children listed for %d entries", listed, len(x.entries))
	}
	return nil
}
