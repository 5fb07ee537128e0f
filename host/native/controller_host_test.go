package native

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/radixkv/radixkv/core"
	"github.com/stretchr/testify/require"
)

// The host-tier tests run the controller's lifecycles with device and
// host pools on every component set, both write policies and all three
// engines, auditing after every step: backups (write-through chains and
// write-back evictions), demotions, drops, load-backs and host
// evictions, with the canary's records travelling with the bytes.

var writePolicies = []core.WritePolicy{core.WriteThrough, core.WriteBack}

// tierPools are the pools of a host-tier controller, by tier and
// component (nil where the set lacks the component).
type tierPools struct{ dev, host [3]*MemPool }

// tierSizes are pool capacities per component.
type tierSizes [3]int

// newHostCtl builds a controller with a host tier for cfg (HostTier is
// set here) on a counting engine.
func newHostCtl(t testing.TB, newEngine engineCtor, cfg core.Config, wp core.WritePolicy, dev, host tierSizes, ccfg ControllerConfig) (*Controller, tierPools, *countingEngine) {
	t.Helper()
	cfg.HostTier, cfg.WritePolicy = true, wp
	eng, err := newEngine(cfg)
	require.NoError(t, err)
	ce := &countingEngine{Engine: eng, kinds: map[string]int{}}
	var p tierPools
	set := &PoolSet{}
	for comp := range 3 {
		if comp != int(core.Full) && !has(cfg, core.Component(comp)) {
			continue
		}
		for tier, pools := range map[Tier]*[3]*MemPool{Device: &p.dev, Host: &p.host} {
			size := dev[comp]
			if tier == Host {
				size = host[comp]
			}
			pool, err := NewMemPool(size, CanaryBytes)
			require.NoError(t, err)
			pools[comp] = pool
			require.NoError(t, set.Set(core.Component(comp), tier, pool))
		}
	}
	c, err := NewController(ce, set, ccfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c, p, ce
}

// The counting engine also counts what the host-tier calls return.

func (e *countingEngine) EvictNext() (core.EvictStep, error) {
	st, err := e.Engine.EvictNext()
	e.count(st.Actions)
	return st, err
}

func (e *countingEngine) Demote(node core.NodeID) ([]core.Action, error) {
	acts, err := e.Engine.Demote(node)
	e.count(acts)
	e.kinds["Demote"]++
	return acts, err
}

func (e *countingEngine) DropSubtreeNoHost(node core.NodeID) (bool, []core.Action, error) {
	ok, acts, err := e.Engine.DropSubtreeNoHost(node)
	e.count(acts)
	e.kinds[fmt.Sprintf("DropSubtreeNoHost/%v", ok)]++
	return ok, acts, err
}

func (e *countingEngine) EvictHost(c core.Component, want int, dst []core.Action) ([]core.Action, int, error) {
	n := len(dst)
	acts, freed, err := e.Engine.EvictHost(c, want, dst)
	e.count(acts[n:])
	e.kinds["EvictHost/"+c.String()]++
	return acts, freed, err
}

func (e *countingEngine) CommitLoadBack(anchor core.NodeID, c core.LoadBackCommit) ([]core.Action, error) {
	acts, err := e.Engine.CommitLoadBack(anchor, c)
	e.count(acts)
	if len(c.SWA) > 0 {
		e.kinds["CommitLoadBack/swa"]++
	}
	if c.Mamba >= 0 {
		e.kinds["CommitLoadBack/mamba"]++
	}
	return acts, err
}

// hostIdle checks, with no request running, that no device lock remains
// and every device slot is free or cached, that the tree holds every
// allocated host slot, and audits.
func hostIdle(t *testing.T, c *Controller, p tierPools) {
	t.Helper()
	requireIdle(t, c, hybridPools{full: p.dev[core.Full], swa: p.dev[core.SWA], mamba: p.dev[core.Mamba]})
	for comp, pool := range p.host {
		if pool != nil {
			require.Equal(t, pool.Capacity()-pool.Available(), c.ht.nHeld[comp], "%s host slots allocated = held by the tree", core.Component(comp))
		}
	}
}

// findRecord returns the allocated slot of pool whose record is the
// KV record of position pos of tokens in the default namespace (the
// first one found), or -1.
func findRecord(t *testing.T, pool *MemPool, tokens []uint32, pos int) int32 {
	t.Helper()
	var want, rec [CanaryBytes]byte
	putCanary(&want, canaryChain(canarySeed(core.Namespace{}), tokens[:pos+1], 0))
	for s := range int32(pool.Capacity()) {
		if pool.Read(s, rec[:]) != nil {
			continue // free
		}
		if rec == want {
			return s
		}
	}
	return -1
}

// TestControllerHost_Lifecycle caches a prefix, pushes it off the device
// (demoted to the host copy write-through made, or backed up and demoted
// by a write-back eviction), and loads it back on the next arrival,
// with every component's data, on each set, policy and engine.
func TestControllerHost_Lifecycle(t *testing.T) {
	for _, set := range hybridSets {
		for _, wp := range writePolicies {
			t.Run(set.name+"/"+wp.String(), func(t *testing.T) {
				forEachEngine(t, func(t *testing.T, newEngine engineCtor) {
					c, p, ce := newHostCtl(t, newEngine, set.cfg, wp, tierSizes{40, 64, 32}, tierSizes{128, 128, 32}, canaryOn)
					step := auditor(t, c)
					ns := core.Namespace{CacheSalt: "t"}
					swa, mamba := has(set.cfg, core.SWA), has(set.cfg, core.Mamba)
					a := seq(1, 16)
					// SWA caps a's leaf at the window: the tree caches a as
					// an SWA tombstone [0, 10) and a leaf [10, 16).
					nodes := uint64(1)
					if swa {
						nodes = 2
					}

					run(t, c, ns, a)
					st := c.Stats()
					if wp == core.WriteThrough {
						require.Equal(t, nodes, st.Backups, "a is written through at once")
						require.EqualValues(t, 16, st.BackedUpTokens)
						require.Equal(t, nodes, st.WriteThroughs)
						require.Equal(t, 16, c.ht.nHeld[core.Full])
					} else {
						require.Zero(t, st.Backups, "write-back copies on eviction only")
						require.Zero(t, c.ht.nHeld[core.Full])
					}
					// Two more prompts of 16 overflow the 40-slot device
					// pool: a, the least recent, goes to the host.
					run(t, c, ns, seq(100, 16))
					run(t, c, ns, seq(200, 16))
					st = c.Stats()
					require.NotZero(t, st.EvictedNodes)
					if wp == core.WriteBack {
						require.Equal(t, 16, c.ht.nHeld[core.Full], "a's copy is on the host")
						require.Equal(t, nodes, st.Demoted)
						require.Equal(t, nodes, st.Backups)
						require.Positive(t, ce.kinds["BackupKV"], "the eviction step handed a to the host")
					} else {
						require.Equal(t, 48, c.ht.nHeld[core.Full], "every prompt was written through")
						require.Zero(t, st.Demoted, "write-through demotes inside the walk")
					}
					m, err := c.Match(nil, ns, a)
					require.NoError(t, err)
					require.Empty(t, m, "a is not on the device")

					// The next arrival loads a back.
					r, err := c.Arrive(ns, cat(a, seq(300, 4)))
					step("arrive", err)
					require.Equal(t, 16, r.CachedLen())
					require.Equal(t, 16, r.HostHitLen())
					st = c.Stats()
					require.EqualValues(t, 1, st.LoadBacks)
					require.EqualValues(t, 16, st.HostHitTokens)
					require.EqualValues(t, 16, st.LoadedTokens)
					require.Zero(t, st.MatchedTokens, "no device hit so far")
					require.Positive(t, st.BytesMoved)
					if swa {
						require.Equal(t, 1, ce.kinds["CommitLoadBack/swa"])
						require.Positive(t, ce.kinds["RebuildFullToSWAMapping"])
					}
					if mamba {
						require.Equal(t, 1, ce.kinds["CommitLoadBack/mamba"])
						require.GreaterOrEqual(t, r.MambaSlot(), int32(0))
						require.EqualValues(t, 1, st.MambaForks, "the state loaded back is forked")
					}
					step("verify", c.Verify(r))
					step("prefill", c.Prefill(r, r.Pending()))
					step("finish", c.Finish(r))
					got, err := c.Match(nil, ns, a)
					require.NoError(t, err)
					require.Len(t, got, 16)
					require.NoError(t, c.VerifyMatch(ns, a, got))
					hostIdle(t, c, p)
					require.Zero(t, c.Stats().CanaryMismatches)
				})
			})
		}
	}
}

// TestControllerHost_CanaryCatchesHostCorruption: a host slot whose
// bytes changed, two host slots swapped, and a held host slot that lost
// its record are caught: at the load-back's arrival, or by Audit.
func TestControllerHost_CanaryCatchesHostCorruption(t *testing.T) {
	all := hybridSets[3].cfg
	x := seq(1, 16)
	setup := func(t *testing.T, newEngine engineCtor) (*Controller, tierPools) {
		c, p, _ := newHostCtl(t, newEngine, all, core.WriteThrough, tierSizes{40, 64, 32}, tierSizes{128, 128, 32}, canaryOn)
		run(t, c, core.Namespace{}, x)
		run(t, c, core.Namespace{}, seq(100, 16))
		run(t, c, core.Namespace{}, seq(200, 16))
		m, err := c.Match(nil, core.Namespace{}, x)
		require.NoError(t, err)
		require.Empty(t, m, "x is on the host only")
		return c, p
	}
	forEachEngine(t, func(t *testing.T, newEngine engineCtor) {
		t.Run("full bytes", func(t *testing.T) {
			c, p := setup(t, newEngine)
			s := findRecord(t, p.host[core.Full], x, 5)
			require.GreaterOrEqual(t, s, int32(0))
			require.NoError(t, p.host[core.Full].Write(s, []byte("junk")))
			require.NoError(t, c.Audit(), "the slot still holds a (wrong) record")
			_, err := c.Arrive(core.Namespace{}, x)
			require.ErrorIs(t, err, ErrCanaryMismatch)
			require.Contains(t, err.Error(), "position 5")
			require.Contains(t, err.Error(), "loaded back from the host")
			require.NoError(t, c.Audit(), "a rejected arrival holds nothing")
		})
		t.Run("swapped full slots", func(t *testing.T) {
			c, p := setup(t, newEngine)
			h := p.host[core.Full]
			s1, s2 := findRecord(t, h, x, 3), findRecord(t, h, x, 9)
			var r1, r2 [CanaryBytes]byte
			require.NoError(t, h.Read(s1, r1[:]))
			require.NoError(t, h.Read(s2, r2[:]))
			require.NoError(t, h.Write(s1, r2[:]))
			require.NoError(t, h.Write(s2, r1[:]))
			_, err := c.Arrive(core.Namespace{}, x)
			require.ErrorIs(t, err, ErrCanaryMismatch)
			require.Contains(t, err.Error(), "position 3")
		})
		t.Run("swa bytes", func(t *testing.T) {
			c, p := setup(t, newEngine)
			s := findRecord(t, p.host[core.SWA], x, 14) // inside the last window
			require.GreaterOrEqual(t, s, int32(0))
			require.NoError(t, p.host[core.SWA].Write(s, []byte("junk")))
			_, err := c.Arrive(core.Namespace{}, x)
			require.ErrorIs(t, err, ErrCanaryMismatch)
			require.Contains(t, err.Error(), "position 14 SWA slot")
			require.ErrorIs(t, c.Audit(), ErrCanaryMismatch, "the loaded SWA slot differs from its Full slot")
		})
		t.Run("mamba state", func(t *testing.T) {
			c, p := setup(t, newEngine)
			h := p.host[core.Mamba]
			hash := canaryChain(canarySeed(core.Namespace{}), x, 0)
			var want, rec [CanaryBytes]byte
			putState(&want, hash)
			corrupted := 0
			for s := range int32(h.Capacity()) {
				if h.Read(s, rec[:]) == nil && rec == want {
					require.NoError(t, h.Write(s, []byte("junk")))
					corrupted++
				}
			}
			require.Equal(t, 1, corrupted, "x's state after 16 atoms is on the host")
			_, err := c.Arrive(core.Namespace{}, x)
			require.ErrorIs(t, err, ErrCanaryMismatch)
			require.Contains(t, err.Error(), "mamba state slot")
		})
		t.Run("lost record", func(t *testing.T) {
			c, p := setup(t, newEngine)
			s := findRecord(t, p.host[core.Full], x, 7)
			require.NoError(t, p.host[core.Full].Write(s, make([]byte, CanaryBytes)))
			err := c.Audit()
			require.ErrorIs(t, err, ErrCanaryMismatch)
			require.Contains(t, err.Error(), "holds no record")
		})
	})
}

// TestControllerHost_HostFull: with a host too small for a node, a
// write-back eviction drops the leaf instead of demoting it and a
// write-through chain stops; nothing leaks and later arrivals miss.
func TestControllerHost_HostFull(t *testing.T) {
	for _, set := range hybridSets {
		for _, wp := range writePolicies {
			t.Run(set.name+"/"+wp.String(), func(t *testing.T) {
				forEachEngine(t, func(t *testing.T, newEngine engineCtor) {
					c, p, ce := newHostCtl(t, newEngine, set.cfg, wp, tierSizes{40, 64, 32}, tierSizes{4, 64, 32}, canaryOn)
					ns := core.Namespace{}
					for k := range 4 {
						run(t, c, ns, seq(100*(k+1), 16))
					}
					st := c.Stats()
					require.Positive(t, st.BackupsRefused)
					require.Zero(t, st.Backups)
					require.Zero(t, c.ht.nHeld[core.Full])
					if wp == core.WriteBack {
						// Two prompts left the device, each one node (two
						// with SWA, whose leaves are capped at the window).
						nodes := 2
						if has(set.cfg, core.SWA) {
							nodes = 4
						}
						require.EqualValues(t, nodes, st.Dropped, "each eviction dropped its leaf")
						require.Equal(t, nodes, ce.kinds["DropSubtreeNoHost/true"])
						require.Zero(t, st.Demoted)
					} else {
						require.Zero(t, st.Dropped)
					}
					r, err := c.Arrive(ns, seq(100, 16))
					require.NoError(t, err)
					require.Zero(t, r.CachedLen(), "dropped, not on the host")
					require.NoError(t, c.Abort(r))
					hostIdle(t, c, p)
				})
			})
		}
	}
}

// TestControllerHost_HostEviction: a host pool that holds two prompts
// evicts the oldest host copies to back up newer ones.
func TestControllerHost_HostEviction(t *testing.T) {
	for _, set := range hybridSets {
		for _, wp := range writePolicies {
			t.Run(set.name+"/"+wp.String(), func(t *testing.T) {
				forEachEngine(t, func(t *testing.T, newEngine engineCtor) {
					c, p, ce := newHostCtl(t, newEngine, set.cfg, wp, tierSizes{40, 64, 32}, tierSizes{32, 64, 32}, canaryOn)
					ns := core.Namespace{}
					for k := range 6 {
						run(t, c, ns, seq(100*(k+1), 16))
					}
					st := c.Stats()
					require.Positive(t, st.HostEvictions)
					require.Positive(t, st.HostFreedTokens)
					require.Positive(t, ce.kinds["FreeHostSlots"])
					r, err := c.Arrive(ns, seq(400, 16))
					require.NoError(t, err)
					if wp == core.WriteBack {
						// The newest prompts that left the device replaced
						// the oldest on the host.
						require.Equal(t, 16, r.HostHitLen())
					} else {
						// Write-through keeps host copies of what is on
						// the device; host-only copies went first.
						require.Zero(t, r.CachedLen())
					}
					require.NoError(t, c.Prefill(r, r.Pending()))
					require.NoError(t, c.Finish(r))
					hostIdle(t, c, p)
				})
			})
		}
	}
}

// hostTrace runs a random workload (chunked prefill, decode, aborts,
// duplicates) on a host-tier controller, auditing after every step, and
// returns a transcript of what each step saw.
func hostTrace(t *testing.T, c *Controller, seed uint64, steps int) string {
	g := newWorkloadGen(seed)
	rng := g.rng
	var b strings.Builder
	var running []*Request
	drop := func(k int) { running = append(running[:k], running[k+1:]...) }
	for step := range steps {
		if len(running) == 0 || (len(running) < 4 && rng.IntN(4) == 0) {
			ns, prompt := g.prompt()
			r, err := c.Arrive(ns, prompt)
			if err != nil {
				require.ErrorIs(t, err, ErrPoolExhausted, "step %d", step)
				fmt.Fprintf(&b, "%d arrive exhausted\n", step)
			} else {
				running = append(running, r)
				fmt.Fprintf(&b, "%d arrive %d cached %d from host\n", step, r.CachedLen(), r.HostHitLen())
			}
		} else {
			k := rng.IntN(len(running))
			if churnStep(t, c, g, running[k]) {
				drop(k)
			}
		}
		require.NoError(t, c.Audit(), "step %d", step)
	}
	for _, r := range running {
		// (A bigram request cannot finish with its last token pending.)
		if tolerate(t, c, r, c.Prefill(r, r.Pending())) {
			require.NoError(t, c.Finish(r))
		}
	}
	require.NoError(t, c.Audit())
	requireDocsReadBack(t, c, g)
	fmt.Fprintf(&b, "stats %+v\n", c.Stats())
	render, err := c.Engine().Render()
	require.NoError(t, err)
	b.WriteString(render)
	return b.String()
}

// TestControllerHost_RandomWorkload runs random lifecycles on each
// component set and write policy, with device and host pools small
// enough that both evict, on all three engines, and requires the same
// transcript (arrivals, host hits, counters, final tree) from each.
func TestControllerHost_RandomWorkload(t *testing.T) {
	steps := 400
	if testing.Short() {
		steps = 120
	}
	seedBase := uint64(70)
	if v := os.Getenv("RADIXKV_HOST_SOAK"); v != "" {
		// A soak run: RADIXKV_HOST_SOAK=<seed base>, ten times the steps.
		n, err := strconv.ParseUint(v, 10, 64)
		require.NoError(t, err)
		seedBase, steps = n, 10*steps
	}
	hosts := []struct {
		name string
		size tierSizes
	}{
		{"roomy", tierSizes{96, 64, 12}}, // more than the device
		{"tight", tierSizes{20, 12, 3}},  // refusals, drops, host evictions
	}
	sets := append(hybridSets[:len(hybridSets):len(hybridSets)], []struct {
		name string
		cfg  core.Config
	}{
		{"full+bigram+lfu", core.Config{PageSize: 1, Bigram: true, Policy: "lfu"}},
		{"full+swa+bigram+slru", core.Config{PageSize: 2, Bigram: true, Policy: "slru", Components: []core.Component{core.Full, core.SWA}, SWAWindow: 4}},
	}...)
	for si, set := range sets {
		for wi, wp := range writePolicies {
			for hi, host := range hosts {
				t.Run(set.name+"/"+wp.String()+"/"+host.name, func(t *testing.T) {
					seed := seedBase + uint64(4*si+2*wi+hi)
					var want string
					var kinds map[string]int
					for _, k := range engineKinds {
						t.Run(k.name, func(t *testing.T) {
							c, p, ce := newHostCtl(t, k.new, set.cfg, wp, tierSizes{64, 48, 9}, host.size, canaryOn)
							got := hostTrace(t, c, seed, steps)
							hostIdle(t, c, p)
							st := c.Stats()
							require.Zero(t, st.CanaryMismatches)
							if !testing.Short() {
								// The paths the workload must have taken.
								require.NotZero(t, st.EvictedNodes)
								require.NotZero(t, st.Backups)
								if hi == 0 {
									require.NotZero(t, st.LoadBacks)
									require.NotZero(t, st.HostHitTokens)
								}
								if wp == core.WriteBack {
									require.NotZero(t, st.Demoted)
								} else {
									require.NotZero(t, st.WriteThroughs)
								}
								if hi == 1 {
									require.NotZero(t, st.BackupsRefused)
									require.NotZero(t, st.HostEvictions)
								}
							}
							if want == "" {
								want, kinds = got, ce.kinds
								t.Logf("%+v", st)
								t.Logf("%v", ce.kinds)
								return
							}
							require.Equal(t, want, got, "%s differs from %s", k.name, engineKinds[0].name)
							require.Equal(t, kinds, ce.kinds)
						})
					}
				})
			}
		}
	}
}

// TestControllerHost_Config: a host-tier tree needs a host pool per
// component with the device pool's slot size; host-tier actions fail
// without a host tier.
func TestControllerHost_Config(t *testing.T) {
	cfg := core.Config{PageSize: 2, HostTier: true}
	eng, err := NewDirectEngine(cfg)
	require.NoError(t, err)
	kv, err := NewMemPool(8, CanaryBytes)
	require.NoError(t, err)
	_, err = NewController(eng, NewPoolSet(kv), canaryOn)
	require.ErrorIs(t, err, ErrNoPool)
	require.Contains(t, err.Error(), "full host pool is required")

	set := NewPoolSet(kv)
	require.NoError(t, set.Set(core.Full, Host, kv))
	_, err = NewController(eng, set, canaryOn)
	require.ErrorIs(t, err, ErrInvalidArgument)

	small, err := NewMemPool(8, CanaryBytes-1)
	require.NoError(t, err)
	require.NoError(t, set.Set(core.Full, Host, small))
	_, err = NewController(eng, set, canaryOn)
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.Contains(t, err.Error(), "bytes per slot")

	swa := core.Config{PageSize: 2, Components: []core.Component{core.Full, core.SWA}, SWAWindow: 4, HostTier: true}
	eng2, err := NewDirectEngine(swa)
	require.NoError(t, err)
	set2 := NewPoolSet(kv)
	for _, s := range []struct {
		c core.Component
		t Tier
	}{{core.SWA, Device}, {core.Full, Host}} {
		p, err := NewMemPool(8, CanaryBytes)
		require.NoError(t, err)
		require.NoError(t, set2.Set(s.c, s.t, p))
	}
	_, err = NewController(eng2, set2, canaryOn)
	require.ErrorIs(t, err, ErrNoPool)
	require.Contains(t, err.Error(), "swa host pool is required")

	c, _ := newCtl(t, 8, core.Config{PageSize: 2}, canaryOn)
	require.ErrorIs(t, c.execute([]core.Action{{Kind: core.ActionRebuildFullToSWAMapping}}), ErrHostTier)
}

// TestControllerHost_Hammer runs concurrent workers and audits on a
// host-tier controller: backups, demotions and load-backs happen inside
// the calls, under the controller's mutex, so every audit in between
// adds up.
func TestControllerHost_Hammer(t *testing.T) {
	for _, wp := range writePolicies {
		t.Run(wp.String(), func(t *testing.T) {
			forEachEngine(t, func(t *testing.T, newEngine engineCtor) {
				const workers, requests = 6, 100
				c, p, _ := newHostCtl(t, newEngine, core.Config{PageSize: 2}, wp, tierSizes{256}, tierSizes{512}, canaryOn)
				hammer(t, c, workers, requests, 300, func() { _ = c.HostHeld(core.Full) })
				hostIdle(t, c, p)
				st := c.Stats()
				require.Zero(t, st.CanaryMismatches)
				require.NotZero(t, st.LoadBacks)
				require.EqualValues(t, workers*requests, st.Finished+st.Aborted)
			})
		})
	}
}

// pinnedEngine answers every load-back plan as pinned by another
// load-back (which the controller, finishing its load-backs within each
// call, never causes itself).
type pinnedEngine struct{ Engine }

func (e pinnedEngine) LoadBackPlan(anchor core.NodeID) (core.LoadBackPlan, error) {
	return core.LoadBackPlan{Anchor: anchor, Mamba: -1, Pinned: true}, nil
}

// TestControllerHost_LoadBackSkipped: a pinned plan, or a device that
// cannot make room because running requests lock it, leaves the host hit
// alone; the request recomputes instead and every lock is released.
func TestControllerHost_LoadBackSkipped(t *testing.T) {
	a, b := seq(1, 16), seq(100, 16)
	t.Run("pinned", func(t *testing.T) {
		forEachEngine(t, func(t *testing.T, newEngine engineCtor) {
			pinned := func(cfg core.Config) (Engine, error) {
				e, err := newEngine(cfg)
				return pinnedEngine{e}, err
			}
			c, p, _ := newHostCtl(t, pinned, core.Config{PageSize: 2}, core.WriteBack, tierSizes{24}, tierSizes{64}, canaryOn)
			run(t, c, core.Namespace{}, a)
			run(t, c, core.Namespace{}, b) // a goes to the host
			r, err := c.Arrive(core.Namespace{}, a)
			require.NoError(t, err)
			require.Zero(t, r.CachedLen())
			require.NoError(t, c.Audit())
			require.NoError(t, c.Prefill(r, r.Pending()))
			require.NoError(t, c.Finish(r))
			st := c.Stats()
			require.EqualValues(t, 1, st.LoadBacksSkipped)
			require.Zero(t, st.LoadBacks)
			hostIdle(t, c, p)
		})
	})
	t.Run("no device room", func(t *testing.T) {
		forEachEngine(t, func(t *testing.T, newEngine engineCtor) {
			c, p, _ := newHostCtl(t, newEngine, core.Config{PageSize: 2}, core.WriteBack, tierSizes{24}, tierSizes{64}, canaryOn)
			run(t, c, core.Namespace{}, a)
			run(t, c, core.Namespace{}, b) // a goes to the host
			holder, err := c.Arrive(core.Namespace{}, b)
			require.NoError(t, err)
			require.Equal(t, 16, holder.CachedLen(), "b is locked now")
			r, err := c.Arrive(core.Namespace{}, a)
			require.NoError(t, err)
			require.Zero(t, r.CachedLen(), "8 free slots cannot take a's 16")
			require.EqualValues(t, 1, c.Stats().LoadBacksSkipped)
			require.NoError(t, c.Audit())
			require.ErrorIs(t, c.Prefill(r, r.Pending()), ErrPoolExhausted)
			require.NoError(t, c.Abort(r))
			require.NoError(t, c.Finish(holder))
			r, err = c.Arrive(core.Namespace{}, a)
			require.NoError(t, err)
			require.Equal(t, 16, r.HostHitLen(), "with b unlocked there is room")
			require.NoError(t, c.Abort(r))
			hostIdle(t, c, p)
		})
	})
}
