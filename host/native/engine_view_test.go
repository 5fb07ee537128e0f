package native

import (
	"encoding/binary"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/radixkv/radixkv/abi"
	"github.com/radixkv/radixkv/abi/dispatch"
	"github.com/radixkv/radixkv/core"
)

// needClobber turns clobberResponses on for a test that relies on it,
// also in a run with -bench (which TestMain leaves without it).
func needClobber(t *testing.T) {
	old := clobberResponses
	clobberResponses = true
	t.Cleanup(func() { clobberResponses = old })
}

// extraActions is a transport that adds actions to the responses of
// some ops, re-encoded into a buffer of its own (which it reuses, like a
// guest, so clobberResponses poisons it).
type extraActions struct {
	transport
	add map[abi.Op][]core.Action
	buf []byte
}

func (x *extraActions) call(req []byte) ([]byte, error) {
	out, err := x.transport.call(req)
	acts, ok := x.add[abi.Op(binary.LittleEndian.Uint16(req[6:]))]
	if err != nil || !ok {
		return out, err
	}
	var r abi.Response
	if err := abi.DecodeResponse(&r, out); err != nil {
		return nil, err
	}
	r.Actions = append(r.Actions, acts...)
	x.buf = abi.AppendResponse(x.buf[:0], &r)
	return x.buf, nil
}

// TestWireEngine_FallbackDetaches: the fallbacks that make a second call
// (match then lock for a guest without match_lock, insert then unlock
// for one without begin_insert_matched_unlock) return the first call's
// actions intact, though the second response carries actions of its own
// and the first response's bytes are poisoned before it.
func TestWireEngine_FallbackDetaches(t *testing.T) {
	needClobber(t)
	first := []core.Action{
		{Kind: core.ActionFreeDeviceKV, Slots: seqSlots(40, 9)},
		{Kind: core.ActionRecoverSWAWithLockedFull, Slots: seqSlots(60, 3), Incoming: seqSlots(70, 3)},
		{Kind: core.ActionFreeHostSlots, Component: core.Mamba},
	}
	second := []core.Action{{Kind: core.ActionFreeDeviceKV, Slots: seqSlots(90, 12)}, {Kind: core.ActionSWARebuild, Slots: seqSlots(5, 2)}}

	t.Run("match_lock", func(t *testing.T) {
		tr := &extraActions{transport: &oldGuest{d: dispatch.New(), refuse: abi.OpMatchLock},
			add: map[abi.Op][]core.Action{abi.OpMatch: first, abi.OpLock: second}}
		w, err := newWireEngine(core.Config{PageSize: 1}, tr)
		require.NoError(t, err)
		defer w.Close()
		_, _, err = w.Insert(core.InsertParams{Tokens: seq(1, 4), Slots: seqSlots(0, 4)})
		require.NoError(t, err)
		for range 2 {
			m, rc, err := w.MatchLock(nil, core.Namespace{}, seq(1, 4), 0)
			require.NoError(t, err)
			require.Equal(t, first, m.Actions)
			require.NoError(t, w.Unlock(m.LastDevice, rc, false))
		}
		require.True(t, w.noMatchLock)
	})

	t.Run("begin_insert_matched_unlock", func(t *testing.T) {
		tr := &extraActions{transport: &oldGuest{d: dispatch.New(), refuse: abi.OpBeginInsertMatchedUnlock},
			add: map[abi.Op][]core.Action{abi.OpBeginInsertMatched: first, abi.OpBeginInsert: first, abi.OpUnlock: second}}
		w, err := newWireEngine(core.Config{PageSize: 1}, tr)
		require.NoError(t, err)
		defer w.Close()
		for i := range 3 {
			m, rc, err := w.MatchLock(nil, core.Namespace{}, seq(1, 4), 0)
			require.NoError(t, err)
			p := core.InsertParams{Tokens: seq(1, 4), Slots: seqSlots(10*i, 4)}
			if i == 2 {
				p.Tokens = seq(7, 4) // not the match's: a plain begin_insert
			}
			st, tried, uerr, err := w.BeginInsertUnlock(p, m.LastDevice, rc, false)
			require.NoError(t, err)
			require.NoError(t, uerr)
			require.True(t, tried)
			require.True(t, st.Done)
			// After the insert's own (a re-insert frees its duplicate slots).
			require.GreaterOrEqual(t, len(st.Actions), len(first))
			require.Equal(t, first, st.Actions[len(st.Actions)-len(first):], "insert %d", i)
		}
		require.True(t, w.noMatchedUnlock)
	})
}

// TestWireEngine_SlotViews: on a little-endian host both wire engines
// return an eviction's slot lists as views of the response (no copy),
// and the test harness poisons those bytes before the next call, so a
// view kept past its call reads as an invalid slot.
func TestWireEngine_SlotViews(t *testing.T) {
	if responseViewer == nil {
		t.Skip("no views on a big-endian host")
	}
	needClobber(t)
	for _, name := range []string{"inprocess", "wasm"} {
		t.Run(name, func(t *testing.T) {
			var eng Engine
			var err error
			if name == "wasm" {
				eng, err = NewWasmEngine(core.Config{PageSize: 1})
			} else {
				eng, err = NewInProcessEngine(core.Config{PageSize: 1})
			}
			require.NoError(t, err)
			defer eng.Close()
			w := eng.(*wireEngine)
			_, _, err = w.Insert(core.InsertParams{Tokens: seq(1, 64), Slots: seqSlots(100, 64)})
			require.NoError(t, err)
			acts, freed, err := w.Evict(core.Full, 64, nil)
			require.NoError(t, err)
			require.Equal(t, 64, freed)
			require.Len(t, acts, 1)
			s := acts[0].Slots
			require.Equal(t, seqSlots(100, 64), s)
			lo, hi := uintptr(unsafe.Pointer(unsafe.SliceData(w.last))), uintptr(unsafe.Pointer(unsafe.SliceData(w.last)))+uintptr(len(w.last))
			p := uintptr(unsafe.Pointer(&s[0]))
			require.True(t, p >= lo && p+4*uintptr(len(s)) <= hi, "the slots are not a view of the response")
			_, err = w.Evictable(core.Full)
			require.NoError(t, err)
			// The stats response rewrote the start of the buffer; past its
			// end the old bytes read as poison.
			require.Equal(t, int32(-0x5a5a5a5b), s[len(s)-1], "the old response was not poisoned")
		})
	}
}
