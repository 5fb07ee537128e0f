package wordview_test

import (
	"slices"
	"testing"
	"unsafe"

	"github.com/radixkv/radixkv/abi"
	"github.com/radixkv/radixkv/abi/dispatch"
	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/internal/wordview"
)

// TestDecodeRequestViewing: the bulk arrays of match, match_lock, insert,
// begin_insert and begin_insert_matched are views of the request bytes
// (and say so), those of other ops are copies, and a later
// decode into the same Request never writes into an earlier view.
func TestDecodeRequestViewing(t *testing.T) {
	if !wordview.LittleEndian() {
		t.Skip("views are for little-endian machines")
	}
	toks := []uint32{1, 2, 3, 4, 5, 6, 7, 8}
	slots := []int32{10, 11, 12, 13, 14, 15, 16, 17}
	ins := core.InsertParams{Tokens: toks, Slots: slots}
	cases := []struct {
		q    abi.Request
		want abi.Views
	}{
		{abi.Request{Op: abi.OpMatch, Instance: 1, Insert: ins}, abi.ViewTokens},
		{abi.Request{Op: abi.OpMatchLock, Instance: 1, Insert: ins}, abi.ViewTokens},
		{abi.Request{Op: abi.OpInsert, Instance: 1, Insert: ins}, abi.ViewTokens | abi.ViewSlots},
		{abi.Request{Op: abi.OpBeginInsert, Instance: 1, Insert: ins}, abi.ViewTokens | abi.ViewSlots},
		{abi.Request{Op: abi.OpBeginInsertMatched, Instance: 1, Insert: core.InsertParams{Slots: slots}, Matched: abi.MatchedRef{MatchID: 3, Tokens: 8}}, abi.ViewSlots},
		{abi.Request{Op: abi.OpBeginInsertMatched, Instance: 1, Insert: core.InsertParams{Slots: slots[2:]}, Matched: abi.MatchedRef{MatchID: 3, Tokens: 8, Slots: 2}}, abi.ViewSlots},
		{abi.Request{Op: abi.OpProtect, Instance: 1, Insert: core.InsertParams{Tokens: toks}}, 0},
	}
	var q abi.Request
	for _, c := range cases {
		wire := abi.AppendRequest(nil, &c.q)
		var want abi.Request
		if err := abi.DecodeRequest(&want, wire); err != nil {
			t.Fatal(err)
		}
		// Decode into the previous case's Request, whose arrays may be
		// views of the previous (still live) bytes.
		prev := slices.Clone(wire)
		if err := abi.DecodeRequestViewing(&q, wire, wordview.Viewer{}); err != nil {
			t.Fatalf("%s: %v", c.q.Op, err)
		}
		if q.Views() != c.want {
			t.Fatalf("%s: views %b, want %b", c.q.Op, q.Views(), c.want)
		}
		if !slices.Equal(q.Insert.Tokens, want.Insert.Tokens) || !slices.Equal(q.Insert.Slots, want.Insert.Slots) {
			t.Fatalf("%s: decoded %v %v, want %v %v", c.q.Op, q.Insert.Tokens, q.Insert.Slots, want.Insert.Tokens, want.Insert.Slots)
		}
		if !slices.Equal(wire, prev) {
			t.Fatalf("%s: the decode wrote into the request bytes", c.q.Op)
		}
		// The token array of these ops starts at byte 40 (header,
		// empty namespace, count); a view of slots lies inside wire.
		if c.want&abi.ViewTokens != 0 && &wordview.Bytes(q.Insert.Tokens)[0] != &wire[40] {
			t.Fatalf("%s: tokens are not a view of the request", c.q.Op)
		}
		if c.want&abi.ViewSlots != 0 {
			p, lo := uintptr(unsafe.Pointer(&q.Insert.Slots[0])), uintptr(unsafe.Pointer(&wire[0]))
			if p < lo || p >= lo+uintptr(len(wire)) {
				t.Fatalf("%s: slots are not a view of the request", c.q.Op)
			}
		}
	}
	// A copy-decoding op after a viewing one must not decode into the
	// earlier request's bytes.
	first := abi.AppendRequest(nil, &abi.Request{Op: abi.OpBeginInsert, Instance: 1, Insert: ins})
	keep := slices.Clone(first)
	if err := abi.DecodeRequestViewing(&q, first, wordview.Viewer{}); err != nil {
		t.Fatal(err)
	}
	other := abi.AppendRequest(nil, &abi.Request{Op: abi.OpInsertHost, Instance: 1, Node: 1, Insert: core.InsertParams{Tokens: []uint32{9, 9}, Slots: []int32{9, 9}}})
	if err := abi.DecodeRequestViewing(&q, other, wordview.Viewer{}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(first, keep) || q.Views() != 0 {
		t.Fatalf("a copying decode wrote into an earlier request's view (views %b)", q.Views())
	}
}

// TestDispatcher_RequestViews runs the same calls through a dispatcher
// that reads requests in place and one that copies, poisoning each
// request's bytes as soon as the caller may change them (after a Call,
// and after the next CallKeeping for a CallKeeping): the answers and the
// trees are the same, so no view outlives its bytes. A match kept as a
// view is dropped by the next CallKeeping: an insert naming it then
// answers stale_match.
func TestDispatcher_RequestViews(t *testing.T) {
	if !wordview.LittleEndian() {
		t.Skip("views are for little-endian machines")
	}
	viewing, plain := dispatch.New(), dispatch.New()
	viewing.SetRequestViewer(wordview.Viewer{})
	var kept []byte // the last CallKeeping's bytes, valid until the next
	poison := func(b []byte) {
		for i := range b {
			b[i] = 0xa5
		}
	}
	id := uint64(0)
	send := func(q abi.Request, keeping bool) *abi.Response {
		t.Helper()
		id++
		q.ID = id
		req := abi.AppendRequest(nil, &q)
		want := slices.Clone(plain.Call(slices.Clone(req)))
		var got []byte
		if keeping {
			got = slices.Clone(viewing.CallKeeping(req))
			poison(kept)
			kept = req
		} else {
			got = slices.Clone(viewing.Call(req))
			poison(req)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: viewing dispatcher answered %x, copying one %x", q.Op, got, want)
		}
		var r abi.Response
		if err := abi.DecodeResponse(&r, got); err != nil {
			t.Fatal(err)
		}
		return &r
	}
	h := send(abi.Request{Op: abi.OpCreate, Config: core.Config{PageSize: 1}}, false).Handle
	seq := func(n, base int) ([]uint32, []int32) {
		toks, slots := make([]uint32, n), make([]int32, n)
		for i := range n {
			toks[i], slots[i] = uint32(base+i), int32(base+i)
		}
		return toks, slots
	}
	matched := func(match uint64, toks []uint32, slots []int32, k int) *abi.Response {
		return send(abi.Request{Op: abi.OpBeginInsertMatched, Instance: h,
			Insert:  core.InsertParams{Slots: slots[k:]},
			Matched: abi.MatchedRef{MatchID: match, Tokens: uint32(len(toks)), Slots: uint32(k)}}, false)
	}
	for round, keeping := range []bool{true, false, true, true, false} {
		base := 1000 * round
		toks, slots := seq(64, base)
		// A plain insert and begin_insert of a prefix, in place.
		send(abi.Request{Op: abi.OpInsert, Instance: h, Insert: core.InsertParams{Tokens: toks[:8], Slots: slots[:8]}}, false)
		send(abi.Request{Op: abi.OpBeginInsert, Instance: h, Insert: core.InsertParams{Tokens: toks[:16], Slots: slots[:16]}}, false)
		// A match of all of it (16 hit), then the insert that names it.
		m := send(abi.Request{Op: abi.OpMatchLock, Instance: h, Insert: core.InsertParams{Tokens: toks}}, keeping)
		if len(m.Match.Indices) != 16 {
			t.Fatalf("round %d: matched %d", round, len(m.Match.Indices))
		}
		send(abi.Request{Op: abi.OpStats, Instance: h}, false)
		match := id - 1
		if r := matched(match, toks, slots, 16); r.Status != abi.StatusOK {
			t.Fatalf("round %d: %s", round, r.Message)
		}
		// The match is still kept, its indices intact: name it again,
		// with all its slots and with fewer (the sent ones then go to a
		// buffer of their own).
		for _, k := range []int{16, 8} {
			if r := matched(match, toks, slots, k); r.Status != abi.StatusOK {
				t.Fatalf("round %d, again with %d slots: %s", round, k, r.Message)
			}
		}
		// A miss, named with no slot prefix (its slots read in place).
		toks, slots = seq(32, base+500)
		send(abi.Request{Op: abi.OpMatch, Instance: h, Insert: core.InsertParams{Tokens: toks}}, keeping)
		if r := matched(id, toks, slots, 0); r.Status != abi.StatusOK {
			t.Fatalf("round %d: %s", round, r.Message)
		}
	}
	// A kept view is gone after the next CallKeeping, whatever it was.
	toks, slots := seq(16, 9000)
	send(abi.Request{Op: abi.OpMatch, Instance: h, Insert: core.InsertParams{Tokens: toks}}, true)
	match := id
	id++
	viewing.CallKeeping(abi.AppendRequest(nil, &abi.Request{Op: abi.OpStats, Instance: h, ID: id}))
	plain.Call(abi.AppendRequest(nil, &abi.Request{Op: abi.OpReset, Instance: h, ID: id})) // the copying one drops its match too
	id++
	out := viewing.Call(abi.AppendRequest(nil, &abi.Request{Op: abi.OpBeginInsertMatched, Instance: h, ID: id,
		Insert: core.InsertParams{Slots: slots}, Matched: abi.MatchedRef{MatchID: match, Tokens: 16}}))
	var r abi.Response
	if err := abi.DecodeResponse(&r, out); err != nil {
		t.Fatal(err)
	}
	if r.Status == abi.StatusOK || r.Code != abi.CodeStaleMatch {
		t.Fatalf("an insert naming a match whose request bytes were released answered %v %q", r.Code, r.Message)
	}
}
