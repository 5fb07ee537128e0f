package core_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/radixkv/radixkv/core"
)

// The hybrid pool test runs request lifecycles (match, lock, prefill,
// sliding-window frees, insert, early SWA release, unlock) and evictions
// of every component on hybrid trees, executing every action on simulated
// pools the way a host must: Full slots, an SWA pool reached through a
// Full→SWA mapping, and Mamba state slots. After every step the tree's
// sanity check must pass, and whenever no request is in flight every
// allocated slot of every pool must be owned by exactly one tree node.

// hybridPools simulates the host's pools.
type hybridPools struct {
	t     testing.TB
	full  *fakeAlloc
	swa   *fakeAlloc
	mamba *fakeAlloc
	swaOf map[int32]int32 // full slot → SWA slot
}

func newHybridPools(t testing.TB) *hybridPools {
	return &hybridPools{t: t, full: newFakeAlloc(), swa: newFakeAlloc(), mamba: newFakeAlloc(), swaOf: map[int32]int32{}}
}

// allocKV hands out n Full slots, each mapped to a fresh SWA slot when
// the tree has SWA.
func (p *hybridPools) allocKV(n int, swa bool) []int32 {
	slots := p.full.get(n)
	if swa {
		for k, s := range p.swa.get(n) {
			p.swaOf[slots[k]] = s
		}
	}
	return slots
}

// freeSWA frees the SWA slots mapped from full slots.
func (p *hybridPools) freeSWA(full []int32) {
	for _, f := range full {
		s, ok := p.swaOf[f]
		if !ok {
			require.Failf(p.t, "bad SWA free", "SWA free of full slot %d that maps to no SWA slot", f)
		}
		p.swa.put(p.t, []int32{s})
		delete(p.swaOf, f)
	}
}

func (p *hybridPools) freeFull(full []int32, withSWA bool) {
	for _, f := range full {
		if _, ok := p.swaOf[f]; ok {
			if !withSWA {
				require.Failf(p.t, "SWA leak", "full-only free of slot %d would leak its SWA slot", f)
			}
			p.freeSWA([]int32{f})
		}
	}
	p.full.put(p.t, full)
}

// exec runs actions in order; EvictExcessPathStates calls back the tree.
func (p *hybridPools) exec(tree *core.Tree, acts []core.Action) {
	for _, a := range acts {
		switch a.Kind {
		case core.ActionFreeDeviceKV:
			p.freeFull(a.Slots, true)
		case core.ActionFreeDeviceKVFullOnly:
			p.freeFull(a.Slots, false)
		case core.ActionFreeDeviceSlots:
			switch a.Component {
			case core.Full:
				p.freeFull(a.Slots, false)
			case core.SWA:
				p.freeSWA(a.Slots)
			case core.Mamba:
				p.mamba.put(p.t, a.Slots)
			}
		case core.ActionSWARebuild:
			for _, f := range a.Slots {
				_, ok := p.swaOf[f]
				require.Truef(p.t, ok, "SWARebuild: full slot %d has no SWA slot", f)
			}
		case core.ActionRecoverSWAWithLockedFull:
			require.Equal(p.t, len(a.Slots), len(a.Incoming))
			for k, f := range a.Incoming {
				s, ok := p.swaOf[f]
				require.Truef(p.t, ok, "RecoverSWAWithLockedFull: incoming slot %d has no SWA slot", f)
				_, had := p.swaOf[a.Slots[k]]
				require.Falsef(p.t, had, "RecoverSWAWithLockedFull: kept slot %d still has an SWA slot", a.Slots[k])
				p.swaOf[a.Slots[k]] = s
				delete(p.swaOf, f)
			}
			p.full.put(p.t, a.Incoming)
		case core.ActionMambaEvictExcessPathStates:
			more, err := tree.EvictExcessPathStates(a.Node)
			require.NoError(p.t, err)
			p.exec(tree, slices.Clone(more))
		default:
			require.Failf(p.t, "unexpected action", "%v", a)
		}
	}
}

