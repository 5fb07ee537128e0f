package native_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/radixkv/radixkv/core"
	native "github.com/radixkv/radixkv/host/native"
	"github.com/radixkv/radixkv/host/native/pooltest"
)

// Regression tests for the controller defects found by probing it with
// failing pools (issue 17), and a workload on pools that fail every kind
// of call: the controller survives each failure the Pool contract allows
// with its accounting whole.

var canary = native.ControllerConfig{Canary: true, VerifyMatches: true}

func tokens(from, n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(from + i)
	}
	return out
}

// faulty builds a controller whose pools are FaultPools (all off), and
// returns them by (tier, component).
func faulty(t *testing.T, cfg core.Config, host bool, dev, hostSize int) (*native.Controller, *[2][3]*pooltest.FaultPool) {
	var fps [2][3]*pooltest.FaultPool
	var hs *[3]int
	if host {
		hs = &[3]int{hostSize, hostSize, 8}
	}
	c := native.NewTestController(t, "direct", cfg, core.WriteThrough, [3]int{dev, dev, 8}, hs, canary,
		func(comp core.Component, tier native.Tier, p native.Pool) native.Pool {
			fps[tier][comp] = pooltest.NewFaultPool(p, pooltest.Rates{}, uint64(10*int(tier)+int(comp)))
			return fps[tier][comp]
		}, nil)
	return c, &fps
}

// A write-through Finish whose backup fails (host Alloc exhausted, a
// device read or host write error) still frees the ragged tail: the
// backup is simply not made.
func TestController_WriteThroughFailureFreesTail(t *testing.T) {
	for _, fail := range []string{"host alloc", "host write", "device read"} {
		t.Run(fail, func(t *testing.T) {
			c, fps := faulty(t, core.Config{PageSize: 16}, true, 100, 100)
			switch fail {
			case "host alloc":
				fps[native.Host][core.Full].Rates.Alloc = 1
			case "host write":
				// The test transport goes through Read and Write.
				fps[native.Host][core.Full].Rates.Write = 1
			case "device read":
				fps[native.Device][core.Full].Rates.Read = 1
			}
			r, err := c.Arrive(core.Namespace{}, tokens(0, 40))
			require.NoError(t, err)
			require.NoError(t, c.Prefill(r, r.Pending()))
			require.NoError(t, c.Finish(r))
			for _, fp := range fps[native.Host] {
				if fp != nil {
					fp.Off = true
				}
			}
			fps[native.Device][core.Full].Off = true
			require.NoError(t, c.Audit())
			st := c.Stats()
			require.Zero(t, st.Backups)
			require.EqualValues(t, 1, st.BackupsFailed, "the chain's one node")
			require.Equal(t, 100, fps[native.Host][core.Full].Available(), "the host slots went back")
		})
	}
}

// A poison write that fails does not keep the slots from their pool.
func TestController_PoisonFailureStillFrees(t *testing.T) {
	c, fps := faulty(t, core.Config{PageSize: 16}, false, 100, 0)
	r, err := c.Arrive(core.Namespace{}, tokens(0, 40))
	require.NoError(t, err)
	require.NoError(t, c.Prefill(r, r.Pending()))
	fps[native.Device][core.Full].Rates.Write = 1
	require.NoError(t, c.Abort(r))
	fps[native.Device][core.Full].Off = true
	require.NoError(t, c.Audit())
	require.Equal(t, 100, fps[native.Device][core.Full].Available())
	require.EqualValues(t, 40, c.Stats().PoisonFailures)
}

// A Free that fails is kept and retried; Audit counts the slots meanwhile.
func TestController_FailedFreeRetried(t *testing.T) {
	c, fps := faulty(t, core.Config{PageSize: 16}, false, 100, 0)
	dev := fps[native.Device][core.Full]
	r, err := c.Arrive(core.Namespace{}, tokens(0, 40))
	require.NoError(t, err)
	require.NoError(t, c.Prefill(r, r.Pending()))
	dev.Rates.Free = 1
	require.NoError(t, c.Finish(r)) // the tail's Free fails
	dev.Off = true
	require.NoError(t, c.Audit())
	require.Equal(t, 60, dev.Available())
	require.EqualValues(t, 1, c.Stats().FreeRetries)
	dev.Off = false
	dev.Rates.Free = 0
	require.NoError(t, c.Poll())
	require.NoError(t, c.Audit())
	require.Equal(t, 68, dev.Available(), "the tail's 8 slots went back")
}

