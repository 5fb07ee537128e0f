package native

import (
	"testing"

	"github.com/radixkv/radixkv/core"
	"github.com/stretchr/testify/require"
)

// TestController_ReplaceEngine: a guest trap in the middle of a request's
// life (after some calls of its Prefill, or at once) fails the call with
// ErrEngineFailed; ReplaceEngine then takes every slot back, Audit is
// whole, the requests that were running fail with ErrEngineReplaced, and
// new arrivals cache and hit again, on each component set, write policy
// and engine.
func TestController_ReplaceEngine(t *testing.T) {
	for _, set := range hybridSets {
		for _, wp := range writePolicies {
			t.Run(set.name+"/"+wp.String(), func(t *testing.T) {
				forEachEngine(t, func(t *testing.T, newEngine engineCtor) {
					for _, after := range []int{0, 1, 3} {
						c, p, ce := newHostCtl(t, newEngine, set.cfg, wp, tierSizes{40, 64, 32}, tierSizes{128, 128, 32}, canaryOn)
						step := auditor(t, c)
						ns := core.Namespace{CacheSalt: "t"}
						run(t, c, ns, seq(1, 16))
						run(t, c, ns, seq(100, 20)) // some evictions, backups
						held, err := c.Arrive(ns, seq(1, 24))
						step("arrive", err)
						step("prefill", c.Prefill(held, held.Pending()))
						r, err := c.Arrive(ns, seq(200, 12))
						step("arrive", err)

						require.NoError(t, InjectTrap(ce.Engine, after))
						ferr := c.Finish(held)
						for k := 0; k < 4 && ferr == nil; k++ {
							var x *Request
							if x, ferr = c.Arrive(ns, seq(300+k*50, 10)); ferr == nil {
								ferr = c.Prefill(x, x.Pending())
							}
						}
						require.ErrorIs(t, ferr, ErrEngineFailed)
						require.ErrorIs(t, ferr, ErrGuest)

						cfg := ce.Engine.Config()
						fresh, err := newEngine(cfg)
						require.NoError(t, err)
						require.ErrorIs(t, c.ReplaceEngine(fresh), nil)
						require.NoError(t, c.Audit())
						for comp := range 3 {
							if p.dev[comp] != nil {
								require.Equal(t, p.dev[comp].Capacity(), p.dev[comp].Available(), "%s device pool", core.Component(comp))
								require.Equal(t, p.host[comp].Capacity(), p.host[comp].Available(), "%s host pool", core.Component(comp))
							}
						}
						require.ErrorIs(t, c.Prefill(r, 1), ErrEngineReplaced)
						require.True(t, r.Done())
						require.ErrorIs(t, c.Abort(r), ErrRequestDone)
						require.NoError(t, c.Audit())
						// The cache works again.
						run(t, c, ns, seq(1, 16))
						again, err := c.Arrive(ns, seq(1, 16))
						step("arrive again", err)
						require.Positive(t, again.CachedLen())
						step("finish", c.Finish(again))
						require.EqualValues(t, 1, c.Stats().EngineReplacements)
					}
				})
			})
		}
	}
}

// TestController_ReplaceEngineRefuses: a nil, identical or differently
// configured engine is refused, and nothing changes.
func TestController_ReplaceEngineRefuses(t *testing.T) {
	c, _, ce := newHostCtl(t, NewDirectEngine, core.Config{PageSize: 2}, core.WriteThrough, tierSizes{40}, tierSizes{64}, canaryOn)
	ns := core.Namespace{}
	run(t, c, ns, seq(1, 8))
	require.ErrorIs(t, c.ReplaceEngine(nil), ErrInvalidArgument)
	require.ErrorIs(t, c.ReplaceEngine(ce), ErrInvalidArgument)
	other, err := NewDirectEngine(core.Config{PageSize: 4, HostTier: true})
	require.NoError(t, err)
	require.ErrorIs(t, c.ReplaceEngine(other), ErrInvalidArgument)
	used, err := NewDirectEngine(ce.Engine.Config())
	require.NoError(t, err)
	defer used.Close()
	_, _, err = used.Insert(core.InsertParams{Tokens: seq(1, 4), Slots: []int32{0, 1, 2, 3}})
	require.NoError(t, err)
	require.ErrorIs(t, c.ReplaceEngine(used), ErrInvalidArgument, "a non-empty tree")
	require.NoError(t, c.Audit())
	r, err := c.Arrive(ns, seq(1, 8))
	require.NoError(t, err)
	require.Equal(t, 8, r.CachedLen())
	require.NoError(t, c.Finish(r))
	require.ErrorIs(t, InjectTrap(ce, -1), ErrInvalidArgument)
	require.ErrorIs(t, InjectTrap(ce, 0), ErrInvalidArgument) // a wrapper
}