// checkOwnership: with no request in flight, the tree owns every
// allocated slot of every pool exactly once.
func (p *hybridPools) checkOwnership(tree *core.Tree, op string) {
	full, swa, mamba := map[int32]bool{}, map[int32]bool{}, map[int32]bool{}
	for _, id := range tree.Nodes() {
		info, err := tree.Inspect(id)
		require.NoError(p.t, err)
		for _, s := range info.Device[core.Full] {
			require.Falsef(p.t, full[s], "%s: full slot %d owned twice", op, s)
			full[s] = true
		}
		for _, s := range info.Device[core.SWA] {
			w, ok := p.swaOf[s]
			require.Truef(p.t, ok, "%s: %v holds SWA over full slot %d, which maps to nothing", op, id, s)
			swa[w] = true
		}
		for _, s := range info.Device[core.Mamba] {
			require.Falsef(p.t, mamba[s], "%s: mamba slot %d owned twice", op, s)
			mamba[s] = true
		}
	}
	require.Equalf(p.t, p.full.nUsed, len(full), "%s: full slots allocated vs owned by the tree", op)
	require.Equalf(p.t, p.swa.nUsed, len(swa), "%s: SWA slots allocated vs owned by the tree", op)
	require.Equalf(p.t, p.mamba.nUsed, len(mamba), "%s: mamba slots allocated vs owned by the tree", op)
	full2, _ := tree.TotalSize()
	require.Equal(p.t, len(full), full2)
}

// hybridRun drives one tree for n steps.
type hybridRun struct {
	t       testing.TB
	rng     *rand.Rand
	tree    *core.Tree
	pools   *hybridPools
	cfg     core.Config
	streams [][]uint32
	held    []heldHybrid // locks of other, long-running requests
}

type heldHybrid struct {
	node  core.NodeID
	r     core.Receipt
	early bool
}

func (h *hybridRun) has(c core.Component) bool { return h.tree.Components().Has(c) }

// request runs one request lifecycle end to end.
func (h *hybridRun) request() {
	page := h.cfg.PageSize
	tokens := randomTokens(h.rng, h.streams)
	L := len(tokens) / page * page
	m, err := h.tree.Match(nil, core.Namespace{}, tokens)
	require.NoError(h.t, err)
	require.NoError(h.t, h.tree.SanityCheck(), "after match")
	// What a hit promises: SWA KV for the last window of the prefix, and
	// a Mamba state to fork at its end.
	if h.has(core.SWA) {
		for k := max(0, m.DeviceLen-h.cfg.SWAWindow); k < m.DeviceLen; k++ {
			_, ok := h.pools.swaOf[m.Indices[k]]
			require.Truef(h.t, ok, "match of %d atoms: position %d (full slot %d) has no SWA slot", m.DeviceLen, k, m.Indices[k])
		}
	}
	if h.has(core.Mamba) {
		require.Equal(h.t, m.DeviceLen > 0, m.MambaSlot >= 0, "a hit comes with a state to fork")
		if m.MambaSlot >= 0 {
			require.True(h.t, h.pools.mamba.isUsed(m.MambaSlot))
		}
	}
	var skip core.ComponentSet
	if h.has(core.Mamba) && h.rng.IntN(4) == 0 {
		skip = skip.With(core.Mamba) // a decode hold that opts out of Mamba
	}
	r, err := h.tree.Lock(m.LastDevice, skip)
	require.NoError(h.t, err)
	prev := m.DeviceLen
	fresh := h.pools.allocKV(len(tokens)-prev, h.has(core.SWA))
	slots := append(slices.Clone(m.Indices), fresh...)
	var mslot int32
	if h.has(core.Mamba) {
		mslot = h.pools.mamba.get(1)[0] // the forked or fresh state
	}
	// Slide the window: positions older than the window (and past the
	// cached prefix, which the tree owns) lose their SWA slots.
	e := 0
	if h.has(core.SWA) && h.rng.IntN(2) == 0 {
		top := max(L-h.cfg.SWAWindow, 0) / page
		e = h.rng.IntN(top+1) * page
		if e > prev {
			h.pools.freeSWA(slots[prev:e])
		}
	}
	early := false
	if h.has(core.SWA) && !skip.Has(core.SWA) && h.rng.IntN(3) == 0 {
		acts, err := h.tree.UnlockSWA(m.LastDevice, r)
		require.NoError(h.t, err)
		h.pools.exec(h.tree, slices.Clone(acts))
		early = true
		require.NoError(h.t, h.tree.SanityCheck(), "after early SWA release")
	}
	p := core.InsertParams{Tokens: tokens, Slots: slots, PrevPrefixLen: prev, SWAEvictedSeqlen: e, MambaSlot: mslot}
	step, err := h.tree.BeginInsert(p)
	require.NoError(h.t, err)
	for {
		h.pools.exec(h.tree, step.Actions)
		require.NoError(h.t, h.tree.SanityCheck(), "inside insert")
		if step.Done {
			break
		}
		step, err = h.tree.ResumeInsert()
		require.NoError(h.t, err)
	}
	res := step.Result
	// The unaligned tail is the request's to free.
	if L < len(tokens) {
		tail := slots[L:]
		if e > L {
			h.pools.freeFull(tail, false)
		} else {
			h.pools.freeFull(tail, true)
		}
	}
	if h.has(core.Mamba) && (res.MambaExist || L == 0) {
		h.pools.mamba.put(h.t, []int32{mslot})
	}
	require.NoError(h.t, h.tree.Unlock(m.LastDevice, r, early))
}

