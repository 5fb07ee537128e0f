package native

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/radixkv/radixkv/core"
	"github.com/stretchr/testify/require"
)

// hybridSets are the four supported component sets, with small windows
// and chunks so that short sequences exercise them.
var hybridSets = []struct {
	name string
	cfg  core.Config
}{
	{"full", core.Config{PageSize: 2}},
	{"full+swa", core.Config{PageSize: 2, Components: []core.Component{core.Full, core.SWA}, SWAWindow: 6}},
	{"full+mamba", core.Config{PageSize: 2, Components: []core.Component{core.Full, core.Mamba}, MambaChunkSize: 4}},
	{"full+swa+mamba", core.Config{PageSize: 2, Components: []core.Component{core.Full, core.SWA, core.Mamba},
		SWAWindow: 5, MambaChunkSize: 4, MambaMaxPathStates: 2}},
}

// marconiSet is a Mamba set under the marconi policy, whose FinishChunk
// caches nothing (so the lifecycle test, which counts on chunks, skips it).
var marconiSet = struct {
	name string
	cfg  core.Config
}{"full+mamba/marconi", core.Config{PageSize: 2, Components: []core.Component{core.Full, core.Mamba}, MambaChunkSize: 4,
	MambaPolicy: "marconi", MambaAlpha: 1}}

// hybridPools are the device pools of a hybrid controller (nil where the
// set lacks the component).
type hybridPools struct{ full, swa, mamba *MemPool }

func has(cfg core.Config, comp core.Component) bool {
	for _, c := range cfg.Components {
		if c == comp {
			return true
		}
	}
	return false
}

// countingEngine counts the actions an engine hands out, by kind (and
// component for FreeDeviceSlots), so tests can tell which paths ran.
type countingEngine struct {
	Engine
	kinds map[string]int
}

func (e *countingEngine) count(acts []core.Action) {
	for _, a := range acts {
		k := a.Kind.String()
		if a.Kind == core.ActionFreeDeviceSlots {
			k += "/" + a.Component.String()
		}
		e.kinds[k]++
	}
}

func (e *countingEngine) Match(dst []int32, ns core.Namespace, tokens []uint32) (core.MatchResult, error) {
	m, err := e.Engine.Match(dst, ns, tokens)
	e.count(m.Actions)
	return m, err
}

func (e *countingEngine) BeginInsert(p core.InsertParams) (core.InsertStep, error) {
	s, err := e.Engine.BeginInsert(p)
	e.count(s.Actions)
	return s, err
}

func (e *countingEngine) ResumeInsert() (core.InsertStep, error) {
	s, err := e.Engine.ResumeInsert()
	e.count(s.Actions)
	return s, err
}

func (e *countingEngine) EndInsert() ([]core.Action, error) {
	acts, err := e.Engine.EndInsert()
	e.count(acts)
	return acts, err
}

func (e *countingEngine) Evict(c core.Component, want int, dst []core.Action) ([]core.Action, int, error) {
	n := len(dst)
	acts, freed, err := e.Engine.Evict(c, want, dst)
	e.count(acts[n:])
	return acts, freed, err
}

func (e *countingEngine) UnlockSWA(node core.NodeID, r core.Receipt) ([]core.Action, error) {
	acts, err := e.Engine.UnlockSWA(node, r)
	e.count(acts)
	e.kinds["UnlockSWA"]++
	return acts, err
}

func (e *countingEngine) EvictExcessPathStates(tail core.NodeID) ([]core.Action, error) {
	acts, err := e.Engine.EvictExcessPathStates(tail)
	e.count(acts)
	return acts, err
}

