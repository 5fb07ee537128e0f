package core_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/radixkv/radixkv/core"
)

// The host-tier pool test runs request lifecycles with load-backs,
// write-through backups (with pending marks and acks), write-back
// evictions (backup then demote, or drop when the host is full), host
// evictions and host inserts, on simulated device and host pools of
// limited size, for every component set and both write policies. Every
// action is executed the way a host must; after every step the sanity
// check passes and, with no request in flight, every allocated slot of
// every pool is owned by exactly one tree node.

// tierPools adds host pools to the simulated device pools.
type tierPools struct {
	*hybridPools
	hFull, hSWA, hMamba *fakeAlloc
	hostCap             int
	ack                 int64
}

func newTierPools(t testing.TB, hostCap int) *tierPools {
	return &tierPools{hybridPools: newHybridPools(t), hFull: newFakeAlloc(), hSWA: newFakeAlloc(), hMamba: newFakeAlloc(), hostCap: hostCap}
}

// hostRoom makes room for n host slots of component c, evicting from the
// host tier; it reports whether there is room.
func (p *tierPools) hostRoom(tree *core.Tree, c core.Component, n int) bool {
	pool := map[core.Component]*fakeAlloc{core.Full: p.hFull, core.SWA: p.hSWA, core.Mamba: p.hMamba}[c]
	if over := pool.nUsed + n - p.hostCap; over > 0 {
		acts, _, err := tree.EvictHost(c, over, nil)
		require.NoError(p.t, err)
		p.exec(tree, slices.Clone(acts))
	}
	return pool.nUsed+n <= p.hostCap
}

// backup runs BackupSpec / CommitBackup for one node; false if the host
// had no room.
func (p *tierPools) backup(tree *core.Tree, node core.NodeID) bool {
	spec, err := tree.BackupSpec(node)
	require.NoError(p.t, err)
	if spec.Empty() {
		return true
	}
	swaAtoms := 0
	for _, e := range spec.SWA {
		swaAtoms += len(e.Slots)
	}
	if !p.hostRoom(tree, core.Full, len(spec.Full)) || !p.hostRoom(tree, core.SWA, swaAtoms) || !p.hostRoom(tree, core.Mamba, 1) {
		return false
	}
	// Host evictions may have changed the spec (never its node's data,
	// which is on the device): ask again.
	spec, err = tree.BackupSpec(node)
	require.NoError(p.t, err)
	c := core.BackupCommit{Mamba: -1}
	if spec.Full != nil {
		c.Full = p.hFull.get(len(spec.Full))
	}
	for _, e := range spec.SWA {
		for _, f := range e.Slots {
			_, ok := p.swaOf[f]
			require.Truef(p.t, ok, "backup of SWA over full slot %d, which maps to nothing", f)
		}
		c.SWA = append(c.SWA, p.hSWA.get(len(e.Slots)))
	}
	if spec.Mamba >= 0 {
		require.True(p.t, p.mamba.isUsed(spec.Mamba))
		c.Mamba = p.hMamba.get(1)[0]
	}
	require.NoError(p.t, tree.CommitBackup(node, c))
	return true
}

// writeThrough executes a BackupKV chain: back up, pin, mark pending,
// acknowledge, unpin. The first failure stops the chain.
func (p *tierPools) writeThrough(tree *core.Tree, chain []core.NodeID) {
	for _, id := range chain {
		if !p.backup(tree, id) {
			return
		}
		info, err := tree.Inspect(id)
		require.NoError(p.t, err)
		if info.Host[core.Full] == nil {
			continue
		}
		r, err := tree.Lock(id, lockSkipFor(tree))
		require.NoError(p.t, err)
		p.ack++
		ids, err := tree.MarkWriteThroughPending([]core.NodeID{id}, p.ack)
		if err == nil {
			require.NoError(p.t, tree.FinishWriteThrough(ids, p.ack))
		}
		require.NoError(p.t, tree.Unlock(id, r, false))
	}
}

func lockSkipFor(tree *core.Tree) core.ComponentSet { return 0 }

