package abi

import (
	"reflect"
	"testing"

	"github.com/radixkv/radixkv/core"
)

// TestReset checks that Response.Reset and the request reset leave the
// zero value, whichever target's variant is built.
func TestReset(t *testing.T) {
	r := Response{Op: OpStats, Status: StatusError, Message: "x", Tag: 7, Actions: []core.Action{{Kind: 1}}}
	r.Stats.Policy, r.Match.Indices, r.Unlock.Released = "lru", []int32{1}, true
	r.Reset()
	if !reflect.ValueOf(r).IsZero() {
		t.Fatalf("Reset left %+v", r)
	}
	q := Request{Op: OpMatch, Instance: 3, Insert: core.InsertParams{Tokens: []uint32{1}}, Receipt: core.Receipt{Serial: 9}}
	resetRequest(&q)
	if !reflect.ValueOf(q).IsZero() {
		t.Fatalf("resetRequest left %+v", q)
	}
}

// TestDecodeRequest_Reused decodes every kind of request into a Request
// that held another one and requires what a fresh Request decodes.
func TestDecodeRequest_Reused(t *testing.T) {
	ns := core.Namespace{ExtraKey: "e", CacheSalt: "s", LoRA: "l"}
	reqs := []Request{
		{Op: OpMatchLock, Instance: 1, ID: 2, Insert: core.InsertParams{Namespace: ns, Tokens: []uint32{1, 2}}, Skip: 1},
		{Op: OpMatchLock, Instance: 1, ID: 3, Insert: core.InsertParams{Tokens: []uint32{1, 2, 3}}},
		{Op: OpUnlock, Instance: 1, ID: 4, Node: 5, Receipt: core.Receipt{Node: 5, Serial: 6, Delta: -2, SWAUUID: 3, SWAHostUUID: 4, Skipped: 2, Host: true}, SkipSWA: true},
		{Op: OpBeginInsertMatchedUnlock, Instance: 1, ID: 7, Matched: MatchedRef{MatchID: 2, Tokens: 2, Slots: 1},
			Insert: core.InsertParams{Namespace: ns, Slots: []int32{4}, SessionID: "x", PrevPrefixLen: 1}, Node: 5, Receipt: core.Receipt{Node: 5, Serial: 6}},
		{Op: OpStats, Instance: 1, ID: 8},
		{Op: OpEvict, Instance: 1, ID: 9, Component: 1, Want: 10},
		{Op: OpInsert, Instance: 1, ID: 10, Insert: core.InsertParams{Namespace: ns, Tokens: []uint32{1}, Slots: []int32{2}}},
	}
	var reused Request
	for _, prev := range reqs {
		for _, q := range reqs {
			if err := DecodeRequest(&reused, AppendRequest(nil, &prev)); err != nil {
				t.Fatal(err)
			}
			b := AppendRequest(nil, &q)
			var fresh Request
			errF, errR := DecodeRequest(&fresh, b), DecodeRequest(&reused, b)
			if errF != nil || errR != nil {
				t.Fatalf("%s after %s: %v %v", q.Op, prev.Op, errF, errR)
			}
			if !reflect.DeepEqual(fresh, reused) {
				t.Fatalf("%s after %s: reused %+v, fresh %+v", q.Op, prev.Op, reused, fresh)
			}
			// A truncated body fails the same way either way.
			for n := RequestHeaderSize; n < len(b); n++ {
				errF, errR = DecodeRequest(&fresh, b[:n]), DecodeRequest(&reused, b[:n])
				if errF == nil || errR == nil || errF.Error() != errR.Error() {
					t.Fatalf("%s cut at %d: %v / %v", q.Op, n, errF, errR)
				}
			}
		}
	}
}
