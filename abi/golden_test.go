package abi_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/radixkv/radixkv/abi"
	"github.com/radixkv/radixkv/abi/dispatch"
	"github.com/radixkv/radixkv/core"
)

var rewrite = flag.Bool("rewrite", false, "rewrite abi/testdata golden vectors")

const (
	vectorsJSON = "testdata/vectors.json"
	vectorsText = "testdata/vectors.txt"
)

// Vector is one golden request/response pair. Args is the structured
// request (nil for raw byte vectors); Decoded is the response's JSON form.
type Vector struct {
	Name     string         `json:"name"`
	Args     map[string]any `json:"args"`
	Request  string         `json:"request"`
	Response string         `json:"response"`
	Decoded  map[string]any `json:"decoded"`
}

// step builds one request from the responses seen so far (by step name).
type step struct {
	name string
	req  func(s seen) abi.Request
	raw  func() []byte
}

type seen map[string]*abi.Response

func seq(from, n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(from + i)
	}
	return out
}

func slots(from, n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(from + i)
	}
	return out
}

func rawHeader(magic uint32, version, op uint16, instance, flags uint32, id uint64) []byte {
	b := make([]byte, 0, 24)
	b = append(b, byte(magic), byte(magic>>8), byte(magic>>16), byte(magic>>24))
	b = append(b, byte(version), byte(version>>8), byte(op), byte(op>>8))
	b = append(b, byte(instance), byte(instance>>8), byte(instance>>16), byte(instance>>24))
	b = append(b, byte(flags), byte(flags>>8), byte(flags>>16), byte(flags>>24))
	for i := range 8 {
		b = append(b, byte(id>>(8*i)))
	}
	return b
}

func req(op abi.Op, inst uint32) abi.Request { return abi.Request{Op: op, Instance: inst} }