// evictLeaf handles a write-back eviction step's BackupKV: back the leaf
// up and demote it, or drop it when the host is full.
func (p *tierPools) evictLeaf(tree *core.Tree, node core.NodeID) {
	if p.backup(tree, node) {
		info, err := tree.Inspect(node)
		require.NoError(p.t, err)
		if info.Host[core.Full] != nil && info.DLeaf {
			acts, err := tree.Demote(node)
			require.NoError(p.t, err)
			p.exec(tree, slices.Clone(acts))
		}
		return
	}
	_, acts, err := tree.DropSubtreeNoHost(node)
	require.NoError(p.t, err)
	p.exec(tree, slices.Clone(acts))
}

// exec runs the host-tier actions and hands the device ones to the
// device pools.
func (p *tierPools) exec(tree *core.Tree, acts []core.Action) {
	for _, a := range acts {
		switch a.Kind {
		case core.ActionFreeHostSlots:
			map[core.Component]*fakeAlloc{core.Full: p.hFull, core.SWA: p.hSWA, core.Mamba: p.hMamba}[a.Component].put(p.t, a.Slots)
		case core.ActionRebuildFullToSWAMapping:
			for k, f := range a.Slots {
				_, had := p.swaOf[f]
				require.Falsef(p.t, had, "RebuildFullToSWAMapping: full slot %d already maps", f)
				p.swaOf[f] = a.Incoming[k]
			}
		case core.ActionBackupKV:
			p.writeThrough(tree, slices.Clone(a.Nodes))
		case core.ActionReplaceWriteThroughOnSplit:
			// Acks are immediate here: nothing is ever pending across calls.
			require.Failf(p.t, "unexpected split of a pending node", "%v", a)
		default:
			p.hybridPools.exec(tree, []core.Action{a})
		}
	}
}

func (p *tierPools) checkOwnership(tree *core.Tree, op string) {
	type owned struct {
		pool *fakeAlloc
		seen map[int32]bool
	}
	dev := [3]owned{{p.full, map[int32]bool{}}, {p.swa, map[int32]bool{}}, {p.mamba, map[int32]bool{}}}
	host := [3]owned{{p.hFull, map[int32]bool{}}, {p.hSWA, map[int32]bool{}}, {p.hMamba, map[int32]bool{}}}
	for _, id := range tree.Nodes() {
		info, err := tree.Inspect(id)
		require.NoError(p.t, err)
		for c := range 3 {
			for _, s := range info.Device[c] {
				if c == int(core.SWA) {
					w, ok := p.swaOf[s]
					require.Truef(p.t, ok, "%s: %v holds SWA over full slot %d, unmapped", op, id, s)
					s = w
				}
				require.Falsef(p.t, dev[c].seen[s], "%s: device %s slot %d owned twice", op, core.Component(c), s)
				dev[c].seen[s] = true
			}
			for _, s := range info.Host[c] {
				require.Falsef(p.t, host[c].seen[s], "%s: host %s slot %d owned twice", op, core.Component(c), s)
				host[c].seen[s] = true
			}
		}
	}
	for c := range 3 {
		require.Equalf(p.t, dev[c].pool.nUsed, len(dev[c].seen), "%s: device %s slots allocated vs owned", op, core.Component(c))
		require.Equalf(p.t, host[c].pool.nUsed, len(host[c].seen), "%s: host %s slots allocated vs owned", op, core.Component(c))
	}
}

type tierRun struct {
	t       testing.TB
	rng     *rand.Rand
	tree    *core.Tree
	p       *tierPools
	cfg     core.Config
	streams [][]uint32
}

func (h *tierRun) has(c core.Component) bool { return h.tree.Components().Has(c) }

