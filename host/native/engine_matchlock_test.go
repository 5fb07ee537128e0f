package native

import (
	"encoding/binary"
	"testing"

	"github.com/radixkv/radixkv/abi"
	"github.com/radixkv/radixkv/abi/dispatch"
	"github.com/radixkv/radixkv/core"
	"github.com/stretchr/testify/require"
)

// TestWireEngine_MatchLock: match_lock answers what the direct engine's
// MatchLock (a match, then a lock) answers, one op per call, on an empty
// tree (the root locked), a hit, a split and a refused skip (the lock's
// error; the match stands, so the insert after it still names it). The
// trees end identical.
func TestWireEngine_MatchLock(t *testing.T) {
	w, d, tr := wireAndDirect(t, core.Config{PageSize: 2})
	ns := core.Namespace{CacheSalt: "t"}

	type held struct {
		node core.NodeID
		rc   core.Receipt
	}
	locks := map[Engine][]held{}
	ml := func(e Engine, toks []uint32, skip core.ComponentSet) any {
		m, rc, err := e.(MatchLocker).MatchLock(nil, ns, toks, skip)
		if err != nil {
			return []any{err.Error(), len(m.Actions)}
		}
		locks[e] = append(locks[e], held{m.LastDevice, rc})
		// Node ids differ between engines (the wire engine's mask): compare
		// what does not name a node.
		return []any{m.Indices, m.DeviceLen, rc.Serial, rc.Delta}
	}
	both := func(name string, f func(e Engine) any) {
		t.Helper()
		require.Equal(t, f(d), f(w), name)
	}
	stats := func(e Engine) any {
		ev, err := e.Evictable(core.Full)
		require.NoError(t, err)
		pr, err := e.Protected(core.Full)
		require.NoError(t, err)
		return []int{ev, pr}
	}

	both("empty tree", func(e Engine) any { return ml(e, seq(1, 4), 0) })
	both("insert 1..8", func(e Engine) any {
		_, _, err := e.Insert(core.InsertParams{Namespace: ns, Tokens: seq(1, 8), Slots: seqSlots(0, 8)})
		return err
	})
	both("hit 1..6", func(e Engine) any { return ml(e, seq(1, 6), 0) })
	both("split at 2", func(e Engine) any { return ml(e, seq(1, 3), 0) })
	both("locked", stats)
	both("skip full refused", func(e Engine) any { return ml(e, seq(1, 10), core.ComponentSet(0).With(core.Full)) })
	require.Equal(t, 4, tr.ops[abi.OpMatchLock])
	require.Zero(t, tr.ops[abi.OpMatch]+tr.ops[abi.OpLock])
	both("insert after the refused lock", func(e Engine) any {
		st, err := e.BeginInsert(core.InsertParams{Namespace: ns, Tokens: seq(1, 10), Slots: seqSlots(0, 10), PrevPrefixLen: 8})
		require.NoError(t, err)
		return []any{st.Done, st.Result.PrefixLen, st.Result.TotalLen}
	})
	both("unlock all", func(e Engine) any {
		for _, h := range locks[e] {
			require.NoError(t, e.Unlock(h.node, h.rc, false))
		}
		return stats(e)
	})
	requireSameTrees(t, d, w)
}

// TestWireEngine_MatchLockOldGuest: a guest that does not know
// match_lock (unknown_op) gets match and lock from then on.
func TestWireEngine_MatchLockOldGuest(t *testing.T) {
	tr := &oldGuest{d: dispatch.New(), refuse: abi.OpMatchLock}
	w, err := newWireEngine(core.Config{PageSize: 1}, tr)
	require.NoError(t, err)
	defer w.Close()
	_, _, err = w.Insert(core.InsertParams{Tokens: seq(1, 4), Slots: seqSlots(0, 4)})
	require.NoError(t, err)
	for range 2 {
		m, rc, err := w.MatchLock(nil, core.Namespace{}, seq(1, 4), 0)
		require.NoError(t, err)
		require.Equal(t, 4, m.DeviceLen)
		require.Equal(t, 4, rc.Delta)
		require.NoError(t, w.Unlock(m.LastDevice, rc, false))
	}
	require.True(t, w.noMatchLock)
}

// oldGuest is a dispatcher that predates one op: it answers it
// unknown_op without running it.
type oldGuest struct {
	d      *dispatch.Dispatcher
	refuse abi.Op
}

func (g *oldGuest) call(req []byte) ([]byte, error) {
	if abi.Op(binary.LittleEndian.Uint16(req[6:])) != g.refuse {
		return g.d.Call(req), nil
	}
	var q abi.Request
	if err := abi.DecodeRequest(&q, req); err != nil {
		return nil, err
	}
	return abi.AppendResponse(nil, &abi.Response{Op: q.Op, Status: abi.StatusError, Code: abi.CodeUnknownOp,
		Instance: q.Instance, ID: q.ID, Message: "unknown op"}), nil
}

func (g *oldGuest) close() error { return nil }

