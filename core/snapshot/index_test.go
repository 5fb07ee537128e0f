package snapshot

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func newIndex(t *testing.T, cfg Config) *Index {
	t.Helper()
	x, err := New(cfg)
	require.NoError(t, err)
	return x
}

func seq(n int) []uint32 {
	s := make([]uint32, n)
	for i := range s {
		s[i] = uint32(100 + i)
	}
	return s
}

func ins(t *testing.T, x *Index, toks []uint32, slot int32, session uint64) Displaced {
	t.Helper()
	d, err := x.Insert(toks, 0, slot, session)
	require.NoError(t, err)
	require.NoError(t, x.Check())
	return d
}

func look(t *testing.T, x *Index, toks []uint32, matched int, session uint64) Match {
	t.Helper()
	m, err := x.Lookup(toks, matched, session, 0)
	require.NoError(t, err)
	require.NoError(t, x.Check())
	return m
}

func evict(t *testing.T, x *Index) int32 {
	t.Helper()
	s, ok := x.EvictLRU()
	require.True(t, ok)
	require.NoError(t, x.Check())
	return s
}

func TestNew_RejectsBadConfig(t *testing.T) {
	for _, c := range []Config{{Alpha: -0.1}, {Alpha: 8.5}, {LeaseTTL: -1}} {
		_, err := New(c)
		require.ErrorIs(t, err, ErrInvalidConfig, "%+v", c)
	}
}

func TestIndex_InsertLookupRoundtrip(t *testing.T) {
	x := newIndex(t, Config{})
	s := seq(32)
	ins(t, x, s, 3, 0)
	m := look(t, x, s, 32, 0)
	require.Equal(t, Match{Found: true, Slot: 3, Key: Hash(s, 0), Tokens: 32}, m)
	require.False(t, look(t, x, seq(31), 31, 0).Found, "a shorter prefix has no anchor")
	require.Equal(t, 1, x.Len())
}

// §9 (6): the deepest anchor within the matched length wins; one beyond it
// does not count.
func TestIndex_DeepestAnchorWithinMatched(t *testing.T) {
	x := newIndex(t, Config{})
	s := seq(64)
	ins(t, x, s[:16], 1, 0)
	ins(t, x, s[:32], 2, 0)
	ins(t, x, s[:48], 3, 0)
	cases := []struct {
		matched int
		slot    int32
		tokens  int
	}{{64, 3, 48}, {48, 3, 48}, {47, 2, 32}, {32, 2, 32}, {20, 1, 16}}
	for _, c := range cases {
		m := look(t, x, s, c.matched, 0)
		require.True(t, m.Found)
		require.Equal(t, c.slot, m.Slot, "matched %d", c.matched)
		require.Equal(t, c.tokens, m.Tokens)
	}
	require.False(t, look(t, x, s, 15, 0).Found)
	st := x.Stats()
	require.Equal(t, uint64(6), st.Lookups)
	require.Equal(t, uint64(5), st.Hits)
	require.Equal(t, uint64(48+48+32+32+16), st.AnchorTokens)
	require.Equal(t, uint64(16+0+15+0+4), st.RecomputeOnHit)
	require.Equal(t, uint64(15), st.RecomputeOnMiss)
}

// §9 (7): an overwrite keeps one entry, hands back the resident slot, and
// clears tail/sibling.
func TestIndex_OverwriteReturnsDisplacedAndClearsFlags(t *testing.T) {
	x := newIndex(t, Config{})
	s := seq(16)
	_, err := x.InsertTail(s, 0, 1, 7)
	require.NoError(t, err)
	d := ins(t, x, s, 2, 9)
	require.Equal(t, []int32{1}, d.Slots)
	require.Equal(t, 1, x.Len())
	e := x.Entries()[0]
	require.Equal(t, Plain, e.Kind)
	require.Equal(t, uint64(9), e.Session)
	_, err = x.InsertSibling(s, 0, 3, 9)
	require.NoError(t, err)
	d = ins(t, x, s, 4, 9)
	require.Equal(t, []int32{3}, d.Slots)
	require.Equal(t, Plain, x.Entries()[0].Kind)
	// Re-inserting into the same slot hands nothing back (it is in use).
	require.Empty(t, ins(t, x, s, 4, 9).Slots)
	st := x.Stats()
	require.Equal(t, uint64(1), st.Saves)
	require.Equal(t, uint64(4), st.Overwrites)
}