// script covers every op with success and error cases. Request ids are
// assigned in order by goldenRun.
func script() []step {
	full := []core.Component{core.Full}
	ins := func(inst uint32, ns core.Namespace, toks []uint32, sl []int32, prev int) abi.Request {
		q := req(abi.OpInsert, inst)
		q.Insert = core.InsertParams{Namespace: ns, Tokens: toks, Slots: sl, PrevPrefixLen: prev}
		return q
	}
	match := func(inst uint32, ns core.Namespace, toks []uint32) abi.Request {
		q := req(abi.OpMatch, inst)
		q.Insert = core.InsertParams{Namespace: ns, Tokens: toks}
		return q
	}
	unlock := func(inst uint32, lock string, mod func(*abi.Request)) func(seen) abi.Request {
		return func(s seen) abi.Request {
			q := req(abi.OpUnlock, inst)
			q.Receipt = s[lock].Receipt
			q.Node = q.Receipt.Node
			if mod != nil {
				mod(&q)
			}
			return q
		}
	}
	nsA := core.Namespace{ExtraKey: "a", CacheSalt: "tenant-1", LoRA: "lora-7"}
	nsB := core.Namespace{CacheSalt: "tenant-2", LoRA: "lora-3"}
	steps := []step{
		{name: "version", req: plain(abi.OpVersion, 0)},
		{name: "create", req: create(core.Config{PageSize: 2, Components: full, Policy: "LRU"})},
		{name: "create-bad-page", req: create(core.Config{PageSize: 0})},
		{name: "create-bad-policy", req: create(core.Config{PageSize: 1, Policy: "nope"})},
		{name: "create-bad-component", req: create(core.Config{PageSize: 1, Components: []core.Component{core.Full, 7}})},
		{name: "create-swa-no-window", req: create(core.Config{PageSize: 1, Components: []core.Component{core.Full, core.SWA}})},
		{name: "create-mamba-cap-without-mamba", req: create(core.Config{PageSize: 1, MambaMaxPathStates: 2})},
		{name: "create-host-tier", req: create(core.Config{PageSize: 1, HostTier: true, WritePolicy: core.WriteBack, WriteThroughThreshold: 3})},
		{name: "create-bigram", req: create(core.Config{PageSize: 1, Policy: "lfu", Bigram: true})},
		{name: "match-empty", req: func(seen) abi.Request { return match(1, core.Namespace{}, seq(1, 8)) }},
		{name: "insert-1-8", req: func(seen) abi.Request { return ins(1, core.Namespace{}, seq(1, 9), slots(100, 8), 0) }},
		{name: "insert-split", req: func(seen) abi.Request {
			return ins(1, core.Namespace{}, append(seq(1, 4), 9, 10), slots(200, 6), 0)
		}},
		{name: "match-prefix", req: func(seen) abi.Request { return match(1, core.Namespace{}, seq(1, 7)) }},
		{name: "lock", req: nodeOp(abi.OpLock, 1, func(s seen) core.NodeID { return s["match-prefix"].Match.LastDevice })},
		{name: "lock-skip-full", req: func(s seen) abi.Request {
			q := req(abi.OpLock, 1)
			q.Node, q.Skip = s["match-prefix"].Match.LastDevice, core.ComponentSet(0).With(core.Full)
			return q
		}},
		{name: "lock-root", req: nodeOp(abi.OpLock, 1, func(s seen) core.NodeID { return s["create"].Root })},
		{name: "unlock-root", req: unlock(1, "lock-root", nil)},
		{name: "stats", req: plain(abi.OpStats, 1)},
		{name: "evict", req: evict(abi.OpEvict, 1, core.Full, 100)},
		{name: "evict-negative", req: evict(abi.OpEvict, 1, core.Full, -1)},
		{name: "unlock-wrong-serial", req: unlock(1, "lock", func(q *abi.Request) { q.Receipt.Serial += 1000 })},
		{name: "unlock-wrong-node", req: unlock(1, "lock", func(q *abi.Request) { q.Node = seenRoot(q) })},
		{name: "unlock-other-node", req: func(s seen) abi.Request {
			q := unlock(1, "lock", nil)(s)
			q.Node = s["create"].Root
			return q
		}},
		{name: "unlock", req: unlock(1, "lock", nil)},
		{name: "unlock-again", req: unlock(1, "lock", nil)},
		{name: "begin-insert", req: func(seen) abi.Request {
			q := ins(1, nsA, seq(1, 4), slots(300, 4), 0)
			q.Op = abi.OpBeginInsert
			q.Insert.TrackAdopted, q.Insert.Priority, q.Insert.SessionID = true, 5, "session-1"
			return q
		}},
		{name: "resume-insert-none", req: plain(abi.OpResumeInsert, 1)},
		{name: "end-insert", req: plain(abi.OpEndInsert, 1)},
		{name: "insert-chunked", req: func(seen) abi.Request {
			q := ins(1, nsA, seq(1, 6), slots(300, 6), 4)
			q.Insert.Chunked = true
			return q
		}},
		{name: "insert-negative-slot", req: func(seen) abi.Request {
			return ins(1, core.Namespace{}, seq(50, 2), []int32{7, -3}, 0)
		}},
		{name: "insert-too-few-slots", req: func(seen) abi.Request { return ins(1, core.Namespace{}, seq(50, 4), slots(7, 2), 0) }},
		{name: "insert-bad-prev", req: func(seen) abi.Request { return ins(1, core.Namespace{}, seq(50, 2), slots(7, 2), -1) }},
		{name: "match-ns", req: func(seen) abi.Request { return match(1, nsA, seq(1, 6)) }},
		{name: "protect", req: func(seen) abi.Request {
			q := match(1, core.Namespace{}, seq(1, 7))
			q.Op = abi.OpProtect
			return q
		}},
		{name: "unprotect", req: func(s seen) abi.Request {
			q := req(abi.OpUnprotect, 1)
			q.Serial = s["protect"].Protection.Serial
			return q
		}},
		{name: "unprotect-again", req: func(s seen) abi.Request {
			q := req(abi.OpUnprotect, 1)
			q.Serial = s["protect"].Protection.Serial
			return q
		}},
		{name: "nodes", req: plain(abi.OpNodes, 1)},
		{name: "device-leaves", req: plain(abi.OpDeviceLeaves, 1)},
		{name: "inspect", req: nodeOp(abi.OpInspect, 1, func(s seen) core.NodeID { return s["match-prefix"].Match.LastDevice })},
		{name: "inspect-root", req: nodeOp(abi.OpInspect, 1, func(s seen) core.NodeID { return s["create"].Root })},
		{name: "inspect-zero", req: nodeOp(abi.OpInspect, 1, func(seen) core.NodeID { return 0 })},
		{name: "dfs-order", req: func(s seen) abi.Request {
			q := req(abi.OpDFSOrder, 1)
			q.Nodes = append([]core.NodeID{s["create"].Root}, s["nodes"].Nodes...)
			return q
		}},
		{name: "dfs-order-stale", req: func(s seen) abi.Request {
			q := req(abi.OpDFSOrder, 1)
			q.Nodes = []core.NodeID{s["create"].Root, 0xdead00000063}
			return q
		}},
		{name: "render", req: plain(abi.OpRender, 1)},
		{name: "sanity", req: plain(abi.OpSanityCheck, 1)},
		{name: "evict-start", req: evict(abi.OpEvictStart, 1, core.Full, 3)},
		{name: "evict-start-again", req: evict(abi.OpEvictStart, 1, core.Full, 3)},
		{name: "evict-next-1", req: plain(abi.OpEvictNext, 1)},
		{name: "evict-next-2", req: plain(abi.OpEvictNext, 1)},
		{name: "evict-next-3", req: plain(abi.OpEvictNext, 1)},
		{name: "evict-end", req: plain(abi.OpEvictEnd, 1)},
		{name: "evict-next-ended", req: plain(abi.OpEvictNext, 1)},
		{name: "evict-start-mamba", req: evict(abi.OpEvictStart, 1, core.Mamba, 1)},
		{name: "inspect-evicted", req: nodeOp(abi.OpInspect, 1, func(s seen) core.NodeID { return s["evict-next-1"].Node })},
		{name: "match-bigram", req: func(seen) abi.Request { return match(2, core.Namespace{}, seq(1, 5)) }},
		{name: "insert-bigram", req: func(seen) abi.Request { return ins(2, core.Namespace{}, seq(1, 5), slots(0, 4), 0) }},
		{name: "lock-foreign-node", req: nodeOp(abi.OpLock, 1, func(s seen) core.NodeID { return s["insert-bigram"].Insert.LastDevice })},
		{name: "create-twin", req: create(core.Config{PageSize: 1})},
		{name: "insert-twin", req: func(seen) abi.Request { return ins(3, core.Namespace{}, seq(1, 4), slots(0, 4), 0) }},
		{name: "create-twin-2", req: create(core.Config{PageSize: 1})},
		{name: "insert-twin-2", req: func(seen) abi.Request { return ins(4, core.Namespace{}, seq(1, 4), slots(0, 4), 0) }},
		{name: "inspect-twin-foreign", req: nodeOp(abi.OpInspect, 4, func(s seen) core.NodeID { return s["insert-twin"].Insert.LastDevice })},
		{name: "unlock-swa-early-no-swa", req: func(s seen) abi.Request {
			q := req(abi.OpUnlockSWAEarly, 1)
			q.Receipt = s["lock"].Receipt
			q.Node = q.Receipt.Node
			return q
		}},
		{name: "evict-excess-no-mamba", req: nodeOp(abi.OpEvictExcessPathStates, 1, func(s seen) core.NodeID { return s["create"].Root })},
		{name: "lru-order-full", req: lruOrder(1, core.Full, false)},
		// Host-tier ops on an instance without a host tier (or linker).
		{name: "host-lock-no-host-tier", req: nodeOp(abi.OpHostLock, 1, func(s seen) core.NodeID { return s["match-prefix"].Match.LastDevice })},
		{name: "backup-spec-no-host-tier", req: nodeOp(abi.OpBackupSpec, 1, func(s seen) core.NodeID { return s["match-prefix"].Match.LastDevice })},
		{name: "evict-host-no-host-tier", req: evict(abi.OpEvictHost, 1, core.Full, 1)},
		{name: "load-back-no-host-tier", req: nodeOp(abi.OpLoadBack, 1, func(s seen) core.NodeID { return s["match-prefix"].Match.LastDevice })},
		{name: "linker-chain-linker-off", req: nodeOp(abi.OpLinkerChain, 1, func(s seen) core.NodeID { return s["match-prefix"].Match.LastDevice })},
		{name: "backfill-hashes", req: plain(abi.OpBackfillHashes, 1)},
		{name: "take-events-without-kv-events", req: plain(abi.OpTakeEvents, 1)},
		{name: "unknown-instance", req: plain(abi.OpStats, 99)},
		{name: "destroy-twin", req: plain(abi.OpDestroy, 3)},
		{name: "stats-destroyed", req: plain(abi.OpStats, 3)},
		{name: "reset", req: plain(abi.OpReset, 1)},
		{name: "inspect-after-reset", req: nodeOp(abi.OpInspect, 1, func(s seen) core.NodeID { return s["match-prefix"].Match.LastDevice })},
		{name: "stats-after-reset", req: plain(abi.OpStats, 1)},
		{name: "raw-truncated-header", raw: func() []byte { return rawHeader(abi.RequestMagic, abi.Version, 1, 0, 0, 1)[:10] }},
		{name: "raw-empty", raw: func() []byte { return nil }},
		{name: "raw-bad-magic", raw: func() []byte { return rawHeader(0x12345678, abi.Version, 1, 0, 0, 2) }},
		{name: "raw-bad-version", raw: func() []byte { return rawHeader(abi.RequestMagic, 99, 1, 0, 0, 3) }},
		{name: "raw-unknown-op", raw: func() []byte { return rawHeader(abi.RequestMagic, abi.Version, 0x7777, 1, 0, 4) }},
		{name: "raw-flags", raw: func() []byte { return rawHeader(abi.RequestMagic, abi.Version, 1, 0, 1, 5) }},
		{name: "raw-version-with-instance", raw: func() []byte { return rawHeader(abi.RequestMagic, abi.Version, 1, 5, 0, 6) }},
		{name: "raw-instance-zero", raw: func() []byte { return rawHeader(abi.RequestMagic, abi.Version, uint16(abi.OpStats), 0, 0, 7) }},
		{name: "raw-trailing", raw: func() []byte { return append(rawHeader(abi.RequestMagic, abi.Version, 1, 0, 0, 8), 0) }},
		{name: "raw-token-count-too-big", raw: func() []byte {
			b := rawHeader(abi.RequestMagic, abi.Version, uint16(abi.OpMatch), 1, 0, 9)
			b = append(b, make([]byte, 12)...)          // empty namespace
			return append(b, 0xff, 0xff, 0xff, 0x7f, 1) // 2^31-1 tokens, 1 byte
		}},
		{name: "raw-unlock-truncated", raw: func() []byte {
			b := rawHeader(abi.RequestMagic, abi.Version, uint16(abi.OpUnlock), 1, 0, 10)
			return append(b, make([]byte, 8+abi.ReceiptSize)...)[:24+8+abi.ReceiptSize] // cut before skip_swa
		}},
		{name: "raw-bad-bool-2", raw: func() []byte {
			b := rawHeader(abi.RequestMagic, abi.Version, uint16(abi.OpUnlock), 1, 0, 11)
			b = append(b, make([]byte, 8+abi.ReceiptSize)...)
			return append(b, 2)
		}},
		{name: "insert-after-errors", req: func(seen) abi.Request { return ins(1, core.Namespace{}, seq(1, 4), slots(500, 4), 0) }},
		{name: "sanity-end", req: plain(abi.OpSanityCheck, 1)},
		{name: "destroy", req: plain(abi.OpDestroy, 1)},
		// KV events on instance 5, with vLLM's block ids.
		{name: "create-kv-events", req: create(core.Config{PageSize: 2, KVEvents: true, HashConvention: core.HashVLLM})},
		{name: "events-insert-1-4", req: func(seen) abi.Request {
			q := ins(5, nsB, seq(1, 4), slots(0, 4), 0)
			q.Insert.SessionID = "req-1"
			return q
		}},
		{name: "events-insert-1-8", req: func(seen) abi.Request {
			q := ins(5, nsB, seq(1, 8), slots(10, 8), 0)
			q.Insert.SessionID = "req-1"
			return q
		}},
		{name: "events-match-split", req: func(seen) abi.Request { return match(5, nsB, []uint32{1, 2, 9, 9}) }},
		// One BlockStored: the second insert's page chains onto the first's.
		{name: "take-events-stored", req: plain(abi.OpTakeEvents, 5)},
		{name: "take-events-drained", req: plain(abi.OpTakeEvents, 5)},
		{name: "events-insert-branch", req: func(seen) abi.Request {
			q := ins(5, nsB, []uint32{1, 2, 3, 4, 20, 21}, slots(30, 6), 0)
			q.Insert.SessionID = "req-2"
			return q
		}},
		{name: "events-evict", req: evict(abi.OpEvict, 5, core.Full, 100)},
		// A BlockStored with a parent, then the evicted nodes' removals
		// coalesced into one BlockRemoved.
		{name: "take-events-removed", req: plain(abi.OpTakeEvents, 5)},
		// reset keeps this insert's undrained BlockStored for the
		// consumer and records AllBlocksCleared after it.
		{name: "events-insert-again", req: func(seen) abi.Request { return ins(5, core.Namespace{}, seq(1, 2), slots(40, 2), 0) }},
		{name: "events-reset", req: plain(abi.OpReset, 5)},
		{name: "take-events-cleared", req: plain(abi.OpTakeEvents, 5)},
		{name: "raw-take-events-body", raw: func() []byte {
			return append(rawHeader(abi.RequestMagic, abi.Version, uint16(abi.OpTakeEvents), 5, 0, 12), 0)
		}},
		{name: "destroy-kv-events", req: plain(abi.OpDestroy, 5)},
		// A hybrid instance (6): Full, SWA with a 4-atom window, Mamba
		// with a cap of two states per path.
		{name: "create-hybrid", req: create(core.Config{PageSize: 2, Components: []core.Component{core.Full, core.SWA, core.Mamba},
			SWAWindow: 4, MambaChunkSize: 2, MambaMaxPathStates: 2})},
		// An 8-atom leaf is capped at the window: two SWA rebuilds, then
		// the cap check on the new state.
		{name: "hybrid-insert-1-8", req: func(seen) abi.Request {
			q := ins(6, core.Namespace{}, seq(1, 8), slots(600, 8), 0)
			q.Insert.MambaSlot = 1
			return q
		}},
		{name: "hybrid-insert-1-12", req: func(seen) abi.Request {
			q := ins(6, core.Namespace{}, seq(1, 12), slots(700, 12), 8)
			q.Insert.MambaSlot = 2
			return q
		}},
		{name: "hybrid-insert-1-16", req: func(seen) abi.Request {
			q := ins(6, core.Namespace{}, seq(1, 16), slots(800, 16), 12)
			q.Insert.MambaSlot, q.Insert.SWABranchingSeqlen, q.Insert.TrackAdopted = 3, 14, true
			return q
		}},
		// Three states on one path, cap two: the shallowest goes.
		{name: "hybrid-evict-excess", req: nodeOp(abi.OpEvictExcessPathStates, 6, func(s seen) core.NodeID { return s["hybrid-insert-1-16"].Insert.LastDevice })},
		{name: "hybrid-evict-excess-stale", req: nodeOp(abi.OpEvictExcessPathStates, 6, func(seen) core.NodeID { return 0xdead00000063 })},
		{name: "hybrid-match", req: func(seen) abi.Request { return match(6, core.Namespace{}, seq(1, 16)) }},
		{name: "hybrid-lock", req: nodeOp(abi.OpLock, 6, func(s seen) core.NodeID { return s["hybrid-match"].Match.LastDevice })},
		{name: "hybrid-unlock-swa-early", req: unlockSWA(6, "hybrid-lock")},
		{name: "hybrid-unlock-swa-early-again", req: unlockSWA(6, "hybrid-lock")},
		{name: "hybrid-unlock-without-skip-swa", req: unlock(6, "hybrid-lock", nil)},
		{name: "hybrid-unlock", req: unlock(6, "hybrid-lock", func(q *abi.Request) { q.SkipSWA = true })},
		{name: "hybrid-evict-swa", req: evict(abi.OpEvict, 6, core.SWA, 4)},
		{name: "hybrid-lru-order-swa", req: lruOrder(6, core.SWA, false)},
		{name: "hybrid-lru-order-mamba", req: lruOrder(6, core.Mamba, false)},
		// The first node is now an SWA tombstone; lock the path below it
		// and insert the prefix again with SWA data: the locked Full slots
		// take the request's SWA slots.
		{name: "hybrid-lock-1-8", req: nodeOp(abi.OpLock, 6, func(s seen) core.NodeID { return s["hybrid-insert-1-8"].Insert.LastDevice })},
		{name: "hybrid-insert-recover", req: func(seen) abi.Request {
			q := ins(6, core.Namespace{}, seq(1, 8), slots(900, 8), 0)
			q.Insert.MambaSlot = 4
			return q
		}},
		{name: "hybrid-insert-no-mamba-slot", req: func(seen) abi.Request {
			q := ins(6, core.Namespace{}, seq(30, 4), slots(950, 4), 0)
			q.Insert.MambaSlot = -1
			return q
		}},
		{name: "hybrid-insert-unaligned-swa-evicted", req: func(seen) abi.Request {
			q := ins(6, core.Namespace{}, seq(30, 4), slots(950, 4), 0)
			q.Insert.MambaSlot, q.Insert.SWAEvictedSeqlen = 5, 3
			return q
		}},
		{name: "hybrid-evict-mamba", req: evict(abi.OpEvict, 6, core.Mamba, 1)},
		{name: "hybrid-inspect", req: nodeOp(abi.OpInspect, 6, func(s seen) core.NodeID { return s["hybrid-insert-1-8"].Insert.LastDevice })},
		{name: "hybrid-stats", req: plain(abi.OpStats, 6)},
		{name: "hybrid-render", req: plain(abi.OpRender, 6)},
		{name: "hybrid-sanity", req: plain(abi.OpSanityCheck, 6)},
		{name: "destroy-hybrid", req: plain(abi.OpDestroy, 6)},
	}
	steps = append(steps, hostScript()...)
	steps = append(steps, snapshotScript()...)
	steps = append(steps, blocksScript()...)
	steps = append(steps, marconiScript()...)
	steps = append(steps, matchedScript()...)
	steps = append(steps, matchLockScript()...)
	steps = append(steps, insertUnlockScript()...)
	return steps
}

