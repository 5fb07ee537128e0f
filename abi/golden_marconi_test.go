package abi_test

import (
	"github.com/radixkv/radixkv/abi"
	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/core/flops"
)

// marconiScript: a {full, mamba} instance (12) under the marconi Mamba
// policy with a large alpha: of a long old state and a short recent one,
// a state eviction frees the short one. Refused configurations first.
func marconiScript() []step {
	mamba := []core.Component{core.Full, core.Mamba}
	ins := func(inst uint32, toks []uint32, sl []int32, state int32) abi.Request {
		q := req(abi.OpInsert, inst)
		q.Insert = core.InsertParams{Tokens: toks, Slots: sl, MambaSlot: state}
		return q
	}
	return []step{
		{name: "create-marconi-bad-alpha", req: create(core.Config{PageSize: 1, Components: mamba, MambaPolicy: "marconi", MambaAlpha: 9})},
		{name: "create-marconi-unknown", req: create(core.Config{PageSize: 1, Components: mamba, MambaPolicy: "lfu"})},
		{name: "create-marconi-no-mamba", req: create(core.Config{PageSize: 1, MambaPolicy: "marconi"})},
		{name: "create-marconi", req: create(core.Config{PageSize: 1, Components: mamba, MambaPolicy: "marconi",
			MambaModel: flops.Model7BHybrid, MambaAlpha: 8})},
		{name: "marconi-insert-long", req: func(seen) abi.Request { return ins(12, seq(1, 64), slots(0, 64), 10) }},
		{name: "marconi-insert-short", req: func(seen) abi.Request { return ins(12, seq(500, 2), slots(100, 2), 11) }},
		{name: "marconi-evict-mamba", req: evict(abi.OpEvict, 12, core.Mamba, 1)},
		{name: "marconi-set-alpha", req: setAlpha(12, 0.5)},
		{name: "marconi-set-alpha-bad", req: setAlpha(12, -1)},
		{name: "marconi-sanity", req: plain(abi.OpSanityCheck, 12)},
		{name: "destroy-marconi", req: plain(abi.OpDestroy, 12)},
	}
}

func setAlpha(inst uint32, alpha float64) func(seen) abi.Request {
	return func(seen) abi.Request { q := req(abi.OpMambaSetAlpha, inst); q.Alpha = alpha; return q }
}