// newHybridCtl builds a controller for cfg with pools of the given sizes
// (swa and mamba are ignored when cfg lacks the component), on a counting
// wrapper around the engine.
func newHybridCtl(t testing.TB, newEngine engineCtor, cfg core.Config, full, swa, mamba int, ccfg ControllerConfig) (*Controller, hybridPools, *countingEngine) {
	t.Helper()
	eng, err := newEngine(cfg)
	require.NoError(t, err)
	ce := &countingEngine{Engine: eng, kinds: map[string]int{}}
	var p hybridPools
	p.full, err = NewMemPool(full, CanaryBytes)
	require.NoError(t, err)
	set := NewPoolSet(p.full)
	if has(cfg, core.SWA) {
		p.swa, err = NewMemPool(swa, CanaryBytes)
		require.NoError(t, err)
		require.NoError(t, set.Set(core.SWA, Device, p.swa))
	}
	if has(cfg, core.Mamba) {
		p.mamba, err = NewMemPool(mamba, CanaryBytes)
		require.NoError(t, err)
		require.NoError(t, set.Set(core.Mamba, Device, p.mamba))
	}
	c, err := NewController(ce, set, ccfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c, p, ce
}

// auditor returns a function that fails the test on err and then audits.
func auditor(t *testing.T, c *Controller) func(what string, err error) {
	return func(what string, err error) {
		t.Helper()
		require.NoError(t, err, what)
		require.NoError(t, c.Audit(), "audit after %s", what)
	}
}

// requireIdle checks that, with no request running, every slot of every
// pool is free or cached unlocked.
func requireIdle(t *testing.T, c *Controller, p hybridPools) {
	t.Helper()
	check := func(comp core.Component, pool *MemPool) {
		if pool == nil {
			return
		}
		ev, err := c.Engine().Evictable(comp)
		require.NoError(t, err)
		pr, err := c.Engine().Protected(comp)
		require.NoError(t, err)
		require.Zero(t, pr, "%s: no locks remain", comp)
		require.Equal(t, pool.Capacity(), pool.Available()+ev, "%s: free + cached = capacity", comp)
	}
	check(core.Full, p.full)
	check(core.SWA, p.swa)
	check(core.Mamba, p.mamba)
	require.NoError(t, c.Audit())
}

// TestController_HybridLifecycle runs the same lifecycles on each
// component set and engine, auditing every pool after every step.
func TestController_HybridLifecycle(t *testing.T) {
	for _, set := range hybridSets {
		t.Run(set.name, func(t *testing.T) {
			forEachEngine(t, func(t *testing.T, newEngine engineCtor) {
				c, p, _ := newHybridCtl(t, newEngine, set.cfg, 256, 256, 32, canaryOn)
				step := auditor(t, c)
				ns := core.Namespace{CacheSalt: "t"}
				swa, mamba := has(set.cfg, core.SWA), has(set.cfg, core.Mamba)
				sys := seq(1, 16)

				// A miss computes everything and caches it.
				a, err := c.Arrive(ns, sys)
				step("arrive a", err)
				require.Zero(t, a.CachedLen())
				if mamba {
					require.GreaterOrEqual(t, a.MambaSlot(), int32(0), "a fresh state")
				} else {
					require.Equal(t, int32(-1), a.MambaSlot())
				}
				step("prefill a", c.Prefill(a, a.Pending()))
				step("verify a", c.Verify(a))
				step("finish a", c.Finish(a))
				require.Equal(t, int32(-1), a.MambaSlot())

				// A hit on all 16: SWA keeps the window, Mamba has a
				// state at 16 to fork.
				b, err := c.Arrive(ns, cat(sys, seq(200, 5)))
				step("arrive b", err)
				require.Equal(t, 16, b.CachedLen())
				if mamba {
					require.EqualValues(t, 1, c.Stats().MambaForks)
				}
				step("prefill b", c.Prefill(b, b.Pending()))
				for k := range 10 {
					step(fmt.Sprintf("extend b %d", k), c.Extend(b, uint32(300+k)))
					step("verify b", c.Verify(b))
				}
				if swa {
					require.Positive(t, b.SWAEvictedLen(), "decode slid the window")
					require.True(t, b.SWAReleased(), "b moved a window past its cached prefix")
					require.NotZero(t, c.Stats().SWAWindowFreed)
					require.EqualValues(t, 1, c.Stats().SWAEarlyReleases)
				} else {
					require.Zero(t, b.SWAEvictedLen())
				}
				step("finish b", c.Finish(b))

				// Chunked prefill: two chunks, a decode, then finish.
				r, err := c.Arrive(ns, seq(500, 24))
				step("arrive r", err)
				step("prefill r", c.Prefill(r, 9))
				step("chunk r", c.FinishChunk(r, 9))
				require.Equal(t, 8, r.ProtectedLen())
				step("verify r", c.Verify(r))
				o, err := c.Arrive(ns, seq(500, 24)) // sees the first chunk
				step("arrive o", err)
				require.Equal(t, 8, o.CachedLen())
				step("abort o", c.Abort(o))
				step("prefill r", c.Prefill(r, r.Pending()))
				step("chunk r", c.FinishChunk(r, r.Computed()))
				require.Equal(t, 24, r.ProtectedLen())
				step("extend r", c.Extend(r, 7, 8, 9))
				step("verify r", c.Verify(r))
				step("finish r", c.Finish(r))
				require.EqualValues(t, 2, c.Stats().ChunkFinishes)

				// Two requests compute the same prompt: the second's
				// insert frees its duplicates (and its state).
				x, err := c.Arrive(ns, seq(700, 12))
				step("arrive x", err)
				y, err := c.Arrive(ns, seq(700, 12))
				step("arrive y", err)
				step("prefill x", c.Prefill(x, 12))
				step("prefill y", c.Prefill(y, 12))
				step("finish x", c.Finish(x))
				step("finish y", c.Finish(y))
				if mamba {
					require.GreaterOrEqual(t, c.Stats().MambaDonated, uint64(4))
				}

				// An aborted request gives back all it owns.
				z, err := c.Arrive(ns, cat(sys, seq(900, 7)))
				step("arrive z", err)
				step("prefill z", c.Prefill(z, z.Pending()))
				step("extend z", c.Extend(z, seq(950, 8)...))
				step("abort z", c.Abort(z))

				requireIdle(t, c, p)
				require.Zero(t, c.Stats().CanaryMismatches)
			})
		})
	}
}

var swaOnly = core.Config{PageSize: 2, Components: []core.Component{core.Full, core.SWA}, SWAWindow: 6}

// decodeLong caches x after decoding 10 tokens: the window slides, so
// the tree keeps x[:18] as an SWA tombstone and SWA data after it (page 2,
// window 6: the last slide before the final token is at 24-6).
func decodeLong(t *testing.T, c *Controller, x []uint32) {
	t.Helper()
	step := auditor(t, c)
	a, err := c.Arrive(core.Namespace{}, x)
	step("arrive", err)
	step("prefill", c.Prefill(a, a.Pending()))
	for k := range 10 {
		step("extend", c.Extend(a, uint32(1000+k)))
	}
	require.Equal(t, 18, a.SWAEvictedLen())
	step("finish", c.Finish(a))
}

// TestController_SWARecover covers the insert paths that give an SWA
// tombstone the request's SWA slots: an unlocked node adopts the incoming
// Full slots (its own are freed Full-only, then SWARebuild); a node whose
// Full slots another request locks keeps them and takes the incoming SWA
// slots (RecoverSWAWithLockedFull). Either way a later match gets SWA
// data that reads back as its own prefix.
func TestController_SWARecover(t *testing.T) {
	for _, locked := range []bool{false, true} {
		t.Run(fmt.Sprintf("locked=%v", locked), func(t *testing.T) {
			forEachEngine(t, func(t *testing.T, newEngine engineCtor) {
				c, p, ce := newHybridCtl(t, newEngine, swaOnly, 128, 128, 0, canaryOn)
				step := auditor(t, c)
				x := seq(1, 16)
				decodeLong(t, c, x)
				m, err := c.Match(nil, core.Namespace{}, x)
				require.NoError(t, err)
				require.Empty(t, m, "x's window was released: a tombstone is no hit")

				var holder *Request
				if locked {
					// The whole decoded sequence still hits (its last
					// window has SWA data) and locks the tombstone's Full.
					holder, err = c.Arrive(core.Namespace{}, cat(x, seq(1000, 10)))
					step("arrive holder", err)
					require.Equal(t, 26, holder.CachedLen())
				}
				d, err := c.Arrive(core.Namespace{}, cat(x[:12], seq(50, 6)))
				step("arrive d", err)
				require.Zero(t, d.CachedLen())
				step("prefill d", c.Prefill(d, d.Pending()))
				step("finish d", c.Finish(d))
				if locked {
					require.Equal(t, 1, ce.kinds["RecoverSWAWithLockedFull"])
					step("finish holder", c.Finish(holder))
				} else {
					require.Zero(t, ce.kinds["RecoverSWAWithLockedFull"])
					require.Positive(t, ce.kinds["FreeDeviceKVFullOnly"])
				}
				require.Positive(t, ce.kinds["SWARebuild"])

				got, err := c.Match(nil, core.Namespace{}, x[:12])
				require.NoError(t, err)
				require.Len(t, got, 12, "the tombstone has SWA data again")
				require.NoError(t, c.VerifyMatch(core.Namespace{}, x[:12], got))
				requireIdle(t, c, p)
			})
		})
	}
}

// TestController_SWADuplicatesFullOnly: a request that decoded past its
// window inserts positions the tree already holds; those it dropped the
// SWA side of are freed Full-only, the rest with their SWA slots.
func TestController_SWADuplicatesFullOnly(t *testing.T) {
	forEachEngine(t, func(t *testing.T, newEngine engineCtor) {
		c, p, ce := newHybridCtl(t, newEngine, swaOnly, 128, 128, 0, canaryOn)
		step := auditor(t, c)
		x := seq(1, 16)
		b, err := c.Arrive(core.Namespace{}, x)
		step("arrive b", err)
		step("prefill b", c.Prefill(b, b.Pending()))
		for k := range 4 {
			step("extend b", c.Extend(b, uint32(1000+k)))
		}
		require.Equal(t, 12, b.SWAEvictedLen())
		run(t, c, core.Namespace{}, x) // caches x with all its SWA data
		before := p.swa.Available()
		step("finish b", c.Finish(b))
		// x is cached as [0, 10) and [10, 16) (the leaf was capped at the
		// window): Full-only frees of [0, 10) and [10, 12), then [12, 16)
		// with their SWA slots.
		require.Equal(t, 2, ce.kinds["FreeDeviceKVFullOnly"])
		require.Equal(t, 1, ce.kinds["FreeDeviceKV"])
		// b held SWA for [12, 20): [12, 16) duplicates went back, [16, 20)
		// became the tree's.
		require.Equal(t, before+4, p.swa.Available())
		requireIdle(t, c, p)
	})
}

// TestController_MambaPathCap: inserts deepen one path; the per-path cap
// (1 here) drops the shallower unlocked states after each insert.
func TestController_MambaPathCap(t *testing.T) {
	cfg := core.Config{PageSize: 2, Components: []core.Component{core.Full, core.Mamba}, MambaMaxPathStates: 1}
	forEachEngine(t, func(t *testing.T, newEngine engineCtor) {
		c, p, ce := newHybridCtl(t, newEngine, cfg, 128, 0, 16, canaryOn)
		step := auditor(t, c)
		a := seq(1, 8)
		b := cat(a, seq(100, 8))
		run(t, c, core.Namespace{}, a)
		run(t, c, core.Namespace{}, b) // its lock pins the state at 8
		require.Zero(t, c.Stats().MambaEvicted)
		r, err := c.Arrive(core.Namespace{}, cat(b, seq(200, 8)))
		step("arrive", err)
		require.Equal(t, 16, r.CachedLen())
		step("prefill", c.Prefill(r, r.Pending()))
		step("finish", c.Finish(r))
		require.Positive(t, ce.kinds["MambaEvictExcessPathStates"])
		require.EqualValues(t, 1, c.Stats().MambaEvicted, "the state at 8 goes; 16 was locked")
		m, err := c.Match(nil, core.Namespace{}, a)
		require.NoError(t, err)
		require.Empty(t, m, "no state at 8 any more")
		requireIdle(t, c, p)
	})
}

// TestController_AuxPoolsEvict: SWA and Mamba pools smaller than the Full
// pool make the controller evict from them.
func TestController_AuxPoolsEvict(t *testing.T) {
	t.Run("swa", func(t *testing.T) {
		forEachEngine(t, func(t *testing.T, newEngine engineCtor) {
			c, p, ce := newHybridCtl(t, newEngine, swaOnly, 64, 16, 0, canaryOn)
			for k := range 5 {
				run(t, c, core.Namespace{}, seq(100*(k+1), 8))
			}
			require.Positive(t, ce.kinds["FreeDeviceSlots/swa"])
			require.NotZero(t, c.Stats().SWAEvictedSlots)
			requireIdle(t, c, p)
		})
	})
	t.Run("mamba", func(t *testing.T) {
		cfg := core.Config{PageSize: 2, Components: []core.Component{core.Full, core.Mamba}}
		forEachEngine(t, func(t *testing.T, newEngine engineCtor) {
			c, p, ce := newHybridCtl(t, newEngine, cfg, 64, 0, 3, canaryOn)
			for k := range 5 {
				run(t, c, core.Namespace{}, seq(100*(k+1), 8))
			}
			require.Positive(t, ce.kinds["FreeDeviceSlots/mamba"])
			require.NotZero(t, c.Stats().MambaEvicted)
			require.NotZero(t, c.Stats().EvictedNodes, "a state on a leaf goes with the leaf")
			requireIdle(t, c, p)
		})
	})
	t.Run("exhausted", func(t *testing.T) {
		cfg := core.Config{PageSize: 2, Components: []core.Component{core.Full, core.SWA, core.Mamba}, SWAWindow: 4}
		c, _, _ := newHybridCtl(t, NewDirectEngine, cfg, 64, 8, 1, canaryOn)
		r, err := c.Arrive(core.Namespace{}, seq(1, 12))
		require.NoError(t, err)
		err = c.Prefill(r, 12)
		require.ErrorIs(t, err, ErrPoolExhausted)
		require.Contains(t, err.Error(), "12 SWA slots needed")
		_, err = c.Arrive(core.Namespace{}, seq(1, 4))
		require.ErrorIs(t, err, ErrPoolExhausted, "r owns the only state slot")
		require.Contains(t, err.Error(), "Mamba state slots needed")
		require.NoError(t, c.Prefill(r, 8))
		require.NoError(t, c.Finish(r))
		require.NoError(t, c.Audit())
	})
}

// TestController_HybridCanary: wrong SWA and Mamba bytes, and a wrong
// mapping, are caught.
func TestController_HybridCanary(t *testing.T) {
	cfg := hybridSets[3].cfg
	x := seq(1, 16)
	setup := func(t *testing.T) (*Controller, hybridPools, core.MatchResult) {
		c, p, _ := newHybridCtl(t, NewDirectEngine, cfg, 64, 64, 8, canaryOn)
		run(t, c, core.Namespace{}, x)
		m, err := c.Engine().Match(nil, core.Namespace{}, x)
		require.NoError(t, err)
		require.Equal(t, 16, m.DeviceLen)
		require.GreaterOrEqual(t, m.MambaSlot, int32(0))
		return c, p, m
	}
	t.Run("swa bytes", func(t *testing.T) {
		c, p, m := setup(t)
		require.NoError(t, p.swa.Write(c.hy.swaOf[m.Indices[14]], []byte("junk")))
		require.ErrorIs(t, c.Audit(), ErrCanaryMismatch)
		_, err := c.Arrive(core.Namespace{}, x)
		require.ErrorIs(t, err, ErrCanaryMismatch)
		require.Contains(t, err.Error(), "position 14 SWA slot")
	})
	t.Run("swapped mapping", func(t *testing.T) {
		c, _, m := setup(t)
		f1, f2 := m.Indices[13], m.Indices[14]
		c.hy.swaOf[f1], c.hy.swaOf[f2] = c.hy.swaOf[f2], c.hy.swaOf[f1]
		require.ErrorIs(t, c.Audit(), ErrCanaryMismatch)
	})
	t.Run("lost mapping", func(t *testing.T) {
		c, _, m := setup(t)
		c.hy.swaOf[m.Indices[15]] = -1
		require.ErrorIs(t, c.Audit(), ErrSWAMapping)
	})
	t.Run("mamba state", func(t *testing.T) {
		c, p, m := setup(t)
		require.NoError(t, p.mamba.Write(m.MambaSlot, []byte("junk")))
		_, err := c.Arrive(core.Namespace{}, x)
		require.ErrorIs(t, err, ErrCanaryMismatch)
		require.Contains(t, err.Error(), "mamba state slot")
	})
	t.Run("running state", func(t *testing.T) {
		c, p, _ := setup(t)
		r, err := c.Arrive(core.Namespace{}, cat(x, seq(50, 4)))
		require.NoError(t, err)
		require.NoError(t, c.Verify(r))
		require.NoError(t, p.mamba.Write(r.MambaSlot(), []byte("junk")))
		require.NoError(t, c.Prefill(r, r.Pending()), "the state advances from what it holds")
		require.ErrorIs(t, c.Verify(r), ErrCanaryMismatch, "and stays wrong")
		require.NoError(t, c.Finish(r))
		_, err = c.Arrive(core.Namespace{}, cat(x, seq(50, 4)))
		require.ErrorIs(t, err, ErrCanaryMismatch, "the donated state is caught when forked")
	})
}

// TestController_HybridRandomWorkload runs random lifecycles (chunked
// prefill, decode, aborts, duplicates, evictions in every pool) on each
// component set and engine and audits after every step.
func TestController_HybridRandomWorkload(t *testing.T) {
	steps := 500
	if testing.Short() {
		steps = 150
	}
	for si, set := range append(hybridSets[:len(hybridSets):len(hybridSets)], marconiSet) {
		t.Run(set.name, func(t *testing.T) {
			forEachEngine(t, func(t *testing.T, newEngine engineCtor) {
				c, p, ce := newHybridCtl(t, newEngine, set.cfg, 96, 64, 9, canaryOn)
				g := newWorkloadGen(uint64(40 + si))
				rng := g.rng
				var running []*Request
				drop := func(k int) { running = append(running[:k], running[k+1:]...) }
				for step := range steps {
					if len(running) == 0 || (len(running) < 5 && rng.IntN(4) == 0) {
						ns, prompt := g.prompt()
						r, err := c.Arrive(ns, prompt)
						if err != nil {
							require.ErrorIs(t, err, ErrPoolExhausted)
						} else {
							running = append(running, r)
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
					require.NoError(t, c.Finish(r))
				}
				requireIdle(t, c, p)
				requireDocsReadBack(t, c, g)
				st := c.Stats()
				require.Zero(t, st.CanaryMismatches)
				require.NotZero(t, st.EvictedNodes)
				if has(set.cfg, core.SWA) {
					require.NotZero(t, st.SWAWindowFreed)
					require.NotZero(t, st.SWAEvictedSlots)
				}
				if has(set.cfg, core.Mamba) {
					require.NotZero(t, st.MambaForks)
					require.NotZero(t, st.MambaEvicted)
				}
				t.Logf("%v", ce.kinds)
			})
		})
	}
}

// errorIsChunkWindow reports FinishChunk's refusal of a chunk that ends
// inside the window the request already released.
func errorIsChunkWindow(err error) bool {
	return err != nil && errors.Is(err, ErrInvalidArgument) && strings.Contains(err.Error(), "a chunk must end at least a window")
}

// TestController_BranchCheckpoints: a request whose match stopped at an
// SWA tombstone (or at a node without a Mamba state) caches that prefix
// with its own SWA slots (state) before it slides past it (finishes), so
// the next request sharing the prefix hits.
func TestController_BranchCheckpoints(t *testing.T) {
	t.Run("swa", func(t *testing.T) {
		forEachEngine(t, func(t *testing.T, newEngine engineCtor) {
			c, p, _ := newHybridCtl(t, newEngine, swaOnly, 128, 128, 0, canaryOn)
			step := auditor(t, c)
			x := seq(1, 16)
			decodeLong(t, c, x) // x[:18] is a tombstone now
			r, err := c.Arrive(core.Namespace{}, cat(x, seq(60, 10)))
			step("arrive", err)
			require.Zero(t, r.CachedLen())
			require.Equal(t, 16, r.swaBranch)
			step("prefill", c.Prefill(r, r.Pending()))
			require.Zero(t, r.ProtectedLen(), "prefill keeps the SWA slots: no need to cache yet")
			step("extend", c.Extend(r, 99))
			require.Equal(t, 16, r.ProtectedLen(), "the branch prefix was cached before the slide")
			require.EqualValues(t, 1, c.Stats().ChunkFinishes)
			step("verify", c.Verify(r))
			step("finish", c.Finish(r))
			o, err := c.Arrive(core.Namespace{}, cat(x, seq(70, 4)))
			step("arrive o", err)
			require.Equal(t, 16, o.CachedLen())
			step("abort o", c.Abort(o))
			requireIdle(t, c, p)
		})
	})
	t.Run("mamba", func(t *testing.T) {
		cfg := core.Config{PageSize: 2, Components: []core.Component{core.Full, core.Mamba}, MambaChunkSize: 4}
		forEachEngine(t, func(t *testing.T, newEngine engineCtor) {
			c, p, _ := newHybridCtl(t, newEngine, cfg, 128, 0, 16, canaryOn)
			step := auditor(t, c)
			run(t, c, core.Namespace{}, seq(1, 16)) // a state at 16 only
			r, err := c.Arrive(core.Namespace{}, cat(seq(1, 8), seq(100, 8)))
			step("arrive", err)
			require.Zero(t, r.CachedLen(), "no state at 8")
			require.Equal(t, 8, r.mambaBranch)
			step("prefill", c.Prefill(r, r.Pending()))
			step("finish", c.Finish(r))
			require.EqualValues(t, 1, c.Stats().ChunkFinishes)
			o, err := c.Arrive(core.Namespace{}, cat(seq(1, 8), seq(200, 8)))
			step("arrive o", err)
			require.Equal(t, 8, o.CachedLen(), "the branch point has a state now")
			step("abort o", c.Abort(o))
			requireIdle(t, c, p)
		})
	})
}

// TestController_MarconiAdmission: under the marconi Mamba policy a
// chunk end caches nothing; the branch point an arrival's match found and
// the end of the request get states, and a later request resumes from the
// branch point. The same on every engine (the policy crosses the ABI).
func TestController_MarconiAdmission(t *testing.T) {
	cfg := core.Config{PageSize: 2, Components: []core.Component{core.Full, core.Mamba}, MambaPolicy: "marconi", MambaAlpha: 2}
	forEachEngine(t, func(t *testing.T, newEngine engineCtor) {
		c, p, _ := newHybridCtl(t, newEngine, cfg, 128, 0, 8, canaryOn)
		require.Equal(t, "marconi", c.Engine().Config().MambaPolicy)
		step := auditor(t, c)
		a := seq(1, 16)
		r, err := c.Arrive(core.Namespace{}, a)
		step("arrive", err)
		step("prefill", c.Prefill(r, 8))
		step("chunk", c.FinishChunk(r, 8))
		require.Zero(t, r.CachedLen(), "no state checkpoint at the chunk end")
		require.EqualValues(t, 1, c.Stats().MambaChunksSkipped)
		step("prefill", c.Prefill(r, r.Pending()))
		step("finish", c.Finish(r))
		// b shares a's first 8 tokens: its match ends inside a's run, a
		// branch point, which Finish checkpoints before caching b.
		b := cat(seq(1, 8), seq(100, 8))
		r = run(t, c, core.Namespace{}, b)
		require.Zero(t, r.CachedLen())
		m, err := c.Match(nil, core.Namespace{}, cat(seq(1, 8), seq(200, 8)))
		require.NoError(t, err)
		require.Len(t, m, 8, "the branch point's state serves a third branch")
		require.EqualValues(t, 3, c.Stats().MambaDonated)
		requireIdle(t, c, p)
	})
}
