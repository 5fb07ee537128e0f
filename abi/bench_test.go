package abi_test

import (
	"testing"

	"github.com/radixkv/radixkv/abi"
	"github.com/radixkv/radixkv/core"
)

// BenchmarkCodec encodes and decodes the messages that carry a serving
// loop's bulk, at the shared Mooncake trace's mean request (15,000
// tokens): a match request, the insert after it as begin_insert and as
// begin_insert_matched (the match's 3,000 slots left out), and an
// eviction's response freeing 15,000 slots. The bytes/s are the
// message's; compare the two inserts for what the kept match saves.
//
//	go test ./abi -run '^$' -bench Codec
func BenchmarkCodec(b *testing.B) {
	const n, hit = 15_000, 3_000
	toks := make([]uint32, n)
	sl := make([]int32, n)
	for i := range toks {
		toks[i], sl[i] = uint32(i*7+1), int32(i)
	}
	ns := core.Namespace{CacheSalt: "tenant"}
	match := abi.Request{Op: abi.OpMatch, Instance: 1, ID: 1, Insert: core.InsertParams{Namespace: ns, Tokens: toks}}
	insert := abi.Request{Op: abi.OpBeginInsert, Instance: 1, ID: 2,
		Insert: core.InsertParams{Namespace: ns, Tokens: toks, Slots: sl, PrevPrefixLen: hit}}
	matched := abi.Request{Op: abi.OpBeginInsertMatched, Instance: 1, ID: 2,
		Matched: abi.MatchedRef{MatchID: 1, Tokens: n, Slots: hit},
		Insert:  core.InsertParams{Namespace: ns, Slots: sl[hit:], PrevPrefixLen: hit}}
	for _, c := range []struct {
		name string
		q    *abi.Request
	}{{"match", &match}, {"begin_insert", &insert}, {"begin_insert_matched", &matched}} {
		buf := abi.AppendRequest(nil, c.q)
		b.Run(c.name+"/encode", func(b *testing.B) {
			b.SetBytes(int64(len(buf)))
			for b.Loop() {
				buf = abi.AppendRequest(buf[:0], c.q)
			}
		})
		b.Run(c.name+"/decode", func(b *testing.B) {
			b.SetBytes(int64(len(buf)))
			var q abi.Request
			for b.Loop() {
				if err := abi.DecodeRequest(&q, buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	evict := abi.Response{Op: abi.OpEvict, Instance: 1, ID: 3, Freed: n,
		Actions: []core.Action{{Kind: core.ActionFreeDeviceKV, Slots: sl}}}
	buf := abi.AppendResponse(nil, &evict)
	b.Run("evict_response/encode", func(b *testing.B) {
		b.SetBytes(int64(len(buf)))
		for b.Loop() {
			buf = abi.AppendResponse(buf[:0], &evict)
		}
	})
	b.Run("evict_response/decode", func(b *testing.B) {
		b.SetBytes(int64(len(buf)))
		var r abi.Response
		var s abi.Scratch
		for b.Loop() {
			if err := abi.DecodeResponseWith(&r, buf, &s); err != nil {
				b.Fatal(err)
			}
		}
	})
}
