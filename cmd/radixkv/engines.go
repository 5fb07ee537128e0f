package main

import (
	"fmt"
	"time"

	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/host/native"
)

// engineNames lists the values --engine accepts.
var engineNames = []string{"wasm", "inprocess", "direct"}

// newEngine builds the named engine over a tree configured by cfg.
func newEngine(name string, cfg core.Config) (native.Engine, error) {
	switch name {
	case "direct":
		return native.NewDirectEngine(cfg)
	case "wasm":
		return native.NewWasmEngine(cfg)
	case "inprocess":
		return native.NewInProcessEngine(cfg)
	}
	return nil, fmt.Errorf("unknown engine %q (known: wasm, inprocess, direct)", name)
}

// timedEngine wraps an engine to time its evictions, which the
// controller makes from inside Arrive, Prefill and Extend: an Evict call,
// or (with a host tier) a step-wise walk from EvictStart to EvictEnd.
type timedEngine struct {
	native.Engine
	evict *latency
	start time.Time
}

func (e *timedEngine) EvictStart(c core.Component, want int) error {
	e.start = time.Now()
	return e.Engine.EvictStart(c, want)
}

func (e *timedEngine) EvictEnd() error {
	err := e.Engine.EvictEnd()
	e.evict.add(time.Since(e.start))
	return err
}

func (e *timedEngine) Evict(c core.Component, want int, dst []core.Action) ([]core.Action, int, error) {
	t0 := time.Now()
	acts, n, err := e.Engine.Evict(c, want, dst)
	e.evict.add(time.Since(t0))
	return acts, n, err
}
