package core_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/radixkv/radixkv/core"
)

// The host-tier model test extends the model test to the host tier
// (HiCache) with a host pool of limited size, for [Full] and [Full,SWA]
// under write-through and write-back. Its reference is again a flat map
// from each cached page-aligned prefix to what is cached for that page,
// now on both tiers:
//
//   - its device Full slots (nil: evicted) and its host Full slots (nil:
//     no host copy);
//   - whether SWA KV is on the device for it, and its host SWA slots.
//
// From that map it predicts every match (the device hit, Best, the host
// hit, FullKVHitLen), every load-back plan (the host slots of the evicted
// pages below the device prefix up to Best, root first), every backup
// spec's Full part (the node's device slots, or nothing once backed up),
// every insert's Full outcome (new pages, unevicted host-only pages,
// duplicates freed), and it judges every free the tree emits: a device
// Full free must name a whole cached, unlocked device page with no device
// child (kept as host-only when backed up, deleted otherwise); a host Full
// free must name a host copy that is not host-locked, and either a
// host-only page without children (deleted) or, under write-back only, a
// copy that coexists with device data (dropped, device kept); Demote must
// free exactly the node's device slots and keep its host copy. After every
// step the tree's pages (flattened from Inspect) equal the reference's on
// both tiers, the sanity check passes, the tier invariants hold on the
// reference, and every device and host slot is owned exactly once.

type hostPage struct {
	ns      int
	words   []uint32
	dev     []int32
	host    []int32
	swaDev  bool
	swaHost []int32
}

// hostLockHeld is a live HostLock. It protects the Full host copy of its
// anchor node only (a split leaves the lock on the anchor, the suffix; the
// prefix half is then an inner node, which host eviction cannot delete).
type hostLockHeld struct {
	r core.Receipt
	// pages are the node's pages when the lock was taken: the lock keeps
	// protecting all of them after a split moves some to a new prefix.
	pages []string
}

type devLockHeld struct {
	r     core.Receipt
	ns    int
	words []uint32
}

type hostModel struct {
	t       *testing.T
	tree    *core.Tree
	rng     *rand.Rand
	page    int
	window  int
	swa     bool
	wb      bool
	streams [][]uint32
	devCap  int
	hostCap int
	ref     map[string]*hostPage
	p       *hybridPools
	hFull   *fakeAlloc
	hSWA    *fakeAlloc
	ack     int64
	locks   []devLockHeld
	hlocks  []hostLockHeld
	stats   map[string]int
	// pinned holds the pages an open write-back load-back pinned.
	pinned map[string]bool
}

func (m *hostModel) key(p *hostPage) string { return refKey(p.ns, p.words) }

func (m *hostModel) chain(ns int, words []uint32, L int) []*hostPage {
	var out []*hostPage
	for j := 1; j*m.page <= L; j++ {
		p := m.ref[refKey(ns, words[:j*m.page])]
		if p == nil {
			break
		}
		out = append(out, p)
	}
	return out
}

// swaOK applies the SWA rule to the first k pages: SWA (on an allowed
// tier) over the last window before the end.
func (m *hostModel) swaOK(ch []*hostPage, k int, host bool) bool {
	if !m.swa || k == 0 {
		return true
	}
	end := k * m.page
	for j := k - 1; j >= 0 && (j+1)*m.page > end-m.window; j-- {
		if !ch[j].swaDev && !(host && ch[j].swaHost != nil) {
			return false
		}
	}
	return true
}

type hostHit struct {
	full, devFull, dev, best, hostHit int
	slots                             []int32
}

func (m *hostModel) refMatch(ns int, words []uint32, L int) hostHit {
	ch := m.chain(ns, words, L)
	h := hostHit{full: len(ch) * m.page}
	nd := 0
	for nd < len(ch) && ch[nd].dev != nil {
		nd++
	}
	h.devFull = nd * m.page
	k := nd
	for !m.swaOK(ch, k, false) {
		k--
	}
	h.dev = k * m.page
	for _, p := range ch[:k] {
		h.slots = append(h.slots, p.dev...)
	}
	b := len(ch)
	for !m.swaOK(ch, b, true) {
		b--
	}
	h.best = b * m.page
	for _, p := range ch[k:b] {
		h.hostHit += len(p.host)
	}
	return h
}