func create(cfg core.Config) func(seen) abi.Request {
	return func(seen) abi.Request { q := req(abi.OpCreate, 0); q.Config = cfg; return q }
}

func plain(op abi.Op, inst uint32) func(seen) abi.Request {
	return func(seen) abi.Request { return req(op, inst) }
}

func nodeOp(op abi.Op, inst uint32, node func(s seen) core.NodeID) func(seen) abi.Request {
	return func(s seen) abi.Request { q := req(op, inst); q.Node = node(s); return q }
}

func evict(op abi.Op, inst uint32, c core.Component, want int64) func(seen) abi.Request {
	return func(seen) abi.Request { q := req(op, inst); q.Component, q.Want = c, want; return q }
}

func lruOrder(inst uint32, c core.Component, host bool) func(seen) abi.Request {
	return func(seen) abi.Request { q := req(abi.OpLRUOrder, inst); q.Component, q.Host = c, host; return q }
}

func unlockSWA(inst uint32, lock string) func(seen) abi.Request {
	return func(s seen) abi.Request {
		q := req(abi.OpUnlockSWAEarly, inst)
		q.Receipt = s[lock].Receipt
		q.Node = q.Receipt.Node
		return q
	}
}

// instances names the create step behind each instance number the
// script uses: goldenRun sends a request for script instance k to the
// handle that step's create returned, so the script keeps addressing the
// right instance when a create before it starts or stops succeeding.
// Numbers not listed (never issued, or a create that failed) go out
// unchanged.
var instances = map[uint32]string{
	1: "create", 2: "create-bigram", 3: "create-twin", 4: "create-twin-2", 5: "create-kv-events", 6: "create-hybrid",
	7: "create-host-wt", 8: "create-host-wb",
}

