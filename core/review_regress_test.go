package core_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/radixkv/radixkv/core"
)

// Regression tests for the defects an independent review of the core
// found against the reference (issue 10). Transcript review.txt replays
// the same cases through every engine.

// Every ordering of a component set gives the same tree: the same
// actions, the same render, a sane tree after every call.
func TestRegress_ComponentOrderIsImmaterial(t *testing.T) {
	sets := [][]core.Component{
		{core.Full, core.SWA}, {core.Full, core.Mamba}, {core.Full, core.SWA, core.Mamba},
	}
	for _, set := range sets {
		var want []string
		orders := uint64(1)
		for n := range len(set) {
			orders *= uint64(n + 1)
		}
		for k := range orders {
			order := permuted(set, k)
			t.Run(componentOrder(order), func(t *testing.T) {
				got := componentOrderRun(t, order)
				if want == nil {
					want = got
					return
				}
				require.Equal(t, want, got, "order %s differs from %s", componentOrder(order), componentOrder(set))
			})
		}
	}
}

// componentOrderRun inserts, splits by a match, inserts a branch, evicts
// each component and returns what each step printed.
func componentOrderRun(t *testing.T, order []core.Component) []string {
	cfg := core.Config{PageSize: 1, Components: order}
	has := func(c core.Component) bool {
		for _, o := range order {
			if o == c {
				return true
			}
		}
		return false
	}
	if has(core.SWA) {
		cfg.SWAWindow = 2
	}
	tree, err := core.New(cfg)
	require.NoError(t, err)
	var out []string
	step := func(what string, acts []core.Action) {
		t.Helper()
		require.NoError(t, tree.SanityCheck(), "after %s", what)
		out = append(out, what, tree.Render())
		for _, a := range acts {
			out = append(out, a.String())
		}
	}
	mamba := func(s int32) int32 {
		if has(core.Mamba) {
			return s
		}
		return -1
	}
	_, acts, err := tree.Insert(core.InsertParams{Tokens: seqTokens(1, 8), Slots: seqSlots(100, 8), MambaSlot: mamba(7)})
	require.NoError(t, err)
	step("insert", acts)
	m, err := tree.Match(nil, core.Namespace{}, seqTokens(1, 3))
	require.NoError(t, err)
	step("match", m.Actions)
	_, acts, err = tree.Insert(core.InsertParams{Tokens: append(seqTokens(1, 3), 20, 21), Slots: seqSlots(200, 5), MambaSlot: mamba(8)})
	require.NoError(t, err)
	step("branch", acts)
	for _, c := range []core.Component{core.Mamba, core.SWA, core.Full} {
		if has(c) {
			acts, _, err = tree.Evict(c, 3, nil)
			require.NoError(t, err)
			step("evict "+c.String(), acts)
		}
	}
	return out
}