func (m *hostModel) inspect(id core.NodeID) core.NodeInfo {
	info, err := m.tree.Inspect(id)
	require.NoError(m.t, err)
	return info
}

// nodePages lists the ref keys of node's pages.
func (m *hostModel) nodePages(id core.NodeID) []string {
	info := m.inspect(id)
	ns := nsIndex(info.Namespace)
	words, _ := pathOf(m.t, m.tree, id)
	var out []string
	for end := len(words); end > len(words)-len(info.Key); end -= m.page {
		out = append(out, refKey(ns, words[:end]))
	}
	slices.Reverse(out)
	return out
}

func (m *hostModel) devLocked(p *hostPage) bool {
	for _, l := range m.locks {
		if l.ns == p.ns && len(l.words) >= len(p.words) && slices.Equal(l.words[:len(p.words)], p.words) {
			return true
		}
	}
	return false
}

func (m *hostModel) hostLocked(p *hostPage) bool {
	k := m.key(p)
	for _, l := range m.hlocks {
		if slices.Contains(l.pages, k) {
			return true
		}
	}
	return false
}

func (m *hostModel) hasChild(p *hostPage, dev bool) bool {
	for _, q := range m.ref {
		if q.ns == p.ns && len(q.words) == len(p.words)+m.page && slices.Equal(q.words[:len(p.words)], p.words) && (!dev || q.dev != nil) {
			return true
		}
	}
	return false
}

// pagesBy maps slots of a free action to the reference pages holding them.
func (m *hostModel) pagesBy(slots []int32, get func(*hostPage) []int32, what string) []*hostPage {
	t := m.t
	require.Zero(t, len(slots)%m.page, "%s free of part of a page: %v", what, slots)
	var out []*hostPage
	for k := 0; k < len(slots); k += m.page {
		var hit *hostPage
		for _, p := range m.ref {
			if v := get(p); v != nil && slices.Equal(v, slots[k:k+m.page]) {
				hit = p
				break
			}
		}
		if hit == nil {
			require.Failf(t, "free of uncached slots", "%s: slots %v are no cached page's", what, slots[k:k+m.page])
		}
		out = append(out, hit)
	}
	// Deepest first: a node's pages go leaf end first.
	slices.Reverse(out)
	return out
}

// exec judges and executes actions, updating the reference.
func (m *hostModel) exec(acts []core.Action) {
	t := m.t
	for _, a := range acts {
		switch a.Kind {
		case core.ActionFreeDeviceSlots:
			switch a.Component {
			case core.Full:
				for _, p := range m.pagesBy(a.Slots, func(p *hostPage) []int32 { return p.dev }, "device full") {
					require.False(t, m.devLocked(p) || m.pinned[m.key(p)], "device free of locked or pinned page %v", p.words)
					require.False(t, m.hasChild(p, true), "device free of page %v with a device child", p.words)
					p.dev = nil
					if p.host == nil {
						delete(m.ref, m.key(p))
					}
				}
				m.p.freeFull(a.Slots, false)
				m.stats["free-dev"] += len(a.Slots)
			case core.SWA:
				for _, p := range m.pagesBy(a.Slots, func(p *hostPage) []int32 {
					if p.swaDev {
						return p.dev
					}
					return nil
				}, "device swa") {
					require.False(t, m.pinned[m.key(p)], "device swa free of pinned page %v", p.words)
					p.swaDev = false
				}
				m.p.freeSWA(a.Slots)
			default:
				require.Failf(t, "unexpected component", "%v", a)
			}
		case core.ActionFreeHostSlots:
			switch a.Component {
			case core.Full:
				for _, p := range m.pagesBy(a.Slots, func(p *hostPage) []int32 { return p.host }, "host full") {
					if m.hostLocked(p) {
						require.Failf(t, "host free of host-locked page", "page %v (device %v) freed by %v while host-locked (receipts %+v)\n%s", p.words, p.dev, a, m.hlocks, m.tree.Render())
					}
					require.False(t, m.pinned[m.key(p)], "host free of pinned page %v", p.words)
					if p.dev != nil {
						require.True(t, m.wb, "write-through freed the host copy of device page %v", p.words)
						m.stats["host-reclaim"]++
						p.host = nil
						continue
					}
					require.False(t, m.hasChild(p, false), "host free of page %v with children", p.words)
					delete(m.ref, m.key(p))
				}
				m.hFull.put(t, a.Slots)
				m.stats["free-host"] += len(a.Slots)
			case core.SWA:
				for _, p := range m.pagesBy(a.Slots, func(p *hostPage) []int32 { return p.swaHost }, "host swa") {
					p.swaHost = nil
				}
				m.hSWA.put(t, a.Slots)
			default:
				require.Failf(t, "unexpected component", "%v", a)
			}
		case core.ActionRebuildFullToSWAMapping:
			for _, k := range m.nodePages(a.Node) {
				p := m.ref[k]
				require.NotNil(t, p)
				require.False(t, p.swaDev)
				p.swaDev = true
			}
			for k, f := range a.Slots {
				_, had := m.p.swaOf[f]
				require.Falsef(t, had, "RebuildFullToSWAMapping: full slot %d already maps", f)
				m.p.swaOf[f] = a.Incoming[k]
			}
		case core.ActionBackupKV:
			m.writeThrough(slices.Clone(a.Nodes))
		default:
			require.Failf(t, "unexpected action", "%v", a)
		}
	}
}