// §9 (8): plain entries serve every session; tails only their own.
func TestIndex_SessionGates(t *testing.T) {
	x := newIndex(t, Config{})
	s := seq(64)
	ins(t, x, s[:16], 1, 5)
	_, err := x.InsertTail(s[:48], 0, 2, 5)
	require.NoError(t, err)
	_, err = x.InsertSibling(s[:32], 0, 3, 5)
	require.NoError(t, err)
	require.Equal(t, int32(2), look(t, x, s, 64, 5).Slot, "own tail")
	require.Equal(t, int32(3), look(t, x, s, 64, 6).Slot, "sibling is not session-gated")
	require.Equal(t, int32(3), look(t, x, s, 64, 0).Slot, "no session: no tails")
	m := look(t, x, s, 64, 5)
	require.Equal(t, Tail, m.Kind)
	require.Equal(t, int32(1), look(t, x, s, 20, 6).Slot, "plain is cross-session")
}

// §9 (9): only the winner is re-stamped, and hit history does not protect.
func TestIndex_WinnerOnlyRestampAndNoHitHistory(t *testing.T) {
	x := newIndex(t, Config{})
	s := seq(64)
	ins(t, x, s[:16], 1, 0)
	ins(t, x, s[:32], 2, 0)
	for range 5 {
		look(t, x, s, 64, 0) // hits the 32-token entry only
	}
	ins(t, x, seq(8), 3, 0)
	// Entry 1 was never re-stamped by the deeper hits: it goes first.
	require.Equal(t, int32(1), evict(t, x))
	// Entry 2 (five hits) is older than entry 3: hits do not protect it.
	require.Equal(t, int32(2), evict(t, x))
	require.Equal(t, int32(3), evict(t, x))
	_, ok := x.EvictLRU()
	require.False(t, ok)
}

// §9 (10): lease behaviour.
func TestIndex_Lease(t *testing.T) {
	s := seq(64)
	other := []uint32{1, 2, 3, 4}
	t.Run("live tail and sibling protected, finish leaf not", func(t *testing.T) {
		x := newIndex(t, Config{})
		_, err := x.InsertTail(s[:48], 0, 1, 5)
		require.NoError(t, err)
		_, err = x.InsertSibling(s[:32], 0, 2, 5)
		require.NoError(t, err)
		ins(t, x, s[:16], 3, 5) // the finish leaf of session 5, newest
		look(t, x, s, 64, 5)    // session 5 live; restamps its tail
		require.Equal(t, 2, x.Stats().LeasedEntries)
		require.Equal(t, int32(3), evict(t, x), "the finish leaf is not leased")
	})
	t.Run("dormant session dies first", func(t *testing.T) {
		x := newIndex(t, Config{})
		_, err := x.InsertTail(other, 0, 1, 4) // session 4, old
		require.NoError(t, err)
		ins(t, x, s[:16], 2, 5)
		ins(t, x, s[:32], 3, 5)
		look(t, x, s[:16], 16, 5)               // 5 live; 16-entry newest
		require.Equal(t, int32(1), evict(t, x)) // dormant session's tail
		require.Equal(t, int32(3), evict(t, x)) // then LRU within session 5
		require.Equal(t, uint64(5), x.LiveSession())
	})
	t.Run("single leased entry still evicts", func(t *testing.T) {
		x := newIndex(t, Config{})
		_, err := x.InsertTail(s[:48], 0, 1, 5)
		require.NoError(t, err)
		look(t, x, s, 64, 5)
		require.Equal(t, int32(1), evict(t, x))
	})
	t.Run("all-leased pool still evicts", func(t *testing.T) {
		x := newIndex(t, Config{})
		_, err := x.InsertTail(s[:48], 0, 1, 5)
		require.NoError(t, err)
		_, err = x.InsertSibling(s[:32], 0, 2, 5)
		require.NoError(t, err)
		look(t, x, s, 64, 5)
		require.Equal(t, 2, x.Stats().LeasedEntries)
		require.Equal(t, int32(2), evict(t, x), "LRU among the leased")
	})
	t.Run("lease lapses after TTL evictions", func(t *testing.T) {
		x := newIndex(t, Config{LeaseTTL: 2})
		_, err := x.InsertTail(s[:48], 0, 1, 5)
		require.NoError(t, err)
		look(t, x, s, 64, 5)
		for i := range int32(3) {
			ins(t, x, []uint32{uint32(1000 + i)}, 10+i, 0)
		}
		require.Equal(t, int32(10), evict(t, x))
		require.Equal(t, int32(11), evict(t, x))
		// Two evictions without a lookup from session 5: the lease lapsed and
		// its tail (older than slot 12's entry) goes next.
		require.Equal(t, 0, x.Stats().LeasedEntries)
		require.Equal(t, int32(1), evict(t, x))
	})
	t.Run("lease off", func(t *testing.T) {
		x := newIndex(t, Config{NoLease: true})
		_, err := x.InsertTail(s[:48], 0, 1, 5)
		require.NoError(t, err)
		look(t, x, s, 64, 5)
		ins(t, x, other, 2, 5)
		require.Equal(t, int32(1), evict(t, x))
	})
	t.Run("new tail sweeps old tail and sibling", func(t *testing.T) {
		x := newIndex(t, Config{})
		_, err := x.InsertTail(s[:32], 0, 1, 5)
		require.NoError(t, err)
		_, err = x.InsertSibling(s[:16], 0, 2, 5)
		require.NoError(t, err)
		_, err = x.InsertTail(other, 0, 7, 6) // another session's tail survives
		require.NoError(t, err)
		d, err := x.InsertTail(s[:48], 0, 3, 5)
		require.NoError(t, err)
		require.NoError(t, x.Check())
		require.ElementsMatch(t, []int32{1, 2}, d.Slots)
		require.Equal(t, 2, x.Len())
		require.Equal(t, uint64(2), x.Stats().Swept)
	})
	t.Run("new tail may reuse the swept tail's slot", func(t *testing.T) {
		x := newIndex(t, Config{})
		_, err := x.InsertTail(s[:32], 0, 1, 5)
		require.NoError(t, err)
		d, err := x.InsertTail(s[:48], 0, 1, 5)
		require.NoError(t, err)
		require.NoError(t, x.Check())
		require.Empty(t, d.Slots)
	})
}