// loadBack brings a host hit back to the device.
func (h *tierRun) loadBack(anchor core.NodeID) {
	hr, err := h.tree.HostLock(anchor)
	require.NoError(h.t, err)
	r, err := h.tree.Lock(anchor, 0)
	require.NoError(h.t, err)
	plan, err := h.tree.LoadBackPlan(anchor)
	require.NoError(h.t, err)
	if !plan.Pinned && !plan.Empty() {
		c := core.LoadBackCommit{Mamba: -1}
		for _, e := range plan.Full {
			c.Full = append(c.Full, h.p.full.get(len(e.Slots)))
		}
		for _, e := range plan.SWA {
			c.SWA = append(c.SWA, h.p.swa.get(len(e.Slots)))
		}
		if plan.Mamba >= 0 {
			c.Mamba = h.p.mamba.get(1)[0]
		}
		acts, err := h.tree.CommitLoadBack(anchor, c)
		require.NoError(h.t, err)
		h.p.exec(h.tree, slices.Clone(acts))
		require.NoError(h.t, h.tree.SanityCheck(), "after load-back commit")
		require.NoError(h.t, h.tree.FinishLoadBack(anchor))
	}
	require.NoError(h.t, h.tree.Unlock(anchor, r, false))
	require.NoError(h.t, h.tree.HostUnlock(anchor, hr))
}

func (h *tierRun) request() {
	page := h.cfg.PageSize
	tokens := randomTokens(h.rng, h.streams)
	L := len(tokens) / page * page
	m, err := h.tree.Match(nil, core.Namespace{}, tokens)
	require.NoError(h.t, err)
	h.p.exec(h.tree, slices.Clone(m.Actions))
	if m.Best != m.LastDevice {
		h.loadBack(m.Best)
		require.NoError(h.t, h.tree.SanityCheck(), "after load-back")
		m, err = h.tree.Match(nil, core.Namespace{}, tokens)
		require.NoError(h.t, err)
	}
	if h.has(core.SWA) {
		for k := max(0, m.DeviceLen-h.cfg.SWAWindow); k < m.DeviceLen; k++ {
			_, ok := h.p.swaOf[m.Indices[k]]
			require.Truef(h.t, ok, "position %d of a %d-atom hit has no SWA slot", k, m.DeviceLen)
		}
	}
	r, err := h.tree.Lock(m.LastDevice, 0)
	require.NoError(h.t, err)
	prev := m.DeviceLen
	slots := append(slices.Clone(m.Indices), h.p.allocKV(len(tokens)-prev, h.has(core.SWA))...)
	var mslot int32
	if h.has(core.Mamba) {
		mslot = h.p.mamba.get(1)[0]
	}
	e := 0
	if h.has(core.SWA) && h.rng.IntN(2) == 0 {
		e = h.rng.IntN(max(L-h.cfg.SWAWindow, 0)/page+1) * page
		if e > prev {
			h.p.freeSWA(slots[prev:e])
		}
	}
	step, err := h.tree.BeginInsert(core.InsertParams{Tokens: tokens, Slots: slots, PrevPrefixLen: prev, SWAEvictedSeqlen: e, MambaSlot: mslot})
	require.NoError(h.t, err)
	for {
		h.p.exec(h.tree, step.Actions)
		if step.Done {
			break
		}
		step, err = h.tree.ResumeInsert()
		require.NoError(h.t, err)
	}
	if L < len(tokens) {
		h.p.freeFull(slots[L:], e <= L)
	}
	if h.has(core.Mamba) && (step.Result.MambaExist || L == 0) {
		h.p.mamba.put(h.t, []int32{mslot})
	}
	require.NoError(h.t, h.tree.Unlock(m.LastDevice, r, false))
}

func (h *tierRun) evictDevice() {
	comps := []core.Component{core.Full}
	if h.has(core.SWA) {
		comps = append(comps, core.SWA)
	}
	if h.has(core.Mamba) {
		comps = append(comps, core.Mamba)
	}
	c := comps[h.rng.IntN(len(comps))]
	require.NoError(h.t, h.tree.EvictStart(c, 1+h.rng.IntN(24)))
	for {
		st, err := h.tree.EvictNext()
		require.NoError(h.t, err)
		if st.Done {
			break
		}
		var backup []core.NodeID
		for _, a := range st.Actions {
			if a.Kind == core.ActionBackupKV {
				backup = append(backup, a.Node)
			}
		}
		h.p.exec(h.tree, slices.DeleteFunc(slices.Clone(st.Actions), func(a core.Action) bool { return a.Kind == core.ActionBackupKV }))
		for _, id := range backup {
			h.p.evictLeaf(h.tree, id)
		}
	}
	h.tree.EvictEnd()
}

