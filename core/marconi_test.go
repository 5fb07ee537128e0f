package core_test

import (
	"math"
	"testing"

	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/core/flops"
	"github.com/stretchr/testify/require"
)

// marconiTree is a page-1 {full, mamba} tree under the marconi policy.
type marconiTree struct {
	t    *testing.T
	tree *core.Tree
	next int32 // next fresh Full slot
}

func newMarconiTree(t *testing.T, alpha float64) *marconiTree {
	tree, err := core.New(core.Config{PageSize: 1, Components: []core.Component{core.Full, core.Mamba},
		MambaPolicy: "marconi", MambaAlpha: alpha})
	require.NoError(t, err)
	return &marconiTree{t: t, tree: tree}
}

// put caches toks with state slot state, reusing the slots of the cached
// prefix (so the insert frees nothing).
func (m *marconiTree) put(toks []uint32, state int32) {
	res, err := m.tree.Match(nil, core.Namespace{}, toks)
	require.NoError(m.t, err)
	slots := append([]int32(nil), res.Indices[:res.DeviceLen]...)
	for len(slots) < len(toks) {
		slots = append(slots, m.next)
		m.next++
	}
	// A match that stops early (no state at the end of the cached run)
	// leaves slots the insert frees as duplicates; that is fine here.
	_, _, err = m.tree.Insert(core.InsertParams{Tokens: toks, Slots: slots, PrevPrefixLen: res.DeviceLen, MambaSlot: state})
	require.NoError(m.t, err)
}

// evictOne evicts one state and returns its slot.
func (m *marconiTree) evictOne() int32 {
	acts, freed, err := m.tree.Evict(core.Mamba, 1, nil)
	require.NoError(m.t, err)
	require.Equal(m.t, 1, freed)
	require.NoError(m.t, m.tree.SanityCheck())
	for _, a := range acts {
		if a.Kind == core.ActionFreeDeviceSlots && a.Component == core.Mamba {
			return a.Slots[0]
		}
	}
	m.t.Fatalf("no state freed: %v", acts)
	return -1
}

// With alpha 0 marconi is recency only; a large alpha keeps the state that
// saves more FLOPs per byte even when it is older.
func TestMarconi_RecencyVersusFLOPs(t *testing.T) {
	for _, c := range []struct {
		alpha float64
		want  int32
	}{{0, 10}, {8, 11}} {
		m := newMarconiTree(t, c.alpha)
		m.put(seq(1, 64), 10)  // long, older
		m.put(seq(500, 2), 11) // short, recent
		require.Equal(t, c.want, m.evictOne(), "alpha %v", c.alpha)
	}
}

// FLOPs saved are counted from the nearest state-bearing ancestor: a
// state two tokens past another saves little, though it is the deepest.
func TestMarconi_SavedOverAncestor(t *testing.T) {
	m := newMarconiTree(t, 8)
	m.put(seq(500, 4), 20)                      // Z: a separate prefix of 4, oldest
	m.put(seq(1, 4), 21)                        // P: 4 tokens
	m.put(append(seq(1, 4), seq(90, 2)...), 22) // C: P + 2
	require.Equal(t, int32(22), m.evictOne())
	// Recency alone takes the oldest.
	require.NoError(t, m.tree.SetMambaAlpha(0))
	require.Equal(t, int32(20), m.evictOne())
	require.Equal(t, 0.0, m.tree.MambaAlpha())
}

// A branch point (two children) keeps its state while another candidate
// is left; once a branch is gone it is an ordinary candidate.
func TestMarconi_BranchPointsLast(t *testing.T) {
	m := newMarconiTree(t, 0)
	m.put(seq(1, 4), 30) // the branch point, oldest
	m.put(append(seq(1, 4), 7, 8), 31)
	m.put(append(seq(1, 4), 9, 10), 32)
	require.Equal(t, int32(31), m.evictOne())
	require.Equal(t, int32(30), m.evictOne())
	require.Equal(t, int32(32), m.evictOne())
	_, freed, err := m.tree.Evict(core.Mamba, 1, nil)
	require.NoError(t, err)
	require.Zero(t, freed)
}

// Locked states are never candidates.
func TestMarconi_LockedStaysCached(t *testing.T) {
	m := newMarconiTree(t, 0)
	m.put(seq(1, 4), 40)
	m.put(seq(100, 4), 41)
	res, err := m.tree.Match(nil, core.Namespace{}, seq(1, 4))
	require.NoError(t, err)
	rcpt, err := m.tree.Lock(res.LastDevice, 0)
	require.NoError(t, err)
	require.Equal(t, int32(41), m.evictOne())
	_, freed, err := m.tree.Evict(core.Mamba, 1, nil)
	require.NoError(t, err)
	require.Zero(t, freed)
	require.NoError(t, m.tree.Unlock(res.LastDevice, rcpt, false))
	require.Equal(t, int32(40), m.evictOne())
}

func TestMarconi_Config(t *testing.T) {
	mamba := []core.Component{core.Full, core.Mamba}
	for _, c := range []struct {
		name string
		cfg  core.Config
		err  error
	}{
		{"unknown", core.Config{PageSize: 1, Components: mamba, MambaPolicy: "lfu"}, core.ErrUnknownPolicy},
		{"no mamba", core.Config{PageSize: 1, MambaPolicy: "marconi"}, core.ErrInvalidConfig},
		{"alpha under lru", core.Config{PageSize: 1, Components: mamba, MambaAlpha: 1}, core.ErrInvalidConfig},
		{"model under lru", core.Config{PageSize: 1, Components: mamba, MambaModel: flops.Model7BHybrid}, core.ErrInvalidConfig},
		{"negative alpha", core.Config{PageSize: 1, Components: mamba, MambaPolicy: "marconi", MambaAlpha: -1}, core.ErrInvalidConfig},
		{"NaN alpha", core.Config{PageSize: 1, Components: mamba, MambaPolicy: "marconi", MambaAlpha: math.NaN()}, core.ErrInvalidConfig},
		{"big alpha", core.Config{PageSize: 1, Components: mamba, MambaPolicy: "marconi", MambaAlpha: core.MaxMambaAlpha + 1}, core.ErrInvalidConfig},
		{"no ssm", core.Config{PageSize: 1, Components: mamba, MambaPolicy: "marconi", MambaModel: flops.Model{AttnLayers: 1, D: 8, N: 8}}, core.ErrInvalidConfig},
	} {
		_, err := core.New(c.cfg)
		require.ErrorIs(t, err, c.err, c.name)
	}
	tree, err := core.New(core.Config{PageSize: 1, Components: mamba, MambaPolicy: " Marconi "})
	require.NoError(t, err)
	require.Equal(t, "marconi", tree.MambaPolicy())
	require.ErrorIs(t, tree.SetMambaAlpha(9), core.ErrInvalidArgument)
	require.NoError(t, tree.SetMambaAlpha(1.5))
	require.Equal(t, 1.5, tree.MambaAlpha())
	lru, err := core.New(core.Config{PageSize: 1, Components: mamba})
	require.NoError(t, err)
	require.Equal(t, "lru", lru.MambaPolicy())
	require.ErrorIs(t, lru.SetMambaAlpha(1), core.ErrInvalidArgument)
	require.Equal(t, []string{"lru", "marconi"}, core.MambaPolicyNames())
}