// §9 (11): alpha 0 is LRU; alpha > 0 keeps depth within a session, and
// session staleness stays primary.
func TestIndex_Alpha(t *testing.T) {
	s := seq(64)
	build := func(alpha float64) *Index {
		x := newIndex(t, Config{Alpha: alpha})
		ins(t, x, []uint32{9}, 9, 3) // dormant session 3, oldest, shallow
		ins(t, x, s[:48], 1, 5)      // deep, older
		ins(t, x, s[:16], 2, 5)      // shallow, newer
		return x
	}
	x := build(0)
	require.Equal(t, []int32{9, 1, 2}, []int32{evict(t, x), evict(t, x), evict(t, x)})
	x = build(2)
	require.Equal(t, []int32{9, 2, 1}, []int32{evict(t, x), evict(t, x), evict(t, x)})
	x = build(0)
	x.cfg.GlobalLRU = true
	require.Equal(t, []int32{9, 1, 2}, []int32{evict(t, x), evict(t, x), evict(t, x)})
}

// §9 (12): tiers.
func TestIndex_Tiers(t *testing.T) {
	s := seq(64)
	t.Run("spill keeps a tier entry, lookup reports it, promote rehomes", func(t *testing.T) {
		x := newIndex(t, Config{})
		ins(t, x, s[:32], 1, 0)
		ev, ok, err := x.EvictToTier(16)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, TierEvict{Outcome: Spill, Slot: 1, Key: Hash(s[:32], 0), Tokens: 32}, ev)
		require.NoError(t, x.Check())
		require.Equal(t, 1, x.Len())
		require.Equal(t, 0, x.Resident())
		m := look(t, x, s, 64, 0)
		require.Equal(t, Match{Found: true, Tiered: true, Slot: -1, Key: ev.Key, Tokens: 32}, m)
		_, ok, err = x.EvictToTier(0)
		require.NoError(t, err)
		require.False(t, ok, "nothing resident")
		_, ok = x.EvictLRU()
		require.False(t, ok)
		require.NoError(t, x.Promote(ev.Key, 0, 4, 8))
		require.NoError(t, x.Check())
		m = look(t, x, s, 64, 0)
		require.Equal(t, int32(4), m.Slot)
		require.False(t, m.Tiered)
		st := x.Stats()
		require.Equal(t, uint64(1), st.Spills)
		require.Equal(t, uint64(1), st.TierHits)
		require.Equal(t, uint64(1), st.FaultIns)
		require.Equal(t, uint64(8), x.Entries()[0].Session, "promote re-tags a plain entry")
	})
	t.Run("shallow victim dropped under the gate", func(t *testing.T) {
		x := newIndex(t, Config{})
		ins(t, x, s[:8], 1, 0)
		ev, ok, err := x.EvictToTier(16)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, Drop, ev.Outcome)
		require.Equal(t, int32(1), ev.Slot)
		require.Equal(t, 0, x.Len())
		require.Equal(t, uint64(1), x.Stats().Drops)
	})
	t.Run("tiered entries never hand back a slot; their blobs are named", func(t *testing.T) {
		x := newIndex(t, Config{})
		ins(t, x, s[:32], 1, 0)
		ev, _, _ := x.EvictToTier(0)
		d := ins(t, x, s[:32], 2, 0) // re-insert un-spills
		require.Empty(t, d.Slots)
		require.Equal(t, []uint64{ev.Key}, d.Blobs)
		require.False(t, x.Entries()[0].Tiered)
		// The tail sweep does not hand back a spilled tail's slot either.
		_, err := x.InsertTail(s[:48], 0, 3, 5)
		require.NoError(t, err)
		look(t, x, s, 64, 0) // lapse the lease for session 5: no live session
		x.live = 0
		for x.Resident() > 0 {
			_, _, err = x.EvictToTier(0)
			require.NoError(t, err)
		}
		d, err = x.InsertTail(s[:40], 0, 6, 5)
		require.NoError(t, err)
		require.Empty(t, d.Slots)
		require.Equal(t, []uint64{Hash(s[:48], 0)}, d.Blobs)
		require.NoError(t, x.Check())
	})
	t.Run("forget removes only tiered, is not an eviction", func(t *testing.T) {
		x := newIndex(t, Config{})
		ins(t, x, s[:32], 1, 0)
		ins(t, x, s[:16], 2, 0)
		key := Hash(s[:16], 0)
		require.ErrorIs(t, x.Forget(key, 0), ErrResident)
		ev, _, _ := x.EvictToTier(0)
		require.Equal(t, Hash(s[:32], 0), ev.Key)
		before := x.Stats()
		require.NoError(t, x.Forget(ev.Key, 0))
		require.ErrorIs(t, x.Forget(ev.Key, 0), ErrUnknownKey, "idempotent: gone")
		after := x.Stats()
		require.Equal(t, before.Evictions, after.Evictions)
		require.Equal(t, uint64(1), after.Reaps)
		require.Equal(t, 1, x.Len())
	})
}