// hostRoom evicts from the host until n more slots of c fit.
func (m *hostModel) hostRoom(c core.Component, n int) bool {
	pool := m.hFull
	if c == core.SWA {
		pool = m.hSWA
	}
	if over := pool.nUsed + n - m.hostCap; over > 0 {
		acts, _, err := m.tree.EvictHost(c, over, nil)
		require.NoError(m.t, err)
		m.exec(slices.Clone(acts))
		m.stats["host-evict-room"]++
	}
	return pool.nUsed+n <= m.hostCap
}

// backup runs BackupSpec / CommitBackup, checking the spec's Full part.
func (m *hostModel) backup(node core.NodeID) bool {
	t := m.t
	spec, err := m.tree.BackupSpec(node)
	require.NoError(t, err)
	if spec.Empty() {
		return true
	}
	swaAtoms := 0
	for _, e := range spec.SWA {
		swaAtoms += len(e.Slots)
	}
	if !m.hostRoom(core.Full, len(spec.Full)) || !m.hostRoom(core.SWA, swaAtoms) {
		m.stats["host-full"]++
		return false
	}
	spec, err = m.tree.BackupSpec(node)
	require.NoError(t, err)
	pages := m.nodePages(node)
	var want []int32
	backed := true
	for _, k := range pages {
		p := m.ref[k]
		require.NotNil(t, p)
		require.NotNil(t, p.dev, "backup of an evicted page")
		want = append(want, p.dev...)
		backed = backed && p.host != nil
	}
	if backed {
		require.Nil(t, spec.Full, "backup spec of a backed-up node")
	} else {
		sameSlice(t, want, spec.Full, "backup spec full slots")
	}
	c := core.BackupCommit{Mamba: -1}
	if spec.Full != nil {
		c.Full = m.hFull.get(len(spec.Full))
		for k, key := range pages {
			m.ref[key].host = slices.Clone(c.Full[k*m.page : (k+1)*m.page])
		}
		m.stats["backup"]++
	}
	for _, e := range spec.SWA {
		hs := m.hSWA.get(len(e.Slots))
		c.SWA = append(c.SWA, hs)
		for k, key := range m.nodePages(e.Node) {
			p := m.ref[key]
			require.True(t, p.swaDev && p.swaHost == nil, "SWA backup of page %v: dev %v host %v", p.words, p.swaDev, p.swaHost)
			p.swaHost = slices.Clone(hs[k*m.page : (k+1)*m.page])
		}
	}
	require.NoError(t, m.tree.CommitBackup(node, c))
	return true
}

