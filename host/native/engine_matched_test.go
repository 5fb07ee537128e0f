package native

import (
	"encoding/binary"
	"testing"

	"github.com/radixkv/radixkv/abi"
	"github.com/radixkv/radixkv/abi/dispatch"
	"github.com/radixkv/radixkv/core"
	"github.com/stretchr/testify/require"
)

// opCounter counts the ops a wire engine sends.
type opCounter struct {
	d   *dispatch.Dispatcher
	ops map[abi.Op]int
}

func (c *opCounter) call(req []byte) ([]byte, error) {
	c.ops[abi.Op(binary.LittleEndian.Uint16(req[6:]))]++
	return c.d.Call(req), nil
}

func (c *opCounter) close() error { return nil }

func newOpCounter() *opCounter { return &opCounter{d: dispatch.New(), ops: map[abi.Op]int{}} }

// wireAndDirect returns a wire engine on a dispatcher that counts its ops
// and a direct engine, both on cfg, closed when the test ends.
func wireAndDirect(t *testing.T, cfg core.Config) (*wireEngine, Engine, *opCounter) {
	t.Helper()
	tr := newOpCounter()
	w, err := newWireEngine(cfg, tr)
	require.NoError(t, err)
	t.Cleanup(func() { w.Close() })
	d, err := NewDirectEngine(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	return w, d, tr
}

// requireSameTrees fails unless d and w render the same tree and w's
// passes its sanity check.
func requireSameTrees(t *testing.T, d, w Engine) {
	t.Helper()
	dr, err := d.Render()
	require.NoError(t, err)
	wr, err := w.Render()
	require.NoError(t, err)
	require.Equal(t, dr, wr)
	require.NoError(t, w.SanityCheck())
}

// TestWireEngine_InsertMatched: an insert of tokens the engine's last
// match had goes as begin_insert_matched, leaving out the tokens and the
// match's slots; anything else (other tokens, changed tokens, another
// namespace, slots that do not start with the match's, a guest that lost
// the match to a raw call) goes in full. Each step's result is the
// direct engine's.
func TestWireEngine_InsertMatched(t *testing.T) {
	w, d, tr := wireAndDirect(t, core.Config{PageSize: 2})
	ns := core.Namespace{CacheSalt: "t"}

	both := func(name string, f func(e Engine) any) {
		t.Helper()
		require.Equal(t, f(d), f(w), name)
	}
	match := func(e Engine, ns core.Namespace, toks []uint32) any {
		m, err := e.Match(nil, ns, toks)
		require.NoError(t, err)
		return []any{m.Indices, m.DeviceLen}
	}
	insert := func(e Engine, p core.InsertParams) any {
		st, err := e.BeginInsert(p)
		if err != nil {
			return err.Error()
		}
		return []any{st.Done, st.Result.PrefixLen, st.Result.TotalLen, st.Actions}
	}
	fused := func(want int) {
		t.Helper()
		require.Equal(t, want, tr.ops[abi.OpBeginInsertMatched], "begin_insert_matched sent")
	}

	toks := seq(1, 12)
	both("insert 1..8", func(e Engine) any {
		return insert(e, core.InsertParams{Namespace: ns, Tokens: toks[:8], Slots: seqSlots(0, 8)})
	})
	fused(0)
	both("match 1..12", func(e Engine) any { return match(e, ns, toks) })
	// The request's slots: the match's eight, then four of its own.
	sl := append(seqSlots(0, 8), seqSlots(100, 4)...)
	both("insert matched", func(e Engine) any {
		return insert(e, core.InsertParams{Namespace: ns, Tokens: toks, Slots: sl, PrevPrefixLen: 8})
	})
	fused(1)
	require.Equal(t, 1, tr.ops[abi.OpBeginInsert], "only the first insert went in full")

	// Same match again: a shorter prefix, slots that differ from the
	// match's (all sent), a changed token, another namespace.
	both("match 1..12 again", func(e Engine) any { return match(e, ns, toks) })
	both("insert a prefix", func(e Engine) any {
		return insert(e, core.InsertParams{Namespace: ns, Tokens: toks[:6], Slots: seqSlots(200, 6)})
	})
	fused(2)
	changed := append([]uint32(nil), toks...)
	changed[11] = 99
	both("insert changed tokens", func(e Engine) any {
		return insert(e, core.InsertParams{Namespace: ns, Tokens: changed, Slots: seqSlots(300, 12)})
	})
	both("insert in another namespace", func(e Engine) any {
		return insert(e, core.InsertParams{Tokens: toks, Slots: seqSlots(400, 12)})
	})
	fused(2)
	require.Equal(t, 3, tr.ops[abi.OpBeginInsert])

	// A raw call matches on the engine's own instance in between: the
	// guest answers stale_match and the engine sends the insert in full.
	both("match 1..12 once more", func(e Engine) any { return match(e, ns, toks) })
	q := abi.Request{Op: abi.OpMatch, Instance: w.Instance(), ID: 1 << 40, Insert: core.InsertParams{Tokens: seq(50, 4)}}
	_, err := w.RawCall(abi.AppendRequest(nil, &q))
	require.NoError(t, err)
	both("insert after a raw match", func(e Engine) any {
		return insert(e, core.InsertParams{Namespace: ns, Tokens: toks, Slots: seqSlots(500, 12)})
	})
	fused(3)
	require.Equal(t, 4, tr.ops[abi.OpBeginInsert])
	require.NoError(t, w.SanityCheck())
}

// TestWireEngine_InsertMatchedOldGuest: a guest that does not know
// begin_insert_matched (unknown_op) gets plain begin_insert from then on.
func TestWireEngine_InsertMatchedOldGuest(t *testing.T) {
	tr := &fakeTransport{d: dispatch.New()}
	tr.answer = func(req, resp []byte) ([]byte, error) {
		if abi.Op(binary.LittleEndian.Uint16(req[6:])) != abi.OpBeginInsertMatched {
			return resp, nil
		}
		var q abi.Request
		require.NoError(t, abi.DecodeRequest(&q, req))
		return abi.AppendResponse(nil, &abi.Response{Op: q.Op, Status: abi.StatusError, Code: abi.CodeUnknownOp,
			Instance: q.Instance, ID: q.ID, Message: "unknown"}), nil
	}
	w, err := newWireEngine(core.Config{PageSize: 1}, tr)
	require.NoError(t, err)
	defer w.Close()
	for i := range 2 {
		_, err := w.Match(nil, core.Namespace{}, seq(1, 4))
		require.NoError(t, err)
		st, err := w.BeginInsert(core.InsertParams{Tokens: seq(1, 4), Slots: seqSlots(10*i, 4)})
		require.NoError(t, err)
		require.True(t, st.Done)
		require.Equal(t, 4, st.Result.TotalLen)
	}
	require.True(t, w.noMatched)
}