// A device Read error while an arrival verifies its match is reported as
// the I/O error it is, not as a canary mismatch.
func TestController_VerifyReadErrorIsNotMismatch(t *testing.T) {
	c, fps := faulty(t, core.Config{PageSize: 16}, false, 100, 0)
	r, err := c.Arrive(core.Namespace{}, tokens(0, 40))
	require.NoError(t, err)
	require.NoError(t, c.Prefill(r, r.Pending()))
	require.NoError(t, c.Finish(r))
	fps[native.Device][core.Full].Rates.Read = 1
	_, err = c.Arrive(core.Namespace{}, tokens(0, 40))
	require.ErrorIs(t, err, pooltest.ErrInjected)
	require.NotErrorIs(t, err, native.ErrCanaryMismatch)
	require.Zero(t, c.Stats().CanaryMismatches)
	fps[native.Device][core.Full].Rates.Read = 0
	r, err = c.Arrive(core.Namespace{}, tokens(0, 40))
	require.NoError(t, err, "the cache was fine all along")
	require.Equal(t, 32, r.CachedLen())
	require.NoError(t, c.Abort(r))
	require.NoError(t, c.Audit())
}

// A Prefill whose canary write fails computes nothing, so a Finish after
// it caches only what was written: later arrivals on the prefix verify.
func TestController_FinishAfterFailedPrefill(t *testing.T) {
	c, fps := faulty(t, core.Config{PageSize: 16}, false, 100, 0)
	r, err := c.Arrive(core.Namespace{}, tokens(0, 40))
	require.NoError(t, err)
	require.NoError(t, c.Prefill(r, 16))
	fps[native.Device][core.Full].Rates.Write = 1
	require.ErrorIs(t, c.Prefill(r, r.Pending()), pooltest.ErrInjected)
	require.Equal(t, 16, r.Computed(), "the failed Prefill computed nothing")
	fps[native.Device][core.Full].Rates.Write = 0
	require.NoError(t, c.Audit())
	require.NoError(t, c.Finish(r))
	for k := range 3 {
		r, err := c.Arrive(core.Namespace{}, tokens(0, 40))
		require.NoError(t, err, "every later arrival verifies")
		require.Equal(t, min(16*(k+1), 32), r.CachedLen())
		require.NoError(t, c.Prefill(r, r.Pending()))
		require.NoError(t, c.Finish(r))
	}
	require.NoError(t, c.Audit())
	require.Zero(t, c.Stats().CanaryMismatches)
}

// TestController_FaultyPools: random lifecycles on pools whose Alloc,
// Free and Copy fail 1 in 50 and Read and Write 1 in 5,000 (the probe
// that once broke the accounting 2,276 times), on every component set,
// with and without a host tier, both write policies. Every error a call
// returns must come from an injected fault or an exhausted pool, and
// Audit (faults off) passes after every step.
func TestController_FaultyPools(t *testing.T) {
	steps := 12000 // about 3,000 requests
	if testing.Short() || native.RaceEnabled {
		steps = 600
	}
	rates := pooltest.Rates{Alloc: 0.02, Free: 0.02, Copy: 0.02, Read: 0.0002, Write: 0.0002}
	type tier struct {
		name string
		host *[3]int
		wp   core.WritePolicy
	}
	tiers := []tier{
		{"device", nil, core.WriteThrough},
		{"write-through", &[3]int{40, 30, 6}, core.WriteThrough},
		{"write-back", &[3]int{40, 30, 6}, core.WriteBack},
	}
	for si, set := range native.HybridTestSets() {
		for ti, tr := range tiers {
			t.Run(fmt.Sprintf("%s/%s", set.Name, tr.name), func(t *testing.T) {
				var fps []*pooltest.FaultPool
				seed := uint64(300 + 4*si + ti)
				c := native.NewTestController(t, "direct", set.Cfg, tr.wp, [3]int{64, 48, 9}, tr.host, canary,
					func(comp core.Component, tier native.Tier, p native.Pool) native.Pool {
						fp := pooltest.NewFaultPool(p, rates, seed*16+uint64(len(fps)))
						fps = append(fps, fp)
						return fp
					}, nil)
				off := func(v bool) {
					for _, fp := range fps {
						fp.Off = v
					}
				}
				native.RunTestWorkload(t, c, seed, native.WorkloadOptions{
					Steps:    steps,
					Tolerate: func(err error) bool { return errors.Is(err, pooltest.ErrInjected) },
					Between: func(step int) {
						off(true)
						require.NoError(t, c.Audit(), "step %d", step)
						off(false)
					},
				})
				off(true)
				require.NoError(t, c.Drain())
				require.NoError(t, c.Audit())
				var injected uint64
				for _, fp := range fps {
					n := fp.Counts
					injected += n.Alloc + n.Free + n.Read + n.Write + n.Copy
				}
				require.NotZero(t, injected)
				t.Logf("%d faults injected; stats %+v", injected, c.Stats())
			})
		}
	}
}