func (m *hostModel) writeThrough(chain []core.NodeID) {
	for _, id := range chain {
		if !m.backup(id) {
			return
		}
		if m.wb || m.inspect(id).Host[core.Full] == nil {
			// Write-back copies (here: an insert's aux-only backup of a
			// backed-up target) are complete once committed.
			continue
		}
		r, err := m.tree.Lock(id, 0)
		require.NoError(m.t, err)
		m.ack++
		ids, err := m.tree.MarkWriteThroughPending([]core.NodeID{id}, m.ack)
		require.NoError(m.t, err)
		require.NoError(m.t, m.tree.FinishWriteThrough(ids, m.ack))
		require.NoError(m.t, m.tree.Unlock(id, r, false))
	}
}

func (m *hostModel) tokens() (int, []uint32, []uint32, int) {
	ns := m.rng.IntN(len(testNamespaces))
	tok := randomTokens(m.rng, m.streams)
	words, L := modelKey(tok, m.page, false)
	return ns, tok, words, L
}

// match runs a match and compares it with the reference.
func (m *hostModel) match(ns int, tok, words []uint32, L int) (core.MatchResult, hostHit) {
	t := m.t
	want := m.refMatch(ns, words, L)
	res, err := m.tree.Match(nil, testNamespaces[ns], tok)
	require.NoError(t, err)
	require.Empty(t, res.Actions)
	eqf(t, want.dev, res.DeviceLen, "device hit of %v", tok)
	sameSlice(t, want.slots, res.Indices, "device slots")
	eqf(t, want.full, res.FullKVHitLen, "FullKVHitLen")
	eqf(t, want.hostHit, res.HostHitLen, "HostHitLen")
	w, _ := pathOf(t, m.tree, res.Best)
	sameSlice(t, words[:want.best], w, "Best does not end the host-aware hit")
	w, _ = pathOf(t, m.tree, res.LastDevice)
	sameSlice(t, words[:want.dev], w, "LastDevice does not end the device hit")
	eqf(t, res.Best, res.LastHost, "LastHost")
	m.stats["match"]++
	if want.best > want.dev {
		m.stats["match-host-hit"]++
	}
	return res, want
}

// loadBack loads Best back, checking the plan against the reference.
func (m *hostModel) loadBack(res core.MatchResult, want hostHit, ns int, words []uint32) {
	t := m.t
	anchor := res.Best
	hr, err := m.tree.HostLock(anchor)
	require.NoError(t, err)
	r, err := m.tree.Lock(anchor, 0)
	require.NoError(t, err)
	plan, err := m.tree.LoadBackPlan(anchor)
	require.NoError(t, err)
	require.False(t, plan.Pinned)
	ch := m.chain(ns, words, want.best)
	var wantHost []int32
	var pages []*hostPage
	for _, p := range ch[min(want.devFull, want.best)/m.page:] {
		require.NotNil(t, p.host, "evicted page without a host copy")
		wantHost = append(wantHost, p.host...)
		pages = append(pages, p)
	}
	var got []int32
	for _, e := range plan.Full {
		got = append(got, e.Slots...)
	}
	sameSlice(t, wantHost, got, "load-back plan full host slots")
	if !plan.Empty() {
		c := core.LoadBackCommit{Mamba: -1}
		var fresh []int32
		for _, e := range plan.Full {
			s := m.p.full.get(len(e.Slots))
			fresh = append(fresh, s...)
			c.Full = append(c.Full, s)
		}
		for _, e := range plan.SWA {
			c.SWA = append(c.SWA, m.p.swa.get(len(e.Slots)))
		}
		acts, err := m.tree.CommitLoadBack(anchor, c)
		require.NoError(t, err)
		for k, p := range pages {
			p.dev = slices.Clone(fresh[k*m.page : (k+1)*m.page])
			if m.wb {
				m.pinned[m.key(p)] = true
			}
		}
		m.exec(slices.Clone(acts))
		require.NoError(t, m.tree.SanityCheck(), "after load-back commit")
		if m.rng.IntN(3) == 0 {
			// Evict on both tiers while the copy is in flight: the
			// pinned and locked path must survive. Under write-back the
			// host may drop its receipts first: the pins alone must
			// then keep the path (every walk passes pinned nodes by).
			if m.wb && m.rng.IntN(2) == 0 {
				require.NoError(t, m.tree.Unlock(anchor, r, false))
				require.NoError(t, m.tree.HostUnlock(anchor, hr))
				r, hr = core.Receipt{}, core.Receipt{}
				m.stats["load-back-evict-unlocked"]++
				if m.swa {
					// An SWA walk asked for everything reaches the
					// loaded nodes.
					m.evictDeviceOf(core.SWA, 1<<20)
				}
			}
			m.evictHost()
			m.evictDevice()
			require.NoError(t, m.tree.SanityCheck(), "evictions during a load-back")
			for _, p := range pages {
				require.Equal(t, p, m.ref[m.key(p)], "a loaded page vanished during its load-back")
				require.NotNil(t, p.dev, "a loaded page lost its device copy during its load-back")
			}
			m.stats["load-back-evict"]++
		}
		clear(m.pinned)
		require.NoError(t, m.tree.FinishLoadBack(anchor))
		m.stats["load-back"]++
		m.stats["load-back-atoms"] += len(fresh)
	}
	if r.Serial != 0 {
		require.NoError(t, m.tree.Unlock(anchor, r, false))
		require.NoError(t, m.tree.HostUnlock(anchor, hr))
	}
}