// hold takes or releases a lock of a concurrent request, so inserts meet
// locked nodes (and locked SWA tombstones).
func (h *hybridRun) hold() {
	if len(h.held) > 0 && h.rng.IntN(2) == 0 {
		k := h.rng.IntN(len(h.held))
		l := h.held[k]
		if h.has(core.SWA) && !l.early && h.rng.IntN(2) == 0 {
			acts, err := h.tree.UnlockSWA(l.node, l.r)
			require.NoError(h.t, err)
			h.pools.exec(h.tree, slices.Clone(acts))
			h.held[k].early = true
			return
		}
		require.NoError(h.t, h.tree.Unlock(l.node, l.r, l.early))
		h.held = slices.Delete(h.held, k, k+1)
		return
	}
	m, err := h.tree.Match(nil, core.Namespace{}, randomTokens(h.rng, h.streams))
	require.NoError(h.t, err)
	r, err := h.tree.Lock(m.LastDevice, 0)
	require.NoError(h.t, err)
	h.held = append(h.held, heldHybrid{node: m.LastDevice, r: r})
}

func (h *hybridRun) evict() {
	comps := []core.Component{core.Full}
	if h.has(core.SWA) {
		comps = append(comps, core.SWA)
	}
	if h.has(core.Mamba) {
		comps = append(comps, core.Mamba)
	}
	c := comps[h.rng.IntN(len(comps))]
	want := 1 + h.rng.IntN(24)
	if c == core.Mamba {
		want = 1 + h.rng.IntN(3)
	}
	before := h.tree.Evictable(c)
	acts, freed, err := h.tree.Evict(c, want, nil)
	require.NoError(h.t, err)
	h.pools.exec(h.tree, slices.Clone(acts))
	require.Truef(h.t, freed >= want || h.tree.Evictable(c) == 0, "evict %s %d freed %d of %d evictable", c, want, freed, before)
}

func runHybrid(t *testing.T, cfg core.Config, seed uint64, steps int) {
	tree, err := core.New(cfg)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(seed, 7))
	h := &hybridRun{t: t, rng: rng, tree: tree, pools: newHybridPools(t), cfg: cfg,
		streams: genStreams(rng, 4, 12, 60)}
	for k := range steps {
		op := "request"
		switch x := rng.IntN(8); {
		case x < 2:
			op = "evict"
			h.evict()
		case x == 2:
			op = "hold"
			h.hold()
		default:
			h.request()
		}
		if err := tree.SanityCheck(); err != nil {
			t.Fatalf("step %d (%s): %v\n%s", k, op, err, tree.Render())
		}
		h.pools.checkOwnership(tree, fmt.Sprintf("step %d (%s)", k, op))
	}
	for _, l := range h.held {
		require.NoError(t, tree.Unlock(l.node, l.r, l.early))
		require.NoError(t, tree.SanityCheck())
	}
}

func TestHybridPools(t *testing.T) {
	sets := []struct {
		name string
		cfg  core.Config
	}{
		{"full+swa", core.Config{PageSize: 2, Components: []core.Component{core.Full, core.SWA}, SWAWindow: 8}},
		{"full+swa/page1", core.Config{PageSize: 1, Components: []core.Component{core.Full, core.SWA}, SWAWindow: 5}},
		{"full+mamba", core.Config{PageSize: 2, Components: []core.Component{core.Full, core.Mamba}, MambaChunkSize: 4}},
		{"full+mamba/cap", core.Config{PageSize: 1, Components: []core.Component{core.Full, core.Mamba}, MambaMaxPathStates: 2}},
		{"full+swa+mamba", core.Config{PageSize: 2, Components: []core.Component{core.Full, core.SWA, core.Mamba}, SWAWindow: 6, MambaMaxPathStates: 3}},
	}
	// TestTree_Model checks the same sets against a reference; this test
	// keeps a few seeds of whole request lifecycles.
	seeds := uint64(3)
	if testing.Short() {
		seeds = 1
	}
	for _, s := range sets {
		t.Run(s.name, func(t *testing.T) {
			for seed := range seeds {
				cfg := s.cfg
				cfg.Components = permuted(cfg.Components, seed*5+1) // another order per seed
				runHybrid(t, cfg, seed, 400)
			}
		})
	}
}