// seenRoot returns a different node than q.Node for the wrong-node case:
// the receipt's node with its slot moved, which is never issued.
func seenRoot(q *abi.Request) core.NodeID { return q.Node + 40 }

// goldenRun runs the script through a fresh dispatcher.
func goldenRun(t testing.TB) []Vector {
	d := dispatch.New()
	s := seen{}
	var out []Vector
	for i, st := range script() {
		v := Vector{Name: st.name}
		var b []byte
		if st.raw != nil {
			b = st.raw()
		} else {
			q := st.req(s)
			q.ID = uint64(i + 1)
			if r, ok := s[instances[q.Instance]]; ok && q.Op.NeedsInstance() && r.Status == abi.StatusOK {
				q.Instance = r.Handle
			}
			b = abi.AppendRequest(nil, &q)
			v.Args = requestJSON(&q)
			var back abi.Request
			require.NoError(t, abi.DecodeRequest(&back, b), st.name)
			require.Equal(t, requestJSON(&q), requestJSON(&back), "%s: request round trip", st.name)
		}
		resp := bytes.Clone(d.Call(b))
		r := new(abi.Response)
		require.NoError(t, abi.DecodeResponse(r, resp), st.name)
		s[st.name] = r
		v.Request, v.Response, v.Decoded = hex.EncodeToString(b), hex.EncodeToString(resp), responseJSON(r)
		// Re-encoding the decoded response gives the same bytes.
		require.Equal(t, resp, abi.AppendResponse(nil, r), "%s: response round trip", st.name)
		out = append(out, v)
	}
	return out
}