// request: match, load back a host hit, insert the sequence.
func (m *hostModel) request() {
	t := m.t
	ns, tok, words, L := m.tokens()
	res, want := m.match(ns, tok, words, L)
	if res.Best != res.LastDevice && m.rng.IntN(4) != 0 {
		m.loadBack(res, want, ns, words)
		m.check("load-back")
		res, _ = m.match(ns, tok, words, L)
	}
	r, err := m.tree.Lock(res.LastDevice, 0)
	require.NoError(t, err)
	prev := res.DeviceLen
	fresh := m.p.allocKV(len(tok)-prev, m.swa)
	slots := append(slices.Clone(res.Indices), fresh...)
	// The prediction of the Full outcome.
	var wantFree []int32
	ch := m.chain(ns, words, L)
	for j := prev / m.page; j < L/m.page; j++ {
		in := slots[j*m.page : (j+1)*m.page]
		if j >= len(ch) {
			m.ref[refKey(ns, words[:(j+1)*m.page])] = &hostPage{ns: ns, words: slices.Clone(words[:(j+1)*m.page]), dev: slices.Clone(in), swaDev: m.swa}
			continue
		}
		p := ch[j]
		switch {
		case p.dev == nil:
			p.dev, p.swaDev = slices.Clone(in), m.swa
			m.stats["unevict"]++
		case m.swa && !p.swaDev && !m.devLocked(p):
			wantFree = append(wantFree, p.dev...)
			p.dev, p.swaDev = slices.Clone(in), true
		default:
			wantFree = append(wantFree, in...)
			p.swaDev = p.swaDev || m.swa
		}
	}
	step, err := m.tree.BeginInsert(core.InsertParams{Namespace: testNamespaces[ns], Tokens: tok, Slots: slots, PrevPrefixLen: prev})
	require.NoError(t, err)
	var gotFree []int32
	for {
		for _, a := range step.Actions {
			switch a.Kind {
			case core.ActionFreeDeviceKV, core.ActionFreeDeviceKVFullOnly:
				gotFree = append(gotFree, a.Slots...)
				m.p.freeFull(a.Slots, a.Kind == core.ActionFreeDeviceKV)
			case core.ActionRecoverSWAWithLockedFull:
				gotFree = append(gotFree, a.Incoming...)
				m.p.exec(m.tree, []core.Action{a})
			case core.ActionSWARebuild:
				m.p.exec(m.tree, []core.Action{a})
			default:
				m.exec([]core.Action{a})
			}
		}
		if step.Done {
			break
		}
		require.NoError(t, m.tree.SanityCheck(), "inside an insert")
		step, err = m.tree.ResumeInsert()
		require.NoError(t, err)
	}
	sameMultiset(t, wantFree, gotFree, "insert frees")
	if L < len(tok) {
		m.p.freeFull(slots[L:], true)
	}
	require.NoError(t, m.tree.Unlock(res.LastDevice, r, false))
	m.stats["insert"]++
}

func (m *hostModel) evictDevice() {
	c := core.Full
	if m.swa && m.rng.IntN(3) == 0 {
		c = core.SWA
	}
	want := 1 + m.rng.IntN(8*m.page)
	if m.p.full.nUsed > m.devCap {
		want += m.p.full.nUsed - m.devCap
	}
	m.evictDeviceOf(c, want)
}