// §9 (5) and the fold collision: adapters never see each other's entries,
// and an entry whose key collides with another adapter's prefix is not
// returned to it.
func TestIndex_AdapterIsolation(t *testing.T) {
	x := newIndex(t, Config{})
	s := seq(16)
	_, err := x.Insert(s, 1, 1, 0)
	require.NoError(t, err)
	require.False(t, look(t, x, s, 16, 0).Found)
	m, err := x.Lookup(s, 16, 0, 1)
	require.NoError(t, err)
	require.Equal(t, int32(1), m.Slot)
	// Adapter 1 over [2 3] has the key of adapter 0 over [1 2 3].
	y := newIndex(t, Config{})
	_, err = y.Insert([]uint32{2, 3}, 1, 5, 0)
	require.NoError(t, err)
	mm, err := y.Lookup([]uint32{1, 2, 3}, 3, 0, 0)
	require.NoError(t, err)
	require.False(t, mm.Found, "colliding key of another adapter is not a hit")
	// Promote / forget check the adapter.
	ev, _, _ := y.EvictToTier(0)
	require.ErrorIs(t, y.Promote(ev.Key, 0, 2, 0), ErrWrongAdapter)
	require.ErrorIs(t, y.Forget(ev.Key, 0), ErrWrongAdapter)
	require.NoError(t, y.Promote(ev.Key, 1, 2, 0))
}

// §9 (13): identical token streams collide (the index is content-blind
// beyond tokens, e.g. image pad tokens).
func TestIndex_IdenticalStreamsCollide(t *testing.T) {
	x := newIndex(t, Config{})
	pads := []uint32{7, 7, 7, 7}
	ins(t, x, pads, 1, 1)
	d := ins(t, x, pads, 2, 2) // a different image, same pads
	require.Equal(t, []int32{1}, d.Slots)
	require.Equal(t, int32(2), look(t, x, pads, 4, 1).Slot)
}

