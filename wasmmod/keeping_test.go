package wasmmod_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/radixkv/radixkv/abi"
	"github.com/radixkv/radixkv/abi/dispatch"
	"github.com/radixkv/radixkv/core"
)

// keepGuest drives one module instance through two buffers: plain, for
// radixkv_call, and kept, for radixkv_call_keeping.
type keepGuest struct {
	*guest
	keeping      func(ptr, n uint32) []byte
	plain, kept  uint32
	id           uint64
	instance     uint32
	t            *testing.T
	lastResponse abi.Response
}

func newKeepGuest(t *testing.T) *keepGuest {
	g := instantiate(t)
	fn := g.mod.ExportedFunction("radixkv_call_keeping")
	require.NotNil(t, fn)
	k := &keepGuest{guest: g, t: t}
	ctx := context.Background()
	k.keeping = func(ptr, n uint32) []byte {
		res, err := fn.Call(ctx, uint64(ptr), uint64(n))
		require.NoError(t, err)
		out, ok := g.mod.Memory().Read(uint32(res[0]>>32), uint32(res[0]))
		require.True(t, ok)
		return bytes.Clone(out)
	}
	k.plain, k.kept = k.alloc(1<<12), k.alloc(1<<12)
	return k
}

func (k *keepGuest) alloc(n uint32) uint32 {
	res, err := k.guest.alloc.Call(context.Background(), uint64(n))
	require.NoError(k.t, err)
	return uint32(res[0])
}

// send encodes q (with the next id and k's instance) into buffer ptr and
// calls radixkv_call, or radixkv_call_keeping when keeping is set.
func (k *keepGuest) send(ptr uint32, keeping bool, q abi.Request) *abi.Response {
	k.id++
	q.ID = k.id
	if q.Op != abi.OpCreate {
		q.Instance = k.instance
	}
	b := abi.AppendRequest(nil, &q)
	require.True(k.t, k.mod.Memory().Write(ptr, b))
	var out []byte
	if keeping {
		out = k.keeping(ptr, uint32(len(b)))
	} else {
		res, err := k.guest.call.Call(context.Background(), uint64(ptr), uint64(len(b)))
		require.NoError(k.t, err)
		o, ok := k.mod.Memory().Read(uint32(res[0]>>32), uint32(res[0]))
		require.True(k.t, ok)
		out = bytes.Clone(o)
	}
	r := &k.lastResponse
	require.NoError(k.t, abi.DecodeResponse(r, out))
	return r
}

var keepNS = core.Namespace{CacheSalt: "keep"}

func keepSeq(lo, n int) []uint32 {
	s := make([]uint32, n)
	for i := range s {
		s[i] = uint32(lo + i)
	}
	return s
}

func keepSlots(lo, n int) []int32 {
	s := make([]int32, n)
	for i := range s {
		s[i] = int32(lo + i)
	}
	return s
}

// setUp creates an instance holding 1..4 and sends a match of 1..8 by
// radixkv_call_keeping from the kept buffer; it returns the match's id.
func (k *keepGuest) setUp() uint64 {
	r := k.send(k.plain, false, abi.Request{Op: abi.OpCreate, Config: core.Config{PageSize: 2}})
	require.Equal(k.t, abi.StatusOK, r.Status, r.Message)
	k.instance = r.Handle
	r = k.send(k.plain, false, abi.Request{Op: abi.OpInsert, Insert: core.InsertParams{Namespace: keepNS, Tokens: keepSeq(1, 4), Slots: keepSlots(0, 4)}})
	require.Equal(k.t, abi.StatusOK, r.Status, r.Message)
	r = k.send(k.kept, true, abi.Request{Op: abi.OpMatch, Insert: core.InsertParams{Namespace: keepNS, Tokens: keepSeq(1, 8)}})
	require.Equal(k.t, abi.StatusOK, r.Status, r.Message)
	require.Len(k.t, r.Match.Indices, 4)
	return k.id
}

// insertMatched sends the begin_insert_matched of 1..8 that names match.
func (k *keepGuest) insertMatched(match uint64) *abi.Response {
	return k.send(k.plain, false, abi.Request{Op: abi.OpBeginInsertMatched,
		Matched: abi.MatchedRef{MatchID: match, Tokens: 8, Slots: 4},
		Insert:  core.InsertParams{Namespace: keepNS, Slots: keepSlots(10, 4), PrevPrefixLen: 4}})
}