// evictDeviceOf runs a step-wise device eviction of c for want atoms.
func (m *hostModel) evictDeviceOf(c core.Component, want int) {
	t := m.t
	require.NoError(t, m.tree.EvictStart(c, want))
	for {
		st, err := m.tree.EvictNext()
		require.NoError(t, err)
		if st.Done {
			break
		}
		var backup []core.NodeID
		var rest []core.Action
		for _, a := range st.Actions {
			if a.Kind == core.ActionBackupKV {
				require.True(t, m.wb, "write-through eviction asked for a backup")
				backup = append(backup, a.Node)
			} else {
				rest = append(rest, a)
			}
		}
		m.exec(rest)
		for _, id := range backup {
			m.evictLeaf(id)
		}
	}
	m.tree.EvictEnd()
	m.stats["evict"]++
}

// evictLeaf: a write-back eviction's backup then demote, or drop.
func (m *hostModel) evictLeaf(id core.NodeID) {
	if m.backup(id) {
		if info := m.inspect(id); info.Host[core.Full] != nil && info.DLeaf {
			m.demote(id)
		}
		return
	}
	snapPages := m.nodePages(id)
	ok, acts, err := m.tree.DropSubtreeNoHost(id)
	require.NoError(m.t, err)
	m.exec(slices.Clone(acts))
	if ok {
		for _, k := range snapPages {
			require.Nil(m.t, m.ref[k], "DropSubtreeNoHost kept a page")
		}
		m.stats["drop"]++
	}
}

// demote demotes a node and requires it to free exactly its device slots
// and keep its host copy.
func (m *hostModel) demote(id core.NodeID) {
	t := m.t
	pages := m.nodePages(id)
	var want []int32
	for _, k := range pages {
		want = append(want, m.ref[k].dev...)
	}
	acts, err := m.tree.Demote(id)
	require.NoError(t, err)
	var got []int32
	for _, a := range acts {
		if a.Kind == core.ActionFreeDeviceSlots && a.Component == core.Full {
			got = append(got, a.Slots...)
		}
	}
	sameMultiset(t, want, got, "demote frees")
	m.exec(slices.Clone(acts))
	for _, k := range pages {
		p := m.ref[k]
		require.NotNil(t, p, "demote dropped a page")
		require.Nil(t, p.dev)
		require.NotNil(t, p.host, "demote lost the host copy")
	}
	m.stats["demote"]++
}

// demoteSome demotes a random backed-up device leaf.
func (m *hostModel) demoteSome() {
	var cand []core.NodeID
	for _, id := range m.tree.Nodes() {
		if info := m.inspect(id); info.DLeaf && info.Host[core.Full] != nil && info.PinnedBy == 0 {
			cand = append(cand, id)
		}
	}
	if len(cand) > 0 {
		m.demote(cand[m.rng.IntN(len(cand))])
	}
}

func (m *hostModel) evictHost() {
	c := core.Full
	if m.swa && m.rng.IntN(3) == 0 {
		c = core.SWA
	}
	acts, _, err := m.tree.EvictHost(c, 1+m.rng.IntN(6*m.page), nil)
	require.NoError(m.t, err)
	m.exec(slices.Clone(acts))
	m.stats["evict-host"]++
}