func TestIndex_EndSession(t *testing.T) {
	x := newIndex(t, Config{})
	s := seq(48)
	ins(t, x, s[:16], 1, 5)
	_, err := x.InsertTail(s[:48], 0, 3, 5)
	require.NoError(t, err)
	_, err = x.InsertSibling(s[:32], 0, 2, 5)
	require.NoError(t, err)
	look(t, x, s, 48, 5)
	d, err := x.EndSession(5)
	require.NoError(t, err)
	require.NoError(t, x.Check())
	require.Equal(t, []int32{3}, d.Slots)
	require.Equal(t, uint64(0), x.LiveSession())
	require.Equal(t, 2, x.Len())
	require.Equal(t, int32(2), look(t, x, s, 48, 9).Slot, "the sibling stays, as plain")
}

// Bad input: typed errors, nothing changed.
func TestIndex_BadInputChangesNothing(t *testing.T) {
	s := seq(32)
	build := func() *Index {
		x := newIndex(t, Config{})
		ins(t, x, s[:16], 1, 5)
		ins(t, x, s[:32], 2, 5)
		_, err := x.Lookup(s, 32, 5, 0)
		require.NoError(t, err)
		_, _, err = x.EvictToTier(0) // spills the 16-token entry
		require.NoError(t, err)
		return x
	}
	spilled := Hash(s[:16], 0)
	cases := []struct {
		name string
		call func(x *Index) error
		want error
	}{
		{"lookup matched beyond tokens", func(x *Index) error { _, err := x.Lookup(s, 33, 0, 0); return err }, ErrInvalidArgument},
		{"lookup negative matched", func(x *Index) error { _, err := x.Lookup(s, -1, 0, 0); return err }, ErrInvalidArgument},
		{"insert empty", func(x *Index) error { _, err := x.Insert(nil, 0, 3, 0); return err }, ErrInvalidArgument},
		{"insert negative slot", func(x *Index) error { _, err := x.Insert(s[:8], 0, -2, 0); return err }, ErrInvalidArgument},
		{"insert slot held elsewhere", func(x *Index) error { _, err := x.Insert(s[:8], 0, 2, 0); return err }, ErrSlotInUse},
		{"tail without session", func(x *Index) error { _, err := x.InsertTail(s[:8], 0, 3, 0); return err }, ErrInvalidArgument},
		{"tail slot held by plain of own session", func(x *Index) error { _, err := x.InsertTail(s[:8], 0, 2, 5); return err }, ErrSlotInUse},
		{"promote resident", func(x *Index) error { return x.Promote(Hash(s, 0), 0, 3, 0) }, ErrResident},
		{"promote unknown", func(x *Index) error { return x.Promote(42, 0, 3, 0) }, ErrUnknownKey},
		{"promote wrong adapter", func(x *Index) error { return x.Promote(spilled, 3, 3, 0) }, ErrWrongAdapter},
		{"promote into held slot", func(x *Index) error { return x.Promote(spilled, 0, 2, 0) }, ErrSlotInUse},
		{"promote negative slot", func(x *Index) error { return x.Promote(spilled, 0, -1, 0) }, ErrInvalidArgument},
		{"forget unknown", func(x *Index) error { return x.Forget(42, 0) }, ErrUnknownKey},
		{"forget resident", func(x *Index) error { return x.Forget(Hash(s, 0), 0) }, ErrResident},
		{"forget wrong adapter", func(x *Index) error { return x.Forget(spilled, 1) }, ErrWrongAdapter},
		{"end unknown session", func(x *Index) error { _, err := x.EndSession(6); return err }, ErrUnknownSession},
		{"end session 0", func(x *Index) error { _, err := x.EndSession(0); return err }, ErrInvalidArgument},
		{"tier negative gate", func(x *Index) error { _, _, err := x.EvictToTier(-1); return err }, ErrInvalidArgument},
	}
	for _, c := range cases {
		x := build()
		before, stats := x.Entries(), x.Stats()
		clock, live, since := x.clock, x.live, x.since
		require.ErrorIs(t, c.call(x), c.want, c.name)
		require.Equal(t, before, x.Entries(), c.name)
		require.Equal(t, stats, x.Stats(), c.name)
		require.Equal(t, []uint64{clock, live, since}, []uint64{x.clock, x.live, x.since}, c.name)
		require.NoError(t, x.Check(), c.name)
	}
}
