package native

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/radixkv/radixkv/abi"
	"github.com/radixkv/radixkv/core"
	"github.com/stretchr/testify/require"
)

// TestMain turns checkKept on for the tests, so that every vouch the
// Controller makes for a kept match, in every test of the package, is
// checked against a copy; benchmarks measure the engine without it.
func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		checkKept = true
		clobberResponses = true
		clobberRequests = true
	}
	os.Exit(m.Run())
}

// needCheckKept turns checkKept on for a test that relies on it, also in
// a run with -bench (which TestMain leaves without it).
func needCheckKept(t *testing.T) {
	old := checkKept
	checkKept = true
	t.Cleanup(func() { checkKept = old })
}

// TestWireEngine_KeptMatch: an insert that names a kept match by its
// ticket goes as begin_insert_matched (no tokens, no matched slots) and
// the engine keeps no copy of the match; everything that could make the
// ticket name the wrong match sends the insert in full instead: a plain
// insert, another match in between (kept, plain or failed), another
// engine's ticket, a reset, and a guest that lost the match to a raw
// call. After every step the tree is the direct engine's.
func TestWireEngine_KeptMatch(t *testing.T) {
	needCheckKept(t)
	w, d, tr := wireAndDirect(t, core.Config{PageSize: 2})
	ns := core.Namespace{CacheSalt: "t"}
	toks := seq(1, 12)
	slots := append(seqSlots(0, 8), seqSlots(100, 4)...) // the match's 8, then 4 own
	insert := func(t *testing.T, e Engine, tk matchTicket, p core.InsertParams) any {
		var st core.InsertStep
		var err error
		if tk == 0 {
			st, err = e.BeginInsert(p)
		} else {
			st, err = e.(keptMatcher).beginInsertKept(p, tk)
		}
		if err != nil {
			return err.Error()
		}
		return []any{st.Done, st.Result.PrefixLen, st.Result.TotalLen, st.Actions}
	}
	// kept matches and locks toks on w (as the Controller does) and on d,
	// and unlocks both at once: the lock is not the point here.
	kept := func(t *testing.T, toks []uint32) matchTicket {
		t.Helper()
		m, rc, tk, err := w.matchLockKept(nil, ns, toks, 0)
		require.NoError(t, err)
		dm, drc, err := d.(MatchLocker).MatchLock(nil, ns, toks, 0)
		require.NoError(t, err)
		require.Equal(t, dm.Indices, m.Indices)
		require.NoError(t, w.Unlock(m.LastDevice, rc, false))
		require.NoError(t, d.Unlock(dm.LastDevice, drc, false))
		require.NotZero(t, tk)
		require.Zero(t, len(w.matchTok)+len(w.matchIdx)-len(toks)-len(m.Indices), "checkKept copies")
		return tk
	}
	both := func(t *testing.T, name string, tk matchTicket, p core.InsertParams) {
		t.Helper()
		require.Equal(t, insert(t, d, 0, p), insert(t, w, tk, p), name)
		requireSameTrees(t, d, w)
	}
	sent := func(t *testing.T, matched, full int) {
		t.Helper()
		require.Equal(t, matched, tr.ops[abi.OpBeginInsertMatched], "begin_insert_matched")
		require.Equal(t, full, tr.ops[abi.OpBeginInsert], "begin_insert")
	}
	_, _, err := d.Insert(core.InsertParams{Namespace: ns, Tokens: toks[:8], Slots: seqSlots(0, 8)})
	require.NoError(t, err)
	_, _, err = w.Insert(core.InsertParams{Namespace: ns, Tokens: toks[:8], Slots: seqSlots(0, 8)})
	require.NoError(t, err)

	tk := kept(t, toks)
	both(t, "kept insert", tk, core.InsertParams{Namespace: ns, Tokens: toks, Slots: slots, PrevPrefixLen: 8})
	sent(t, 1, 0)
	// A prefix of the match's tokens, by the same ticket.
	both(t, "kept insert of a prefix", tk, core.InsertParams{Namespace: ns, Tokens: toks[:10], Slots: slots[:10], PrevPrefixLen: 8})
	sent(t, 2, 0)

	t.Run("no copies", func(t *testing.T) {
		// Outside the tests' check, a kept match leaves the engine with
		// its lengths only.
		checkKept = false
		defer func() { checkKept = true }()
		m, rc, tk, err := w.matchLockKept(nil, ns, toks, 0)
		require.NoError(t, err)
		require.NoError(t, w.Unlock(m.LastDevice, rc, false))
		dm, drc, err := d.(MatchLocker).MatchLock(nil, ns, toks, 0)
		require.NoError(t, err)
		require.NoError(t, d.Unlock(dm.LastDevice, drc, false))
		require.Empty(t, w.matchTok)
		require.Empty(t, w.matchIdx)
		both(t, "kept insert without copies", tk, core.InsertParams{Namespace: ns, Tokens: toks, Slots: slots})
		sent(t, 3, 0)
	})
	t.Run("plain insert", func(t *testing.T) {
		kept(t, toks)
		// Equal contents, but the engine has nothing to compare them
		// with and no vouch.
		both(t, "plain insert after a kept match", 0, core.InsertParams{Namespace: ns, Tokens: toks, Slots: slots})
		sent(t, 3, 1)
	})
	t.Run("another match in between", func(t *testing.T) {
		a := kept(t, toks)
		b := kept(t, toks[:10])
		require.NotEqual(t, a, b)
		both(t, "stale ticket", a, core.InsertParams{Namespace: ns, Tokens: toks, Slots: slots})
		sent(t, 3, 2)
		both(t, "fresh ticket", b, core.InsertParams{Namespace: ns, Tokens: toks[:10], Slots: slots[:10]})
		sent(t, 4, 2)
		// A plain match after a kept one: the ticket names nothing, and the
		// insert is checked against the plain match's copy (a hit).
		a = kept(t, toks)
		_, err := w.Match(nil, ns, toks)
		require.NoError(t, err)
		_, err = d.Match(nil, ns, toks)
		require.NoError(t, err)
		both(t, "ticket of a replaced match", a, core.InsertParams{Namespace: ns, Tokens: toks, Slots: slots})
		sent(t, 5, 2)
		// A failed match_lock (a refused skip) leaves its match in the
		// guest, but the engine knows no ticket for it nor for the one
		// before.
		a = kept(t, toks)
		skipFull := core.ComponentSet(0).With(core.Full)
		_, _, tf, err := w.matchLockKept(nil, ns, toks, skipFull)
		require.Error(t, err)
		require.Zero(t, tf)
		_, _, err = d.(MatchLocker).MatchLock(nil, ns, toks, skipFull)
		require.Error(t, err)
		both(t, "ticket before a failed match", a, core.InsertParams{Namespace: ns, Tokens: toks, Slots: slots})
		sent(t, 5, 3)
	})
	t.Run("another engine's ticket", func(t *testing.T) {
		w2, _, tr2 := wireAndDirect(t, core.Config{PageSize: 2})
		// Bring w2's request ids level with w's, so the two tickets name
		// the same request id under different masks.
		for w2.nextID < w.nextID {
			_, err := w2.Evictable(core.Full)
			require.NoError(t, err)
		}
		_, _, t2, err := w2.matchLockKept(nil, ns, toks, 0)
		require.NoError(t, err)
		tk := kept(t, toks)
		require.Equal(t, w2.matchID, w.matchID)
		require.NotEqual(t, t2, tk)
		both(t, "foreign ticket", t2, core.InsertParams{Namespace: ns, Tokens: toks, Slots: slots})
		sent(t, 5, 4)
		require.Zero(t, tr2.ops[abi.OpBeginInsertMatched])
	})
	t.Run("reset", func(t *testing.T) {
		tk := kept(t, toks)
		require.NoError(t, w.Reset())
		require.NoError(t, d.Reset())
		both(t, "ticket from before a reset", tk, core.InsertParams{Namespace: ns, Tokens: toks, Slots: slots})
		sent(t, 5, 5)
	})
	t.Run("guest lost the match", func(t *testing.T) {
		tk := kept(t, toks)
		q := abi.Request{Op: abi.OpMatch, Instance: w.Instance(), ID: 1 << 40, Insert: core.InsertParams{Tokens: seq(50, 4)}}
		_, err := w.RawCall(abi.AppendRequest(nil, &q))
		require.NoError(t, err)
		_, err = d.Match(nil, core.Namespace{}, seq(50, 4)) // the same touch of the tree
		require.NoError(t, err)
		// Named, answered stale_match, then sent in full.
		both(t, "ticket the guest no longer holds", tk, core.InsertParams{Namespace: ns, Tokens: toks, Slots: slots})
		sent(t, 6, 6)
		both(t, "same ticket again", tk, core.InsertParams{Namespace: ns, Tokens: toks, Slots: slots})
		sent(t, 6, 7)
	})
	t.Run("broken vouch", func(t *testing.T) {
		// The test build checks every vouch (checkKept): a caller that
		// changed its buffers gets an error and nothing is sent.
		mine := append([]uint32(nil), toks...)
		tk := kept(t, mine)
		mine[3]++
		before := tr.ops[abi.OpBeginInsertMatched] + tr.ops[abi.OpBeginInsert]
		_, err := w.beginInsertKept(core.InsertParams{Namespace: ns, Tokens: mine, Slots: slots}, tk)
		require.ErrorIs(t, err, errKeptChanged)
		mine[3]--
		own := append([]int32(nil), slots...)
		own[0] = 999
		_, err = w.beginInsertKept(core.InsertParams{Namespace: ns, Tokens: mine, Slots: own}, tk)
		require.ErrorIs(t, err, errKeptChanged)
		require.Equal(t, before, tr.ops[abi.OpBeginInsertMatched]+tr.ops[abi.OpBeginInsert])
		requireSameTrees(t, d, w)
	})
}