// lockStep takes or releases a device lock or a host lock.
func (m *hostModel) lockStep() {
	t := m.t
	switch x := m.rng.IntN(4); {
	case x == 0 && len(m.locks) > 0:
		k := m.rng.IntN(len(m.locks))
		l := m.locks[k]
		require.NoError(t, m.tree.Unlock(l.r.Node, l.r, false))
		m.locks = slices.Delete(m.locks, k, k+1)
	case x == 1 && len(m.hlocks) > 0:
		k := m.rng.IntN(len(m.hlocks))
		l := m.hlocks[k]
		require.NoError(t, m.tree.HostUnlock(l.r.Node, l.r))
		m.hlocks = slices.Delete(m.hlocks, k, k+1)
	case x == 2 && len(m.locks) < 3:
		ns, tok, words, L := m.tokens()
		res, _ := m.match(ns, tok, words, L)
		r, err := m.tree.Lock(res.LastDevice, 0)
		require.NoError(t, err)
		m.locks = append(m.locks, devLockHeld{r: r, ns: ns, words: words[:res.DeviceLen]})
		m.stats["lock"]++
	case x == 3 && len(m.hlocks) < 2:
		ns, tok, words, L := m.tokens()
		res, _ := m.match(ns, tok, words, L)
		if res.Best == m.tree.Root() || m.inspect(res.Best).Host[core.Full] == nil {
			return
		}
		r, err := m.tree.HostLock(res.Best)
		require.NoError(t, err)
		m.hlocks = append(m.hlocks, hostLockHeld{r: r, pages: m.nodePages(res.Best)})
		m.stats["host-lock"]++
	}
}

// check compares the tree with the reference on both tiers and checks
// the tier invariants and slot ownership.
func (m *hostModel) check(op string) {
	t := m.t
	require.NoError(t, m.tree.SanityCheck(), "after %s", op)
	seen := map[string]bool{}
	for _, id := range m.tree.Nodes() {
		info := m.inspect(id)
		ns := nsIndex(info.Namespace)
		words, _ := pathOf(t, m.tree, id)
		base := len(words) - len(info.Key)
		for k := 0; k < len(info.Key); k += m.page {
			w := words[:base+k+m.page]
			key := refKey(ns, w)
			p := m.ref[key]
			if p == nil {
				require.Failf(t, "extra page", "after %s: the tree caches %v in ns %d, the reference does not", op, w, ns)
			}
			seen[key] = true
			part := func(v []int32) []int32 {
				if v == nil {
					return nil
				}
				return v[k : k+m.page]
			}
			sameSlice(t, p.dev, part(info.Device[core.Full]), "after %s: device slots of %v", op, w)
			sameSlice(t, p.host, part(info.Host[core.Full]), "after %s: host slots of %v", op, w)
			eqf(t, p.dev == nil, info.Device[core.Full] == nil, "after %s: evicted %v", op, w)
			eqf(t, p.host == nil, info.Host[core.Full] == nil, "after %s: backed up %v", op, w)
			if m.swa {
				eqf(t, p.swaDev, info.Device[core.SWA] != nil, "after %s: SWA on the device for %v", op, w)
				sameSlice(t, p.swaHost, part(info.Host[core.SWA]), "after %s: SWA host slots of %v", op, w)
				eqf(t, p.swaHost == nil, info.Host[core.SWA] == nil, "after %s: SWA backed up %v", op, w)
			}
		}
	}
	eqf(t, len(m.ref), len(seen), "after %s: cached pages", op)
	var nDev, nHost, nSWA, nSWAHost int
	hostOwner := map[int32]bool{}
	for _, p := range m.ref {
		require.True(t, p.dev != nil || p.host != nil, "after %s: page %v on neither tier", op, p.words)
		if len(p.words) > m.page {
			q := m.ref[refKey(p.ns, p.words[:len(p.words)-m.page])]
			require.NotNil(t, q, "after %s: page %v has no parent page", op, p.words)
			if p.dev != nil {
				require.NotNil(t, q.dev, "after %s: device page %v under an evicted page", op, p.words)
			}
			if p.host != nil && !m.wb {
				require.NotNil(t, q.host, "after %s: write-through: backed-up page %v under an unbacked page", op, p.words)
			}
		}
		nDev += len(p.dev)
		for _, s := range p.host {
			require.False(t, hostOwner[s], "after %s: host slot %d owned twice", op, s)
			require.True(t, m.hFull.isUsed(s), "after %s: host slot %d owned but free", op, s)
			hostOwner[s] = true
		}
		nHost += len(p.host)
		if p.swaDev {
			require.NotNil(t, p.dev, "after %s: SWA without Full on the device", op)
			nSWA += len(p.dev)
		}
		nSWAHost += len(p.swaHost)
	}
	eqf(t, m.p.full.nUsed, nDev, "after %s: device slots allocated vs owned", op)
	eqf(t, m.hFull.nUsed, nHost, "after %s: host slots allocated vs owned", op)
	eqf(t, len(m.p.swaOf), nSWA, "after %s: SWA mappings vs owners", op)
	eqf(t, m.p.swa.nUsed, nSWA, "after %s: SWA slots allocated vs owned", op)
	eqf(t, m.hSWA.nUsed, nSWAHost, "after %s: host SWA slots allocated vs owned", op)
	require.LessOrEqual(t, m.hFull.nUsed, m.hostCap, "after %s: host pool overflow", op)
	eqf(t, len(m.locks)+len(m.hlocks), m.tree.LiveReceiptCount(), "after %s: live receipts", op)
}