func (k *keepGuest) sane() {
	r := k.send(k.plain, false, abi.Request{Op: abi.OpSanityCheck})
	require.Equal(k.t, abi.StatusOK, r.Status, r.Message)
}

// TestModule_CallKeeping: a match sent by radixkv_call_keeping is kept
// where it is, and the insert that names it answers what the in-process
// dispatcher answers; every way the host can end its promise on the
// buffer early (a plain call in it, a free, another keeping call)
// makes that insert stale_match, and bytes the host overwrites behind
// the guest's back leave the tree well-formed.
func TestModule_CallKeeping(t *testing.T) {
	t.Run("kept", func(t *testing.T) {
		k := newKeepGuest(t)
		m := k.setUp()
		r := k.insertMatched(m)
		require.Equal(t, abi.StatusOK, r.Status, r.Message)
		require.True(t, r.Done)
		require.Equal(t, 4, r.Insert.PrefixLen)
		require.Equal(t, 8, r.Insert.TotalLen)
		k.sane()
		// The in-process dispatcher, with plain calls, answers the same.
		d := dispatch.New()
		q := abi.Request{Op: abi.OpCreate, ID: 1, Config: core.Config{PageSize: 2}}
		d.Call(abi.AppendRequest(nil, &q))
		for i, q := range []abi.Request{
			{Op: abi.OpInsert, Insert: core.InsertParams{Namespace: keepNS, Tokens: keepSeq(1, 4), Slots: keepSlots(0, 4)}},
			{Op: abi.OpMatch, Insert: core.InsertParams{Namespace: keepNS, Tokens: keepSeq(1, 8)}},
			{Op: abi.OpBeginInsertMatched, Matched: abi.MatchedRef{MatchID: 3, Tokens: 8, Slots: 4},
				Insert: core.InsertParams{Namespace: keepNS, Slots: keepSlots(10, 4), PrevPrefixLen: 4}},
			{Op: abi.OpRender},
		} {
			q.ID, q.Instance = uint64(i+2), 1
			want := bytes.Clone(d.Call(abi.AppendRequest(nil, &q)))
			if i == 3 {
				k.send(k.plain, false, q)
				var got abi.Response
				require.NoError(t, abi.DecodeResponse(&got, want))
				require.Equal(t, got.Text, k.lastResponse.Text)
			}
		}
	})
	t.Run("plain call in the kept buffer", func(t *testing.T) {
		k := newKeepGuest(t)
		m := k.setUp()
		k.send(k.kept, false, abi.Request{Op: abi.OpStats})
		require.Equal(t, abi.CodeStaleMatch, k.insertMatched(m).Code)
		k.sane()
	})
	t.Run("kept buffer freed", func(t *testing.T) {
		k := newKeepGuest(t)
		m := k.setUp()
		_, err := k.guest.free.Call(context.Background(), uint64(k.kept))
		require.NoError(t, err)
		require.Equal(t, abi.CodeStaleMatch, k.insertMatched(m).Code)
		k.sane()
	})
	t.Run("next keeping call", func(t *testing.T) {
		k := newKeepGuest(t)
		m := k.setUp()
		other := k.alloc(64)
		k.send(other, true, abi.Request{Op: abi.OpStats})
		require.Equal(t, abi.CodeStaleMatch, k.insertMatched(m).Code)
		k.sane()
	})
	t.Run("bad keeping call", func(t *testing.T) {
		k := newKeepGuest(t)
		m := k.setUp()
		var r abi.Response
		require.NoError(t, abi.DecodeResponse(&r, k.keeping(k.kept+1, 8)))
		require.Equal(t, abi.CodeMalformed, r.Code)
		require.Equal(t, abi.CodeStaleMatch, k.insertMatched(m).Code)
		k.sane()
	})
	t.Run("kept bytes overwritten behind the guest's back", func(t *testing.T) {
		for _, fill := range []byte{0x00, 0x01, 0xa5, 0xff} {
			k := newKeepGuest(t)
			m := k.setUp()
			b, ok := k.mod.Memory().Read(k.kept, 1<<12)
			require.True(t, ok)
			for i := range b {
				b[i] = fill
			}
			k.insertMatched(m) // any answer: the host broke the protocol
			k.sane()
		}
	})
}