// TestController_KeptMatchInterleaved runs one random serving loop on two
// controllers in lockstep, on the direct engine and on a wire engine
// whose guest it watches: requests interleave (several arrived, finished
// in any order, so a finish often names a match that is no longer the
// last), Request structs and the controller's buffers are recycled
// (ArriveReusing; a finished request's token and slot buffers go to the
// next arrival, so a buffer the engine's last match came from holds
// another request's tokens soon after), requests are extended past their
// match and chunk-finished (which rewrites slots and matches again), some
// abort, and raw matches on the wire engine's instance make the guest
// lose its match. The trees, every request's slots and the statistics
// stay the direct engine's, and checkKept checks every vouch the wire
// side's controller makes.
func TestController_KeptMatchInterleaved(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		page := []int{1, 2, 4}[seed%3]
		t.Run(fmt.Sprintf("seed=%d/page=%d", seed, page), func(t *testing.T) {
			needCheckKept(t)
			tr := newOpCounter()
			var w *wireEngine
			wire := func(cfg core.Config) (Engine, error) {
				e, err := newWireEngine(cfg, tr)
				w = e
				return e, err
			}
			cfg := core.Config{PageSize: page}
			const capacity = 80
			cs := [2]*Controller{}
			cs[0], _ = newCtlOn(t, NewDirectEngine, capacity, cfg, canaryOn)
			cs[1], _ = newCtlOn(t, wire, capacity, cfg, canaryOn)
			g := newWorkloadGen(seed)
			rng := g.rng
			var running, done [][2]*Request
			// each applies f to both sides and requires the same outcome.
			each := func(f func(c *Controller, r *Request) error, rs [2]*Request) error {
				t.Helper()
				errs := [2]error{f(cs[0], rs[0]), f(cs[1], rs[1])}
				require.Equal(t, errs[0] == nil, errs[1] == nil, "%v / %v", errs[0], errs[1])
				if errs[0] != nil {
					require.ErrorIs(t, errs[0], ErrPoolExhausted)
					require.ErrorIs(t, errs[1], ErrPoolExhausted)
				}
				return errs[0]
			}
			end := func(k int, f func(c *Controller, r *Request) error) {
				rs := running[k]
				each(func(c *Controller, r *Request) error { require.NoError(t, f(c, r)); return nil }, rs)
				running = append(running[:k], running[k+1:]...)
				done = append(done, rs)
			}
			abort := func(c *Controller, r *Request) error { return c.Abort(r) }
			for step := range 1200 {
				if len(running) == 0 || (len(running) < 5 && rng.IntN(3) == 0) {
					ns, p := g.prompt()
					var rs [2]*Request
					if len(done) > 0 && rng.IntN(4) > 0 {
						k := rng.IntN(len(done))
						rs = done[k]
						done = append(done[:k], done[k+1:]...)
					}
					for i, c := range cs {
						r, err := c.ArriveReusing(rs[i], ns, p)
						require.NoError(t, err)
						rs[i] = r
					}
					require.Equal(t, rs[0].Slots(), rs[1].Slots())
					running = append(running, rs)
					continue
				}
				k := rng.IntN(len(running))
				rs := running[k]
				switch op := rng.IntN(12); {
				case op < 3:
					ext := g.tokens(1 + rng.IntN(3))
					n := 1 + rng.IntN(max(rs[0].Pending(), 1))
					if each(func(c *Controller, r *Request) error {
						if r.Pending() == 0 {
							return c.Extend(r, ext...)
						}
						return c.Prefill(r, n)
					}, rs) != nil {
						end(k, abort)
					}
				case op < 4:
					upto := rng.IntN(rs[0].Computed() + 1)
					if each(func(c *Controller, r *Request) error { return c.FinishChunk(r, upto) }, rs) != nil {
						end(k, abort)
					}
				case op < 5:
					end(k, abort)
				case op < 6:
					// A raw match on the wire engine's instance (the guest
					// drops its kept match); the direct tree gets the same
					// touch.
					ns, p := g.prompt()
					q := abi.Request{Op: abi.OpMatch, Instance: w.Instance(), ID: 1 << 50, Insert: core.InsertParams{Namespace: ns, Tokens: p}}
					_, err := w.RawCall(abi.AppendRequest(nil, &q))
					require.NoError(t, err)
					_, err = cs[0].Engine().Match(nil, ns, p)
					require.NoError(t, err)
				default:
					if each(func(c *Controller, r *Request) error { return c.Prefill(r, r.Pending()) }, rs) != nil {
						end(k, abort)
						continue
					}
					end(k, func(c *Controller, r *Request) error { return c.Finish(r) })
				}
				for _, rs := range running {
					require.Equal(t, rs[0].Slots(), rs[1].Slots(), "step %d", step)
					require.Equal(t, rs[0].ProtectedLen(), rs[1].ProtectedLen())
				}
				requireSameTrees(t, cs[0].Engine(), cs[1].Engine())
				if step%50 == 0 {
					require.NoError(t, cs[0].Audit())
					require.NoError(t, cs[1].Audit())
				}
			}
			for _, rs := range running {
				each(func(c *Controller, r *Request) error { return c.Finish(r) }, rs)
			}
			requireSameTrees(t, cs[0].Engine(), cs[1].Engine())
			require.Equal(t, cs[0].Stats(), cs[1].Stats())
			require.NoError(t, cs[1].Audit())
			// Both kinds of finish happened: by a kept match, and in full
			// (the match was not the last, or the guest had lost it).
			require.NotZero(t, tr.ops[abi.OpBeginInsertMatchedUnlock])
			require.NotZero(t, tr.ops[abi.OpBeginInsert])
			t.Logf("sent: begin_insert_matched_unlock %d, begin_insert_matched %d, begin_insert %d",
				tr.ops[abi.OpBeginInsertMatchedUnlock], tr.ops[abi.OpBeginInsertMatched], tr.ops[abi.OpBeginInsert])
		})
	}
}