func runHostModel(t *testing.T, cfg core.Config, seed uint64, ops int) map[string]int {
	tree, err := core.New(cfg)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(seed, uint64(cfg.PageSize)))
	page := cfg.PageSize
	m := &hostModel{
		t: t, tree: tree, rng: rng, page: page, window: cfg.SWAWindow,
		swa: slices.Contains(cfg.Components, core.SWA), wb: cfg.WritePolicy == core.WriteBack,
		streams: genStreams(rng, 4, 3*page+1, 12*page+7),
		devCap:  40 * page, hostCap: 24 * page,
		ref: map[string]*hostPage{}, pinned: map[string]bool{}, p: newHybridPools(t), hFull: newFakeAlloc(), hSWA: newFakeAlloc(),
		stats: map[string]int{},
	}
	var trail []string
	for i := range ops {
		var op string
		switch x := rng.IntN(20); {
		case x < 8:
			op = "request"
			m.request()
		case x < 11:
			op = "evict"
			m.evictDevice()
		case x < 13:
			op = "evict-host"
			m.evictHost()
		case x < 15:
			op = "demote"
			m.demoteSome()
		default:
			op = "lock"
			m.lockStep()
		}
		if m.p.full.nUsed > m.devCap {
			op += "+evict"
			m.evictDevice()
		}
		trail = append(trail, op)
		if len(trail) > 8 {
			trail = trail[1:]
		}
		m.check(fmt.Sprintf("step %d (last ops %s)", i, strings.Join(trail, ",")))
	}
	return m.stats
}

func TestTree_ModelHost(t *testing.T) {
	ops := 400
	seeds := []uint64{1, 0x5eed}
	if testing.Short() {
		ops, seeds = 150, seeds[:1]
	}
	if *modelOps > 0 {
		ops = *modelOps
	}
	if *modelSeeds > 0 {
		seeds = nil
		for k := range *modelSeeds {
			seeds = append(seeds, uint64(k+1))
		}
	}
	sets := []struct {
		name  string
		comps []core.Component
	}{{"full", []core.Component{core.Full}}, {"full+swa", []core.Component{core.Full, core.SWA}}}
	for _, s := range sets {
		for _, wp := range []core.WritePolicy{core.WriteThrough, core.WriteBack} {
			total := map[string]int{}
			for _, page := range []int{1, 2, 4} {
				for _, seed := range seeds {
					// The components are listed in an order drawn from the seed.
					order := permuted(s.comps, rand.New(rand.NewPCG(seed, uint64(page)<<1|uint64(wp))).Uint64())
					cfg := core.Config{PageSize: page, Components: order, HostTier: true, WritePolicy: wp, Policy: "lru"}
					if len(s.comps) > 1 {
						cfg.SWAWindow = []int{1, 2*page + 1, 3 * page}[int(seed+uint64(page))%3]
					}
					t.Run(fmt.Sprintf("%s/%s/page=%d/seed=%#x/w=%d/order=%s", s.name, wp, page, seed, cfg.SWAWindow, componentOrder(order)), func(t *testing.T) {
						for k, v := range runHostModel(t, cfg, seed, ops) {
							total[k] += v
						}
					})
				}
			}
			if t.Failed() {
				return
			}
			if len(total) == 0 {
				continue // filtered out by -run
			}
			t.Logf("%s/%s: %v", s.name, wp, total)
			for _, k := range []string{"backup", "demote", "load-back", "match-host-hit", "free-host", "unevict", "lock", "host-lock", "load-back-evict"} {
				require.Positive(t, total[k], "%s/%s: %s", s.name, wp, k)
			}
		}
	}
}
