package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/host/native"
)

// engineNames lists the values --engine accepts.
var engineNames = []string{"wasm", "inprocess", "direct"}

// wasmCacheOff is the --wasm-cache value that turns the on-disk
// compilation cache off.
const wasmCacheOff = "off"

// defaultWasmCache is the compilation cache directory under the user's
// cache directory ($XDG_CACHE_HOME or ~/.cache on Linux), or "" when the
// system names none.
func defaultWasmCache() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "radixkv", "wazero")
}

// wasmRuntime returns the runtime the wasm engine runs in: one whose
// compiled code lives in cacheDir (so the second run skips the compile,
// which dominates the start), or the process-wide in-memory one when the
// cache is off. The caller closes a returned runtime when it is not the
// shared one (close says so).
func wasmRuntime(cacheDir string) (rt *native.WasmRuntime, close bool, err error) {
	if cacheDir == "" || cacheDir == wasmCacheOff {
		rt, err := native.SharedWasmRuntime()
		return rt, false, err
	}
	rt, err = native.NewWasmRuntime(context.Background(), native.WasmRuntimeConfig{CacheDir: cacheDir})
	if err != nil {
		return nil, false, fmt.Errorf("--wasm-cache %s: %w (--wasm-cache=off runs without it)", cacheDir, err)
	}
	return rt, true, nil
}

// newEngine builds the named engine over a tree configured by cfg; the
// wasm engine keeps its compiled code in cacheDir (see wasmRuntime).
func newEngine(name string, cfg core.Config, cacheDir string) (native.Engine, error) {
	switch name {
	case "direct":
		return native.NewDirectEngine(cfg)
	case "wasm":
		rt, owned, err := wasmRuntime(cacheDir)
		if err != nil {
			return nil, err
		}
		e, err := native.NewWasmEngineWith(context.Background(), cfg, native.WasmOptions{Runtime: rt})
		if err != nil {
			if owned {
				_ = rt.Close(context.Background())
			}
			return nil, err
		}
		if owned {
			return &runtimeEngine{Engine: e, rt: rt}, nil
		}
		return e, nil
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

// underlying returns the engine inside the CLI's wrappers (timedEngine,
// runtimeEngine), so optional interfaces such as native.BlocksEngine or
// native.MambaAlphaSetter are found by a type assertion.
func underlying(e native.Engine) native.Engine {
	for {
		switch w := e.(type) {
		case *timedEngine:
			e = w.Engine
		case *runtimeEngine:
			e = w.Engine
		default:
			return e
		}
	}
}

// runtimeEngine is a wasm engine that owns its runtime: Close closes both.
type runtimeEngine struct {
	native.Engine
	rt *native.WasmRuntime
}

func (e *runtimeEngine) Close() error {
	err := e.Engine.Close()
	if cerr := e.rt.Close(context.Background()); err == nil {
		err = cerr
	}
	return err
}
