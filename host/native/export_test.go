package native

import (
	"errors"
	"testing"

	"github.com/radixkv/radixkv/core"
	"github.com/stretchr/testify/require"
)

// Test-only exports for the external tests (package native_test), which
// can import host/native/pooltest: that package imports native, so the
// internal tests cannot.

// RaceEnabled reports a build with the race detector (tests shorten).
const RaceEnabled = raceEnabled

// TestSet is a component set of the controller tests.
type TestSet struct {
	Name string
	Cfg  core.Config
}

// HybridTestSets returns the hybrid component sets the controller tests use.
func HybridTestSets() []TestSet {
	out := make([]TestSet, len(hybridSets))
	for k, s := range hybridSets {
		out[k] = TestSet{s.name, s.cfg}
	}
	return out
}

// EngineNames returns the engine kinds by name.
func EngineNames() []string {
	out := make([]string, len(engineKinds))
	for k, e := range engineKinds {
		out[k] = e.name
	}
	return out
}

// NewTestController builds a controller on engine kind eng for cfg with
// pools of CanaryBytes slots: device pools of dev[comp] slots and, when
// host is not nil, a host tier with host[comp] slots under policy wp.
// wrapPool wraps each pool (nil: none) and wrapPools the set (nil: none).
func NewTestController(t testing.TB, eng string, cfg core.Config, wp core.WritePolicy, dev [3]int, host *[3]int,
	ccfg ControllerConfig, wrapPool func(comp core.Component, tier Tier, p Pool) Pool, wrapPools func(Pools) Pools) *Controller {
	t.Helper()
	var ctor engineCtor
	for _, k := range engineKinds {
		if k.name == eng {
			ctor = k.new
		}
	}
	require.NotNil(t, ctor, "engine %q", eng)
	if host != nil {
		cfg.HostTier, cfg.WritePolicy = true, wp
	}
	e, err := ctor(cfg)
	require.NoError(t, err)
	set := &PoolSet{}
	for comp := range 3 {
		if comp != int(core.Full) && !has(cfg, core.Component(comp)) {
			continue
		}
		for _, tier := range []Tier{Device, Host} {
			size := dev[comp]
			if tier == Host {
				if host == nil {
					continue
				}
				size = host[comp]
			}
			page := 1
			if comp == int(core.Full) && tier == Device {
				page = max(cfg.PageSize, 1) // paged, as the controller likes it
			}
			mp, err := NewPagedMemPool(size, CanaryBytes, page)
			require.NoError(t, err)
			var p Pool = mp
			if wrapPool != nil {
				p = wrapPool(core.Component(comp), tier, p)
			}
			require.NoError(t, set.Set(core.Component(comp), tier, p))
		}
	}
	var pools Pools = set
	if wrapPools != nil {
		pools = wrapPools(set)
	}
	c, err := NewController(e, pools, ccfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// WorkloadOptions tune RunTestWorkload.
type WorkloadOptions struct {
	Steps int
	// Tolerate reports whether a lifecycle error is one the run expects
	// (the request is then aborted); ErrPoolExhausted always is.
	Tolerate func(error) bool
	// Between runs after every step (audits, transport ticks, checks).
	Between func(step int)
}

// WorkloadCounts counts what RunTestWorkload met.
type WorkloadCounts struct {
	Loading        int // arrivals that returned with their load-back in flight
	AbortedLoading int // of those, aborted in the middle of the load-back
}

// RunTestWorkload drives c with random lifecycles of requests that share
// prefixes (arrivals, chunked prefills, decodes, chunk finishes,
// verifies, aborts, finishes), finishes what runs at the end, drains
// the transfers and requires every cached document to read back.
func RunTestWorkload(t *testing.T, c *Controller, seed uint64, o WorkloadOptions) WorkloadCounts {
	t.Helper()
	g := newWorkloadGen(seed)
	rng := g.rng
	ok := func(err error) bool {
		return err == nil || errors.Is(err, ErrPoolExhausted) || errorIsChunkWindow(err) || (o.Tolerate != nil && o.Tolerate(err))
	}
	var running []*Request
	var counts WorkloadCounts
	end := func(k int, r *Request, err error) {
		t.Helper()
		require.True(t, ok(err), "unexpected error: %v", err)
		if err != nil && !r.Done() {
			aerr := c.Abort(r)
			require.True(t, ok(aerr), "abort: %v", aerr)
		}
		if r.Done() {
			running = append(running[:k], running[k+1:]...)
		}
	}
	for step := range o.Steps {
		if len(running) == 0 || (len(running) < 5 && rng.IntN(4) == 0) {
			ns, p := g.prompt()
			r, err := c.Arrive(ns, p)
			require.True(t, ok(err), "step %d: arrive: %v", step, err)
			if err == nil {
				running = append(running, r)
				if r.Loading() {
					counts.Loading++
				}
			}
		} else {
			k := rng.IntN(len(running))
			r := running[k]
			var err error
			op := rng.IntN(12)
			if r.Loading() && op == 8 {
				counts.AbortedLoading++
			}
			if r.Loading() && op != 8 {
				// Its accessors wait for the load-back too: learn them
				// first (an abort rolls the load-back back instead).
				if err = c.Await(r); err != nil {
					end(k, r, err)
					continue
				}
			}
			switch {
			case op < 5:
				if r.Pending() == 0 {
					err = c.Extend(r, g.tokens(1+rng.IntN(4))...)
				} else {
					err = c.Prefill(r, 1+rng.IntN(r.Pending()))
				}
			case op < 7:
				err = c.FinishChunk(r, max(0, r.Computed()-rng.IntN(2)))
				if errorIsChunkWindow(err) {
					err = nil
				}
			case op < 8:
				err = c.Verify(r)
				require.False(t, errors.Is(err, ErrCanaryMismatch), "step %d: %v", step, err)
			case op < 9:
				err = c.Abort(r)
			default:
				if err = c.Prefill(r, r.Pending()); err == nil {
					err = c.Finish(r)
				}
			}
			end(k, r, err)
		}
		if o.Between != nil {
			o.Between(step)
		}
	}
	for len(running) > 0 {
		r := running[0]
		err := c.Await(r)
		if err == nil {
			err = c.Prefill(r, r.Pending())
		}
		if err == nil {
			err = c.Finish(r)
		}
		end(0, r, err)
		if !r.Done() {
			require.True(t, ok(c.Abort(r)))
			running = running[1:]
		}
	}
	require.NoError(t, c.Drain())
	if o.Between != nil {
		o.Between(o.Steps)
	}
	if c.cfg.Canary {
		for _, d := range g.docs {
			for _, ns := range g.nss {
				got, err := c.Match(nil, ns, d)
				require.True(t, ok(err), "%v", err)
				if err == nil {
					err = c.VerifyMatch(ns, d, got)
					require.False(t, errors.Is(err, ErrCanaryMismatch), "%v", err)
				}
			}
		}
	}
	require.Zero(t, c.Stats().CanaryMismatches)
	return counts
}
