package abi_test

import (
	"github.com/radixkv/radixkv/abi"
	"github.com/radixkv/radixkv/core"
)

func init() { instances[14] = "create-matchlock" }

// matchLockScript: match_lock on instance 14 (page size 2). On an empty
// tree the lock is on the root; after an insert of 1..4 it locks the
// matched node, and a match ending partway splits that node and locks the
// new one. A skip the lock refuses answers the lock's error while the
// match stands: begin_insert_matched can still name it.
func matchLockScript() []step {
	ns := core.Namespace{CacheSalt: "tenant-l"}
	ml := func(toks []uint32, skip core.ComponentSet) func(seen) abi.Request {
		return func(seen) abi.Request {
			q := req(abi.OpMatchLock, 14)
			q.Insert = core.InsertParams{Namespace: ns, Tokens: toks}
			q.Skip = skip
			return q
		}
	}
	unlock := func(of string) func(seen) abi.Request {
		return func(s seen) abi.Request {
			q := req(abi.OpUnlock, 14)
			q.Node, q.Receipt = s[of].Match.LastDevice, s[of].Receipt
			return q
		}
	}
	return []step{
		{name: "create-matchlock", req: create(core.Config{PageSize: 2})},
		{name: "matchlock-empty", req: ml(seq(1, 4), 0)},
		{name: "matchlock-unlock-root", req: unlock("matchlock-empty")},
		{name: "matchlock-insert-1-4", req: func(seen) abi.Request {
			q := req(abi.OpInsert, 14)
			q.Insert = core.InsertParams{Namespace: ns, Tokens: seq(1, 4), Slots: slots(0, 4)}
			return q
		}},
		{name: "matchlock-1-6", req: ml(seq(1, 6), 0)},
		{name: "matchlock-stats-locked", req: plain(abi.OpStats, 14)},
		{name: "matchlock-unlock", req: unlock("matchlock-1-6")},
		{name: "matchlock-split", req: ml(seq(1, 3), 0)},
		{name: "matchlock-unlock-split", req: unlock("matchlock-split")},
		{name: "matchlock-skip-full", req: ml(seq(1, 8), core.ComponentSet(0).With(core.Full))},
		{name: "matchlock-kept-after-failed-lock", req: func(s seen) abi.Request {
			q := req(abi.OpBeginInsertMatched, 14)
			q.Matched = abi.MatchedRef{MatchID: s["matchlock-skip-full"].ID, Tokens: 8, Slots: 4}
			q.Insert = core.InsertParams{Namespace: ns, Slots: slots(10, 4), PrevPrefixLen: 4}
			return q
		}},
		{name: "matchlock-stats-end", req: plain(abi.OpStats, 14)},
		{name: "destroy-matchlock", req: plain(abi.OpDestroy, 14)},
	}
}