func (h *tierRun) evictHost() {
	comps := []core.Component{core.Full}
	if h.has(core.SWA) {
		comps = append(comps, core.SWA)
	}
	if h.has(core.Mamba) {
		comps = append(comps, core.Mamba)
	}
	c := comps[h.rng.IntN(len(comps))]
	acts, _, err := h.tree.EvictHost(c, 1+h.rng.IntN(16), nil)
	require.NoError(h.t, err)
	h.p.exec(h.tree, slices.Clone(acts))
}

// insertHost adds a prefetched continuation below a matched node.
func (h *tierRun) insertHost() {
	page := h.cfg.PageSize
	s := h.streams[h.rng.IntN(len(h.streams))]
	m, err := h.tree.Match(nil, core.Namespace{}, s[:h.rng.IntN(len(s)+1)])
	require.NoError(h.t, err)
	h.p.exec(h.tree, slices.Clone(m.Actions))
	depth := 0
	for id := m.Best; id != h.tree.Root(); {
		info, err := h.tree.Inspect(id)
		require.NoError(h.t, err)
		depth += len(info.Key)
		id = info.Parent
	}
	n := h.rng.IntN((len(s)-depth)/page+1) * page
	if n == 0 || !h.p.hostRoom(h.tree, core.Full, n) {
		return
	}
	hv := h.p.hFull.get(n)
	res, acts, err := h.tree.InsertHost(m.Best, core.Namespace{}, s[depth:depth+n], hv)
	require.NoError(h.t, err)
	h.p.exec(h.tree, slices.Clone(acts))
	if res.Dropped || res.PrefixLen == n {
		h.p.hFull.put(h.t, hv)
	} else {
		h.p.hFull.put(h.t, hv[:res.PrefixLen])
	}
}

func runTier(t *testing.T, cfg core.Config, seed uint64, steps int) {
	tree, err := core.New(cfg)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(seed, 11))
	h := &tierRun{t: t, rng: rng, tree: tree, p: newTierPools(t, 120), cfg: cfg, streams: genStreams(rng, 4, 12, 60)}
	for k := range steps {
		var op string
		switch x := rng.IntN(10); {
		case x < 2:
			op = "evict"
			h.evictDevice()
		case x < 3:
			op = "evict-host"
			h.evictHost()
		case x < 4:
			op = "insert-host"
			h.insertHost()
		default:
			op = "request"
			h.request()
		}
		if err := tree.SanityCheck(); err != nil {
			t.Fatalf("seed %d step %d (%s): %v\n%s", seed, k, op, err, tree.Render())
		}
		h.p.checkOwnership(tree, fmt.Sprintf("seed %d step %d (%s)", seed, k, op))
	}
}

func TestHostTierPools(t *testing.T) {
	sets := []struct {
		name string
		cfg  core.Config
	}{
		{"full", core.Config{PageSize: 2}},
		{"full+swa", core.Config{PageSize: 2, Components: []core.Component{core.Full, core.SWA}, SWAWindow: 8}},
		{"full+mamba", core.Config{PageSize: 2, Components: []core.Component{core.Full, core.Mamba}, MambaMaxPathStates: 2}},
		{"full+swa+mamba", core.Config{PageSize: 1, Components: []core.Component{core.Full, core.SWA, core.Mamba}, SWAWindow: 5}},
	}
	for _, s := range sets {
		for _, wp := range []core.WritePolicy{core.WriteThrough, core.WriteBack} {
			cfg := s.cfg
			cfg.HostTier, cfg.WritePolicy = true, wp
			t.Run(s.name+"/"+wp.String(), func(t *testing.T) {
				for seed := range uint64(4) {
					cfg.Components = permuted(s.cfg.Components, seed)
					runTier(t, cfg, seed, 300)
				}
			})
		}
	}
}