// TestController_ArriveMatchLock: without a host tier an arrival is one
// match_lock, not a match and a lock; the request then runs as before.
func TestController_ArriveMatchLock(t *testing.T) {
	tr := newOpCounter()
	ctor := func(cfg core.Config) (Engine, error) { return newWireEngine(cfg, tr) }
	c, _ := newCtlOn(t, ctor, 64, core.Config{PageSize: 2}, ControllerConfig{Canary: true, VerifyMatches: true})
	for i := range 3 {
		r, err := c.Arrive(core.Namespace{}, seq(1, 8))
		require.NoError(t, err)
		require.Equal(t, min(i, 1)*8, r.CachedLen())
		require.NoError(t, c.Prefill(r, r.Pending()))
		require.NoError(t, c.Finish(r))
	}
	require.Equal(t, 3, tr.ops[abi.OpMatchLock])
	require.Zero(t, tr.ops[abi.OpMatch]+tr.ops[abi.OpLock])
	// Each finish is one begin_insert_matched_unlock.
	require.Equal(t, 3, tr.ops[abi.OpBeginInsertMatchedUnlock])
	require.Zero(t, tr.ops[abi.OpBeginInsert]+tr.ops[abi.OpBeginInsertMatched]+tr.ops[abi.OpUnlock])
	require.NoError(t, c.Audit())
}

// TestWireEngine_BeginInsertUnlock: begin_insert_matched_unlock answers
// what the direct engine's BeginInsertUnlock (an insert, then an unlock)
// answers, in one op: a released lock, an unlock refused beside an insert
// that stands, and an insert that cannot name the match (sent in full,
// then unlocked with a call of its own). The trees end identical.
func TestWireEngine_BeginInsertUnlock(t *testing.T) {
	w, d, tr := wireAndDirect(t, core.Config{PageSize: 2})
	ns := core.Namespace{CacheSalt: "t"}

	type held struct {
		node core.NodeID
		rc   core.Receipt
	}
	locks := map[Engine]held{}
	ml := func(e Engine, toks []uint32) any {
		m, rc, err := e.(MatchLocker).MatchLock(nil, ns, toks, 0)
		require.NoError(t, err)
		locks[e] = held{m.LastDevice, rc}
		return []any{m.Indices, rc.Serial}
	}
	iu := func(e Engine, lk held, p core.InsertParams) any {
		st, tried, uerr, err := e.(InsertUnlocker).BeginInsertUnlock(p, lk.node, lk.rc, false)
		var u, ie string
		if uerr != nil {
			u = uerr.Error()
		}
		if err != nil {
			ie = err.Error()
		}
		return []any{st.Done, st.Result.PrefixLen, st.Result.TotalLen, tried, u, ie}
	}
	both := func(name string, f func(e Engine) any) {
		t.Helper()
		require.Equal(t, f(d), f(w), name)
	}
	both("insert 1..8", func(e Engine) any {
		_, _, err := e.Insert(core.InsertParams{Namespace: ns, Tokens: seq(1, 8), Slots: seqSlots(0, 8)})
		return err
	})
	both("match_lock 1..12", func(e Engine) any { return ml(e, seq(1, 12)) })
	first := map[Engine]held{d: locks[d], w: locks[w]}
	both("insert and unlock", func(e Engine) any {
		return iu(e, locks[e], core.InsertParams{Namespace: ns, Tokens: seq(1, 12), Slots: append(seqSlots(0, 8), seqSlots(20, 4)...), PrevPrefixLen: 8})
	})
	require.Equal(t, 1, tr.ops[abi.OpBeginInsertMatchedUnlock])
	both("match_lock 1..14", func(e Engine) any { return ml(e, seq(1, 14)) })
	both("unlock refused", func(e Engine) any {
		return iu(e, first[e], core.InsertParams{Namespace: ns, Tokens: seq(1, 14), Slots: append(seqSlots(0, 8), append(seqSlots(20, 4), 30, 31)...), PrevPrefixLen: 12})
	})
	require.Equal(t, 2, tr.ops[abi.OpBeginInsertMatchedUnlock])
	both("insert of other tokens, then unlock", func(e Engine) any {
		return iu(e, locks[e], core.InsertParams{Namespace: ns, Tokens: seq(50, 4), Slots: seqSlots(40, 4)})
	})
	require.Equal(t, 2, tr.ops[abi.OpBeginInsertMatchedUnlock])
	require.Equal(t, 1, tr.ops[abi.OpUnlock])
	for _, e := range []Engine{d, w} {
		pr, err := e.Protected(core.Full)
		require.NoError(t, err)
		require.Zero(t, pr)
	}
	requireSameTrees(t, d, w)
}

// TestWireEngine_BeginInsertUnlockOldGuest: a guest that does not know
// begin_insert_matched_unlock gets begin_insert_matched and unlock.
func TestWireEngine_BeginInsertUnlockOldGuest(t *testing.T) {
	g := &oldGuest{d: dispatch.New(), refuse: abi.OpBeginInsertMatchedUnlock}
	w, err := newWireEngine(core.Config{PageSize: 1}, g)
	require.NoError(t, err)
	defer w.Close()
	for i := range 2 {
		m, rc, err := w.MatchLock(nil, core.Namespace{}, seq(1, 4), 0)
		require.NoError(t, err)
		st, tried, uerr, err := w.BeginInsertUnlock(core.InsertParams{Tokens: seq(1, 4), Slots: seqSlots(10*i, 4)}, m.LastDevice, rc, false)
		require.NoError(t, err)
		require.NoError(t, uerr)
		require.True(t, tried)
		require.True(t, st.Done)
		pr, err := w.Protected(core.Full)
		require.NoError(t, err)
		require.Zero(t, pr)
	}
	require.True(t, w.noMatchedUnlock)
}
