package abi_test

import (
	"github.com/radixkv/radixkv/abi"
	"github.com/radixkv/radixkv/core"
)

func init() { instances[15] = "create-insertunlock" }

// insertUnlockScript: begin_insert_matched_unlock on instance 15 (page
// size 2). After 1..8 is cached, a match_lock of 1..12 and the insert of
// its tokens that releases that lock; then the same receipt again (the
// insert stands, the unlock is refused beside it) and a reference to a
// superseded match (stale_match: nothing happens).
func insertUnlockScript() []step {
	const inst = 15
	ns := core.Namespace{CacheSalt: "tenant-u"}
	ml := func(toks []uint32) func(seen) abi.Request {
		return func(seen) abi.Request {
			q := req(abi.OpMatchLock, inst)
			q.Insert = core.InsertParams{Namespace: ns, Tokens: toks}
			return q
		}
	}
	// insertUnlock inserts toks tokens of match m (pre of its slots, then
	// tail) and unlocks the lock match_lock lk took.
	insertUnlock := func(m, lk string, toks, pre uint32, tail []int32) func(seen) abi.Request {
		return func(s seen) abi.Request {
			q := req(abi.OpBeginInsertMatchedUnlock, inst)
			q.Matched = abi.MatchedRef{MatchID: s[m].ID, Tokens: toks, Slots: pre}
			q.Insert = core.InsertParams{Namespace: ns, Slots: tail, PrevPrefixLen: int(pre)}
			q.Node, q.Receipt = s[lk].Match.LastDevice, s[lk].Receipt
			return q
		}
	}
	return []step{
		{name: "create-insertunlock", req: create(core.Config{PageSize: 2})},
		{name: "insertunlock-insert-1-8", req: func(seen) abi.Request {
			q := req(abi.OpInsert, inst)
			q.Insert = core.InsertParams{Namespace: ns, Tokens: seq(1, 8), Slots: slots(0, 8)}
			return q
		}},
		{name: "insertunlock-match-1-12", req: ml(seq(1, 12))},
		{name: "insert-unlock", req: insertUnlock("insertunlock-match-1-12", "insertunlock-match-1-12", 12, 8, slots(20, 4))},
		{name: "insertunlock-stats", req: plain(abi.OpStats, inst)},
		{name: "insertunlock-match-1-14", req: ml(seq(1, 14))},
		{name: "insert-unlock-released-receipt", req: insertUnlock("insertunlock-match-1-14", "insertunlock-match-1-12", 14, 12, slots(30, 2))},
		{name: "insert-unlock-stale", req: insertUnlock("insertunlock-match-1-12", "insertunlock-match-1-14", 12, 8, slots(20, 4))},
		{name: "insertunlock-unlock-1-14", req: func(s seen) abi.Request {
			q := req(abi.OpUnlock, inst)
			q.Node, q.Receipt = s["insertunlock-match-1-14"].Match.LastDevice, s["insertunlock-match-1-14"].Receipt
			return q
		}},
		{name: "insertunlock-stats-end", req: plain(abi.OpStats, inst)},
		{name: "destroy-insertunlock", req: plain(abi.OpDestroy, inst)},
	}
}
