package abi_test

import (
	"github.com/radixkv/radixkv/abi"
	"github.com/radixkv/radixkv/core"
)

func init() { instances[13] = "create-matched" }

// matchedScript: begin_insert_matched on instance 13 (page size 2). A
// first insert caches 1..4; a match of 1..8 hits it, and the insert that
// follows names that match for its tokens and its first four slots. Then
// the ways a reference goes stale: a later match, a reset, too many
// tokens or slots asked for.
func matchedScript() []step {
	ns := core.Namespace{CacheSalt: "tenant-m"}
	matched := func(inst uint32, match string, toks, pre uint32, tail []int32, mod func(*abi.Request)) func(seen) abi.Request {
		return func(s seen) abi.Request {
			q := req(abi.OpBeginInsertMatched, inst)
			q.Matched = abi.MatchedRef{MatchID: s[match].ID, Tokens: toks, Slots: pre}
			q.Insert = core.InsertParams{Namespace: ns, Slots: tail, PrevPrefixLen: 4}
			if mod != nil {
				mod(&q)
			}
			return q
		}
	}
	match := func(inst uint32, toks []uint32) func(seen) abi.Request {
		return func(seen) abi.Request {
			q := req(abi.OpMatch, inst)
			q.Insert = core.InsertParams{Namespace: ns, Tokens: toks}
			return q
		}
	}
	return []step{
		{name: "create-matched", req: create(core.Config{PageSize: 2})},
		{name: "matched-none-kept", req: matched(13, "create-matched", 2, 0, slots(0, 2), nil)},
		{name: "matched-insert-1-4", req: func(seen) abi.Request {
			q := req(abi.OpInsert, 13)
			q.Insert = core.InsertParams{Namespace: ns, Tokens: seq(1, 4), Slots: slots(0, 4)}
			return q
		}},
		{name: "matched-match-1-8", req: match(13, seq(1, 8))},
		{name: "matched-too-many-tokens", req: matched(13, "matched-match-1-8", 9, 4, slots(10, 5), nil)},
		{name: "matched-too-many-slots", req: matched(13, "matched-match-1-8", 8, 5, slots(10, 3), nil)},
		{name: "matched-wrong-id", req: func(s seen) abi.Request {
			q := matched(13, "matched-match-1-8", 8, 4, slots(10, 4), nil)(s)
			q.Matched.MatchID++
			return q
		}},
		// The insert of 1..8: tokens and slots 0..3 from the match, 10..13
		// sent; the tree keeps 1..4 and adds 5..8.
		{name: "begin-insert-matched", req: matched(13, "matched-match-1-8", 8, 4, slots(10, 4), func(q *abi.Request) {
			q.Insert.Priority, q.Insert.SessionID = 3, "session-m"
		})},
		{name: "matched-match-again", req: match(13, seq(1, 6))},
		{name: "matched-superseded", req: matched(13, "matched-match-1-8", 8, 4, slots(10, 4), nil)},
		// Tokens only: no slot prefix, every slot sent.
		{name: "begin-insert-matched-tokens-only", req: matched(13, "matched-match-again", 6, 0, slots(20, 6), func(q *abi.Request) {
			q.Insert.PrevPrefixLen = 0
		})},
		// An empty match is kept too: it has no tokens to give.
		{name: "matched-match-empty", req: match(13, nil)},
		{name: "matched-empty-too-many-tokens", req: matched(13, "matched-match-empty", 1, 0, slots(20, 1), nil)},
		{name: "matched-match-before-reset", req: match(13, seq(1, 4))},
		{name: "matched-reset", req: plain(abi.OpReset, 13)},
		{name: "matched-after-reset", req: matched(13, "matched-match-before-reset", 4, 0, slots(0, 4), nil)},
		{name: "destroy-matched", req: plain(abi.OpDestroy, 13)},
	}
}