func renderVectors(t testing.TB, vs []Vector) (jsonOut, textOut []byte) {
	j, err := json.MarshalIndent(vs, "", "  ")
	require.NoError(t, err)
	var b strings.Builder
	b.WriteString("# Golden ABI vectors, generated by `go test ./abi -run TestGolden -rewrite`.\n")
	b.WriteString("# Each entry: > request (structured), < response (decoded), then the hex.\n")
	for i, v := range vs {
		fmt.Fprintf(&b, "\n## %d %s\n", i+1, v.Name)
		if v.Args != nil {
			a, _ := json.Marshal(v.Args)
			fmt.Fprintf(&b, "> %s\n", a)
		} else {
			b.WriteString("> (raw bytes)\n")
		}
		dec := v.Decoded
		text, hasText := dec["text"].(string)
		if hasText {
			dec = copyMap(dec)
			delete(dec, "text")
		}
		a, _ := json.Marshal(dec)
		fmt.Fprintf(&b, "< %s\n", a)
		if c, ok := dec["code"].(int64); ok && c != 0 {
			fmt.Fprintf(&b, "< error %s\n", abi.Code(c))
		}
		if hasText {
			for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
				fmt.Fprintf(&b, "| %s\n", line)
			}
		}
		fmt.Fprintf(&b, "req  %s\nresp %s\n", v.Request, v.Response)
	}
	return append(j, '\n'), []byte(b.String())
}

