package core_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/radixkv/radixkv/core"
)

// Regression tests for core bugs found by the hybrid model test and the
// hybrid fuzz target, minimised. Each states the rule it checks.

// seqTokens returns n tokens first, first+1, ...
func seqTokens(first uint32, n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = first + uint32(i)
	}
	return out
}

// seqSlots returns n slots first, first+1, ...
func seqSlots(first int32, n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = first + int32(i)
	}
	return out
}

// An SWA device value is the node's Full slice itself. Reset must recycle
// that buffer once: recycled twice, two later nodes get the same backing
// array and one insert overwrites the other's slots.
func TestRegress_ResetRecyclesSWABufferOnce(t *testing.T) {
	tree, err := core.New(core.Config{PageSize: 1, Components: []core.Component{core.Full, core.SWA}, SWAWindow: 128})
	require.NoError(t, err)
	_, _, err = tree.Insert(core.InsertParams{Tokens: seqTokens(1, 100), Slots: seqSlots(0, 100)})
	require.NoError(t, err)
	tree.Reset()

	resA, _, err := tree.Insert(core.InsertParams{Tokens: seqTokens(1000, 100), Slots: seqSlots(1000, 100)})
	require.NoError(t, err)
	_, _, err = tree.Insert(core.InsertParams{Tokens: seqTokens(2000, 100), Slots: seqSlots(2000, 100)})
	require.NoError(t, err)
	require.NoError(t, tree.SanityCheck())
	info, err := tree.Inspect(resA.LastDevice)
	require.NoError(t, err)
	require.Equal(t, seqSlots(1000, 100), info.Device[core.Full], "the first sequence's slots were overwritten by the second insert")
}

// permuted returns the k-th ordering (k mod len(comps)!) of comps, so that
// the randomised tests list a tree's components in every order: the tree
// must run them Full, SWA, Mamba whatever the configuration says.
func permuted(comps []core.Component, k uint64) []core.Component {
	rest := append([]core.Component(nil), comps...)
	out := make([]core.Component, 0, len(rest))
	for len(rest) > 0 {
		j := int(k % uint64(len(rest)))
		k /= uint64(len(rest))
		out = append(out, rest[j])
		rest = append(rest[:j], rest[j+1:]...)
	}
	return out
}

func TestPermuted(t *testing.T) {
	comps := []core.Component{core.Full, core.SWA, core.Mamba}
	seen := map[[3]core.Component]bool{}
	for k := range uint64(6) {
		p := permuted(comps, k)
		require.ElementsMatch(t, comps, p)
		seen[[3]core.Component(p)] = true
	}
	require.Len(t, seen, 6, "six draws give the six orders")
}

// componentOrder names an ordering for subtest names, e.g. "swa,full".
func componentOrder(comps []core.Component) string {
	s := ""
	for k, c := range comps {
		if k > 0 {
			s += ","
		}
		s += c.String()
	}
	return s
}
