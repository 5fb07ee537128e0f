package native_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/radixkv/radixkv/core"
	native "github.com/radixkv/radixkv/host/native"
	"github.com/radixkv/radixkv/host/native/pooltest"
)

// transportModes are the misbehaving transports the workloads run on.
var transportModes = []struct {
	name string
	cfg  pooltest.Config
}{
	{"delayed", pooltest.Config{MaxDelay: 4}},
	{"failing", pooltest.Config{MaxDelay: 2, FailRate: 0.25, StartFailRate: 0.05}},
	{"async", pooltest.Config{Async: true}},
}

// TestController_TransferWorkload runs the random workload on every
// engine and component set, with and without the host tier, under both
// write policies, on transports whose batches complete late and out of
// order, fail, or complete on other goroutines. After every step the
// controller audits (every slot accounted, in-flight ones included) and
// the transport reports no use of a slot while a batch is in flight; the
// canary stays clean throughout.
func TestController_TransferWorkload(t *testing.T) {
	steps := 250
	if testing.Short() || native.RaceEnabled {
		steps = 60
	}
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
	loading, aborted := map[string]int{}, map[string]int{}
	reordered := map[string]uint64{}
	defer func() {
		if t.Failed() || steps < 250 {
			return
		}
		// Arrivals returned with their load-back in flight, and some were
		// aborted in the middle of it, on both write policies.
		for _, tr := range tiers[1:] {
			require.NotZero(t, loading[tr.name], tr.name)
			require.NotZero(t, aborted[tr.name], tr.name)
			require.NotZero(t, reordered[tr.name], "%s: batches completed out of order", tr.name)
		}
		t.Logf("loading arrivals %v, aborted while loading %v, completed out of order %v", loading, aborted, reordered)
	}()
	for si, set := range native.HybridTestSets() {
		for ti, tr := range tiers {
			for mi, mode := range transportModes {
				t.Run(fmt.Sprintf("%s/%s/%s", set.Name, tr.name, mode.name), func(t *testing.T) {
					for _, eng := range native.EngineNames() {
						t.Run(eng, func(t *testing.T) {
							seed := uint64(100 + 16*si + 4*ti + mi)
							cfg := mode.cfg
							cfg.Seed = seed
							var x *pooltest.Transport
							c := native.NewTestController(t, eng, set.Cfg, tr.wp, [3]int{64, 48, 9}, tr.host,
								native.ControllerConfig{Canary: true, VerifyMatches: true, AsyncLoadBack: true}, nil,
								func(p native.Pools) native.Pools { x = pooltest.New(p, cfg); return x })
							wc := native.RunTestWorkload(t, c, seed, native.WorkloadOptions{
								Steps: steps,
								// A Mamba fork whose copy failed fails its
								// arrival (cleanly: Audit follows).
								Tolerate: func(err error) bool { return errors.Is(err, native.ErrTransfer) },
								Between: func(step int) {
									require.NoError(t, c.Audit(), "step %d", step)
									require.Empty(t, x.Violations(), "step %d", step)
									x.Tick()
								},
							})
							require.Zero(t, c.InFlight())
							loading[tr.name] += wc.Loading
							aborted[tr.name] += wc.AbortedLoading
							st, xs := c.Stats(), x.Stats()
							if tr.host != nil && steps == 250 {
								require.NotZero(t, st.Backups, "%+v", st)
								require.NotZero(t, xs.Completed)
								if mode.cfg.MaxDelay > 0 || mode.cfg.Async {
									reordered[tr.name] += xs.Reordered
								}
								if tr.wp == core.WriteThrough {
									// (Write-back's backups are demotions, which wait.)
									require.NotZero(t, st.TransfersQueued, "batches stayed in flight across calls")
								}
								if mode.cfg.FailRate > 0 {
									require.NotZero(t, xs.Failed+xs.Refused)
									require.NotZero(t, st.BackupsFailed+st.LoadBacksFailed)
								}
							}
						})
					}
				})
			}
		}
	}
}

// TestController_TransferHammer: concurrent requests on a host-tier
// controller whose batches complete on goroutines of their own, under the
// race detector in CI.
func TestController_TransferHammer(t *testing.T) {
	for _, wp := range []core.WritePolicy{core.WriteThrough, core.WriteBack} {
		t.Run(wp.String(), func(t *testing.T) {
			var x *pooltest.Transport
			c := native.NewTestController(t, "direct", core.Config{PageSize: 2}, wp, [3]int{256, 0, 0}, &[3]int{192, 0, 0},
				native.ControllerConfig{Canary: true, VerifyMatches: true, AsyncLoadBack: true}, nil,
				func(p native.Pools) native.Pools {
					x = pooltest.New(p, pooltest.Config{Seed: 7, Async: true, FailRate: 0.1})
					return x
				})
			const workers = 6
			var wg sync.WaitGroup
			errc := make(chan error, workers)
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errc <- hammerRequests(c, uint64(w), 120)
				}()
			}
			stop := make(chan struct{})
			var pollers sync.WaitGroup
			pollers.Add(1)
			go func() { // an idle scheduler loop: polls and audits
				defer pollers.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					if err := c.Poll(); err != nil {
						errc <- err
						return
					}
					if err := c.Audit(); err != nil {
						errc <- err
						return
					}
				}
			}()
			wg.Wait()
			close(stop)
			pollers.Wait()
			close(errc)
			for err := range errc {
				require.NoError(t, err)
			}
			require.NoError(t, c.Drain())
			require.NoError(t, c.Audit())
			require.Empty(t, x.Violations())
			st := c.Stats()
			require.Zero(t, st.CanaryMismatches)
			require.NotZero(t, st.Backups)
		})
	}
}

// hammerRequests runs n requests over a few shared prefixes.
func hammerRequests(c *native.Controller, seed uint64, n int) error {
	for k := range n {
		doc := uint32((seed + uint64(k)) % 5)
		prompt := make([]uint32, 12+int(seed+uint64(k))%9)
		for i := range prompt {
			prompt[i] = doc*1000 + uint32(i)
			if i > 10 {
				prompt[i] += uint32(k) << 16
			}
		}
		r, err := c.Arrive(core.Namespace{}, prompt)
		if err != nil {
			return err
		}
		if r.Loading() && k%3 == 0 {
			if err := c.Abort(r); err != nil { // in the middle of its load-back
				return err
			}
			continue
		}
		if err := c.Await(r); err != nil {
			return err
		}
		if err := c.Prefill(r, r.Pending()); err != nil {
			if errors.Is(err, native.ErrPoolExhausted) {
				if err := c.Abort(r); err != nil {
					return err
				}
				continue
			}
			return err
		}
		if err := c.Verify(r); err != nil {
			return err
		}
		if err := c.Finish(r); err != nil {
			return err
		}
	}
	return nil
}