func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// TestGolden regenerates the vectors from the script and requires the
// committed files to match byte for byte (-rewrite updates them).
func TestGolden(t *testing.T) {
	j, txt := renderVectors(t, goldenRun(t))
	if *rewrite {
		require.NoError(t, os.MkdirAll(filepath.Dir(vectorsJSON), 0o755))
		require.NoError(t, os.WriteFile(vectorsJSON, j, 0o644))
		require.NoError(t, os.WriteFile(vectorsText, txt, 0o644))
		return
	}
	wantJ, err := os.ReadFile(vectorsJSON)
	require.NoError(t, err, "run go test ./abi -run TestGolden -rewrite")
	require.Equal(t, string(wantJ), string(j), "vectors.json is stale: rerun with -rewrite and review the diff")
	wantT, err := os.ReadFile(vectorsText)
	require.NoError(t, err)
	require.Equal(t, string(wantT), string(txt), "vectors.txt is stale: rerun with -rewrite and review the diff")
}

// LoadVectors reads the committed vectors.
func LoadVectors(t testing.TB) []Vector {
	b, err := os.ReadFile(vectorsJSON)
	require.NoError(t, err)
	var vs []Vector
	require.NoError(t, json.Unmarshal(b, &vs))
	require.NotEmpty(t, vs)
	return vs
}

// TestGolden_Replay feeds the committed request bytes to a fresh
// dispatcher and requires the committed response bytes, and checks that
// decoding them gives the committed structured form.
func TestGolden_Replay(t *testing.T) {
	d := dispatch.New()
	for _, v := range LoadVectors(t) {
		req, err := hex.DecodeString(v.Request)
		require.NoError(t, err)
		got := hex.EncodeToString(d.Call(req))
		require.Equal(t, v.Response, got, v.Name)
	}
}
