package core_test

import (
	"encoding/binary"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/radixkv/radixkv/core"
)

// The model test drives a Tree and a deliberately naive reference side by
// side, for every component set ([Full], [Full,SWA], [Full,Mamba],
// [Full,SWA,Mamba]). The reference knows nothing of nodes, splits or
// lists: it is a flat map from each cached page-aligned prefix
// (namespace, key words through the end of one page) to what is cached
// for that page:
//
//   - its Full slots;
//   - whether SWA KV is held for it (SWA trees);
//   - the Mamba state saved after its last atom, if one was (Mamba trees:
//     the end of each inserted sequence).
//
// From that map alone it predicts every match (the longest prefix that is
// Full-cached, has SWA over its last window and ends on a saved state),
// every insert (which incoming slots are duplicates and how they are
// freed, which SWA tombstones are recovered and how, where a state is
// saved and which states the per-path cap drops), and it judges every
// eviction the tree chooses (SWA/Mamba walks, early SWA releases, the
// path cap, Full leaves): a free must name data the reference holds, must
// not touch what a live lock guarantees, must leave the cached prefixes
// closed, and must free a page's SWA and state before its Full slots.
//
// After every operation the tree's pages (flattened from Inspect) must
// equal the reference's, slot for slot; the sanity check must pass; every
// slot of every simulated pool (Full, SWA through the Full→SWA mapping,
// Mamba) must be owned exactly once by the tree or an in-flight request;
// the sizes and per-node lock counts must agree with the reference's
// locks.

// testNamespaces are the namespaces the randomized tests insert into.
var testNamespaces = []core.Namespace{
	{},
	{CacheSalt: "tenant-b"},
	{ExtraKey: "x", LoRA: "adapter-1"},
}

// neverInserted is matched against but never inserted into.
var neverInserted = core.Namespace{ExtraKey: "never"}

// genStreams builds a handful of "conversations" that share a common
// system prompt and then diverge, so that inserts share prefixes often.
func genStreams(rng *rand.Rand, n, common, length int) [][]uint32 {
	sys := make([]uint32, common)
	for i := range sys {
		sys[i] = 1 + rng.Uint32N(40)
	}
	out := make([][]uint32, n)
	for k := range out {
		s := slices.Clone(sys)
		for len(s) < length {
			s = append(s, 1+rng.Uint32N(40))
		}
		out[k] = s
	}
	return out
}

// randomTokens returns a token sequence derived from one of the streams:
// a prefix of random (usually unaligned) length, sometimes with one token
// changed or a fresh tail appended, so that inserts split nodes.
func randomTokens(rng *rand.Rand, streams [][]uint32) []uint32 {
	s := streams[rng.IntN(len(streams))]
	l := rng.IntN(len(s) + 1)
	tok := slices.Clone(s[:l])
	switch rng.IntN(6) {
	case 0:
		if l > 0 {
			tok[rng.IntN(l)] = 100 + rng.Uint32N(5)
		}
	case 1:
		for range 1 + rng.IntN(40) {
			tok = append(tok, 200+rng.Uint32N(8))
		}
	}
	return tok
}

// fakeAlloc is the host's slot allocator: it hands out fresh slots and
// refuses double frees and frees of slots it never handed out.
type fakeAlloc struct {
	next  int32
	free  []int32
	used  []bool // by slot
	nUsed int
}

func newFakeAlloc() *fakeAlloc { return &fakeAlloc{} }

func (a *fakeAlloc) isUsed(s int32) bool { return s >= 0 && int(s) < len(a.used) && a.used[s] }

func (a *fakeAlloc) get(n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		var s int32
		if k := len(a.free); k > 0 {
			s, a.free = a.free[k-1], a.free[:k-1]
		} else {
			s = a.next
			a.next++
			a.used = append(a.used, false)
		}
		a.used[s] = true
		a.nUsed++
		out[i] = s
	}
	return out
}

func (a *fakeAlloc) put(t testing.TB, slots []int32) {
	for _, s := range slots {
		if !a.isUsed(s) {
			require.Failf(t, "bad free", "slot %d freed but not allocated (double free or foreign slot)", s)
		}
		a.used[s] = false
		a.nUsed--
		a.free = append(a.free, s)
	}
}

// modelKey converts raw tokens into key words and the aligned atom count,
// independently of the tree's own conversion.
func modelKey(tokens []uint32, page int, bigram bool) ([]uint32, int) {
	if !bigram {
		n := len(tokens) / page * page
		return slices.Clone(tokens[:n]), n
	}
	atoms := max(len(tokens)-1, 0) / page * page
	w := make([]uint32, 0, 2*atoms)
	for i := range atoms {
		w = append(w, tokens[i], tokens[i+1])
	}
	return w, atoms
}

// refPage is one cached page of the reference.
type refPage struct {
	ns    int
	words []uint32 // key words from the root through the end of this page
	slots []int32  // the page's Full slots
	swa   bool     // SWA KV is held for the page
	mamba int32    // the state saved after the page's last atom; -1: none
}

// refKey names a cached prefix: its namespace and key words.
func refKey(ns int, words []uint32) string {
	b := make([]byte, 0, 1+4*len(words))
	b = append(b, byte(ns))
	for _, w := range words {
		b = binary.LittleEndian.AppendUint32(b, w)
	}
	return string(b)
}

type heldLock struct {
	r      core.Receipt
	ns     int
	tokens []uint32 // the matched request
	words  []uint32 // the locked prefix
	slots  []int32
	skip   core.ComponentSet
	// early is set once UnlockSWA released the SWA (and Mamba) part.
	early bool
}

// d is the locked prefix length in atoms.
func (l *heldLock) d() int { return len(l.slots) }

// swaLive and mambaLive report whether the lock still guarantees the
// component's data.
func (l *heldLock) swaLive() bool   { return !l.skip.Has(core.SWA) && !l.early }
func (l *heldLock) mambaLive() bool { return !l.skip.Has(core.Mamba) && !l.early }

type modelRequest struct {
	lock   heldLock
	ns     int
	tokens []uint32
	fresh  []int32 // slots for atoms [prev, L), each with an SWA slot in SWA trees
	prev   int
	mslot  int32 // the request's Mamba state slot; -1: none
	branch int   // the SWA branching length its match reported, or 0
}

type model struct {
	t       *testing.T
	tree    *core.Tree
	rng     *rand.Rand
	page    int
	width   int
	bigram  bool
	set     core.ComponentSet
	window  int // SWA window in atoms
	grid    int // Mamba branching grid: lcm(chunk, page)
	pathCap int // Mamba states per path; 0: no cap
	streams [][]uint32
	cap     int // eviction pressure: keep the tree near this many atoms

	ref   map[string]*refPage
	pools *hybridPools
	locks []*heldLock
	reqs  []*modelRequest
	// walking is set while a step-wise eviction is open.
	walking  bool
	walkComp core.Component
	// walkWant and walkFreed track the open walk's target and progress.
	walkWant, walkFreed int
	stats               map[string]int
}

func nsIndex(ns core.Namespace) int {
	for i, n := range testNamespaces {
		if n == ns {
			return i
		}
	}
	return -1
}

func (m *model) has(c core.Component) bool { return m.set.Has(c) }

// pw is the number of key words per page.
func (m *model) pw() int { return m.page * m.width }

// end is the atom position just past page p.
func (m *model) end(p *refPage) int { return len(p.words) / m.width }

func (m *model) inspect(id core.NodeID) core.NodeInfo {
	info, err := m.tree.Inspect(id)
	if err != nil {
		require.NoError(m.t, err)
	}
	return info
}

// chain returns the cached pages along words (at most L atoms), root first.
func (m *model) chain(ns int, words []uint32, L int) []*refPage {
	var out []*refPage
	for j := 1; j*m.page <= L; j++ {
		p := m.ref[refKey(ns, words[:j*m.pw()])]
		if p == nil {
			break
		}
		out = append(out, p)
	}
	return out
}

// usable reports whether a request may use the first k pages of a chain:
// SWA KV over the last window before the end, and a state at the end.
func (m *model) usable(ch []*refPage, k int) bool {
	if k == 0 {
		return true
	}
	if m.has(core.Mamba) && ch[k-1].mamba < 0 {
		return false
	}
	if m.has(core.SWA) {
		end := k * m.page
		for j := k - 1; j >= 0 && (j+1)*m.page > end-m.window; j-- {
			if !ch[j].swa {
				return false
			}
		}
	}
	return true
}

// refHit is the reference's answer to a match.
type refHit struct {
	full  int     // longest Full-cached prefix
	dev   int     // longest usable prefix
	slots []int32 // its Full slots
	state int32   // the state at its end, or -1
}

// refMatch is the naive match: the longest usable cached prefix.
func (m *model) refMatch(ns int, words []uint32, L int) refHit {
	ch := m.chain(ns, words, L)
	h := refHit{full: len(ch) * m.page, state: -1}
	k := len(ch)
	for !m.usable(ch, k) {
		k--
	}
	h.dev = k * m.page
	for _, p := range ch[:k] {
		h.slots = append(h.slots, p.slots...)
	}
	if k > 0 && m.has(core.Mamba) {
		h.state = ch[k-1].mamba
	}
	return h
}

// covers reports whether lock l's prefix contains page p.
func covers(l *heldLock, p *refPage) bool {
	return l.ns == p.ns && len(l.words) >= len(p.words) && slices.Equal(l.words[:len(p.words)], p.words)
}

// fullLocked: some lock holds p's Full slots.
func (m *model) fullLocked(p *refPage) bool {
	for _, l := range m.allLocks() {
		if covers(l, p) {
			return true
		}
	}
	return false
}

// swaGuarded: some live SWA lock needs p's SWA KV (p lies in the last
// window of its prefix).
func (m *model) swaGuarded(p *refPage) bool {
	for _, l := range m.allLocks() {
		if l.swaLive() && covers(l, p) && m.end(p) > l.d()-m.window {
			return true
		}
	}
	return false
}

// swaUnderLock: some live SWA lock's prefix contains p (an upper bound of
// what the tree's lock segments may protect).
func (m *model) swaUnderLock(p *refPage) bool {
	for _, l := range m.allLocks() {
		if l.swaLive() && covers(l, p) {
			return true
		}
	}
	return false
}

// mambaLocked: a live Mamba lock was taken at p's end.
func (m *model) mambaLocked(p *refPage) bool {
	for _, l := range m.allLocks() {
		if l.mambaLive() && l.ns == p.ns && slices.Equal(l.words, p.words) {
			return true
		}
	}
	return false
}

// children counts the distinct pages that extend p's prefix.
func (m *model) children(p *refPage) int {
	n := 0
	for _, q := range m.ref {
		if q.ns == p.ns && len(q.words) == len(p.words)+m.pw() && slices.Equal(q.words[:len(p.words)], p.words) {
			n++
		}
	}
	return n
}

// capDrops predicts the states the per-path cap drops on the path ending
// after L atoms of words: the shallowest first, while there are more than
// the cap, sparing the tail's own, locked ones and those where the path
// does not continue in exactly one way.
func (m *model) capDrops(ns int, words []uint32, L int) []int32 {
	if m.pathCap <= 0 {
		return nil
	}
	ch := m.chain(ns, words, L)
	var holders []*refPage
	for _, p := range ch {
		if p.mamba >= 0 {
			holders = append(holders, p)
		}
	}
	excess := len(holders) - m.pathCap
	var out []int32
	for _, p := range holders {
		if excess <= 0 || p == ch[len(ch)-1] {
			break
		}
		if m.mambaLocked(p) || m.children(p) != 1 {
			continue
		}
		out = append(out, p.mamba)
		excess--
	}
	return out
}

func (m *model) allLocks() []*heldLock {
	out := slices.Clone(m.locks)
	for _, r := range m.reqs {
		out = append(out, &r.lock)
	}
	return out
}

func (m *model) pickNS() int { return m.rng.IntN(len(testNamespaces)) }

// match matches tokens in the tree and the reference and requires the
// same answer.
func (m *model) match(ns core.Namespace, tokens []uint32) core.MatchResult {
	t := m.t
	words, L := modelKey(tokens, m.page, m.bigram)
	want := refHit{state: -1}
	if i := nsIndex(ns); i >= 0 {
		want = m.refMatch(i, words, L)
	}
	// A non-empty dst must be kept and appended to.
	dst := []int32{-7}
	res, err := m.tree.Match(dst, ns, tokens)
	require.NoError(t, err)
	eqf(t, want.dev, res.DeviceLen, "match length of %v in %+v", tokens, ns)
	eqf(t, int32(-7), res.Indices[0], "dst kept")
	got := res.Indices[1:]
	sameSlice(t, want.slots, got, "matched slots")
	w, s := pathOf(t, m.tree, res.LastDevice)
	sameSlice(t, words[:want.dev*m.width], w, "LastDevice does not end the matched prefix")
	sameSlice(t, want.slots, s)
	eqf(t, res.LastDevice, res.Best, "Best")
	eqf(t, res.LastDevice, res.LastHost, "LastHost")
	eqf(t, want.full, res.FullKVHitLen, "FullKVHitLen")
	eqf(t, 0, res.HostHitLen, "host hit")
	eqf(t, 0, res.SWAHostHitLen, "SWA host hit")
	eqf(t, 0, res.MambaHostHitLen, "Mamba host hit")
	eqf(t, 0, len(res.Actions), "match actions")
	swaBranch, mambaBranch := -1, -1
	if m.has(core.SWA) && want.full > want.dev {
		swaBranch = want.full
	}
	if a := want.full / max(m.grid, 1) * m.grid; m.has(core.Mamba) && a > want.dev {
		mambaBranch = a
	}
	eqf(t, swaBranch, res.SWABranchingSeqlen, "SWA branching length")
	eqf(t, mambaBranch, res.MambaBranchingSeqlen, "Mamba branching length")
	eqf(t, want.state, res.MambaSlot, "the state to fork")
	m.stats["match"]++
	if want.dev > 0 {
		m.stats["match-hit"]++
	}
	if want.full > want.dev {
		m.stats["match-aux-short"]++
	}
	return res
}

// randomSkip picks the components a lock leaves untaken.
func (m *model) randomSkip() core.ComponentSet {
	var skip core.ComponentSet
	if m.has(core.Mamba) && m.rng.IntN(4) == 0 {
		skip = skip.With(core.Mamba)
	}
	if m.has(core.SWA) && m.rng.IntN(8) == 0 {
		skip = skip.With(core.SWA)
		if m.has(core.Mamba) {
			skip = skip.With(core.Mamba)
		}
	}
	return skip
}

func (m *model) lockMatch(ns int, tokens []uint32, skip core.ComponentSet) (*heldLock, core.MatchResult) {
	t := m.t
	res := m.match(testNamespaces[ns], tokens)
	words, L := modelKey(tokens, m.page, m.bigram)
	// Delta counts the Full atoms this lock newly protects.
	delta := 0
	for _, p := range m.chain(ns, words, min(L, res.DeviceLen)) {
		if !m.fullLocked(p) {
			delta += m.page
		}
	}
	r, err := m.tree.Lock(res.LastDevice, skip)
	require.NoError(t, err)
	require.Equal(t, res.LastDevice, r.Node)
	require.Equal(t, skip, r.Skipped)
	require.Equal(t, delta, r.Delta, "receipt delta")
	l := &heldLock{r: r, ns: ns, tokens: tokens, words: words[:res.DeviceLen*m.width], slots: slices.Clone(res.Indices[1:]), skip: skip}
	m.checkSWAStamp(l)
	return l, res
}

// checkSWAStamp: an SWA lock reaching the window stamps the node where
// the covered length (from the locked end up) first reaches it; a shorter
// one reaches the root and carries no stamp.
func (m *model) checkSWAStamp(l *heldLock) {
	t := m.t
	if !m.has(core.SWA) || l.skip.Has(core.SWA) || l.d() < m.window {
		eqf(t, int64(0), l.r.SWAUUID, "receipt %d: SWA stamp of a lock that covers no whole window", l.r.Serial)
		return
	}
	require.NotZero(t, l.r.SWAUUID, "receipt %d: an SWA lock over a whole window carries a stamp", l.r.Serial)
	end := l.d()
	for id := l.r.Node; id != m.tree.Root(); {
		info := m.inspect(id)
		start := end - len(info.Key)/m.width
		if l.d()-start >= m.window {
			eqf(t, l.r.SWAUUID, info.SWAUUID, "receipt %d: the stamp belongs on %v, where the window is reached", l.r.Serial, id)
			return
		}
		id, end = info.Parent, start
	}
	require.Fail(t, "SWA stamp", "receipt %d: the window is never reached", l.r.Serial)
}

func (m *model) unlock(l *heldLock) {
	t := m.t
	skipSWA := l.early
	if !m.has(core.SWA) {
		skipSWA = m.rng.IntN(2) == 0 // ignored without SWA
	} else if m.rng.IntN(8) == 0 {
		// The wrong skipSWA is refused and changes nothing.
		before := m.tree.Render()
		require.ErrorIs(t, m.tree.Unlock(l.r.Node, l.r, !l.early), core.ErrReceipt)
		require.Equal(t, before, m.tree.Render())
	}
	require.NoError(t, m.tree.Unlock(l.r.Node, l.r, skipSWA))
	// A second release of the same receipt is refused and changes nothing.
	before := m.tree.Render()
	require.ErrorIs(t, m.tree.Unlock(l.r.Node, l.r, skipSWA), core.ErrReceipt)
	require.Equal(t, before, m.tree.Render())
}

// unlockSWA releases a lock's SWA part early and judges the frees.
func (m *model) unlockSWA(l *heldLock) {
	t := m.t
	snap := m.snapshot()
	acts, err := m.tree.UnlockSWA(l.r.Node, l.r)
	require.NoError(t, err)
	l.early = true
	m.applyFrees(acts, 0, snap)
	m.stats["unlock-swa"]++
	m.stats["unlock-swa-frees"] += len(acts)
	before := m.tree.Render()
	_, err = m.tree.UnlockSWA(l.r.Node, l.r)
	require.ErrorIs(t, err, core.ErrReceipt, "a second early release")
	require.Equal(t, before, m.tree.Render())
}

// insertArgs describe one insert of a request's sequence.
type insertArgs struct {
	ns     int
	tokens []uint32
	prefix []int32 // the request's cached prefix (the tree's slots)
	fresh  []int32 // the request's slots for atoms [len(prefix), L)
	e      int     // SWA evicted length: fresh slots below it lost their SWA slots
	mslot  int32   // the request's state; -1 in trees without Mamba
	branch int     // SWABranchingSeqlen
}

// insertGot collects what an insert's actions did.
type insertGot struct {
	kv, fullOnly, rebuild []int32
	recover               [][2]int32 // (kept, incoming)
	capActions            int
	capDrops              []int32
}

// insert predicts an insert with the reference, runs it on the tree
// (executing every step's actions on the pools) and compares.
func (m *model) insert(a insertArgs) core.InsertResult {
	t := m.t
	hasSWA, hasMamba := m.has(core.SWA), m.has(core.Mamba)
	words, L := modelKey(a.tokens, m.page, m.bigram)
	prev := len(a.prefix)
	require.Equal(t, L, prev+len(a.fresh))
	ch := m.chain(a.ns, words, L)
	P := len(ch) * m.page
	require.GreaterOrEqual(t, P, prev, "the request's locked prefix vanished")
	var cached []int32
	for _, p := range ch {
		cached = append(cached, p.slots...)
	}
	sameSlice(t, cached[:prev], a.prefix, "the request's prefix is not the tree's")
	slots := append(slices.Clone(a.prefix), a.fresh...)
	// Unaligned tails carry extra slots the tree must ignore.
	slots = append(slots, 999999)

	// The prediction, page by page; the reference is updated as it goes
	// (each page's outcome depends only on its own state and the locks).
	var want insertGot
	adopt := [2][]bool{make([]bool, L), make([]bool, L)} // Full, SWA
	mark := func(k, at int) {
		for x := at; x < at+m.page; x++ {
			adopt[k][x] = true
		}
	}
	for j := 0; j < L/m.page; j++ {
		at := j * m.page
		in := slots[at : at+m.page]
		if at < prev {
			continue // the request's own prefix
		}
		if j < len(ch) {
			p := ch[j]
			switch {
			case hasSWA && !p.swa && at >= a.e:
				// An SWA tombstone the request holds SWA KV for: recovered.
				if m.fullLocked(p) {
					for k := range in {
						want.recover = append(want.recover, [2]int32{p.slots[k], in[k]})
					}
					m.stats["recover-locked"]++
				} else {
					want.fullOnly = append(want.fullOnly, p.slots...)
					p.slots = slices.Clone(in)
					want.rebuild = append(want.rebuild, in...)
					mark(0, at)
					m.stats["recover"]++
				}
				p.swa = true
				mark(1, at)
			case hasSWA && at < a.e:
				want.fullOnly = append(want.fullOnly, in...)
			default:
				want.kv = append(want.kv, in...)
			}
			continue
		}
		p := &refPage{ns: a.ns, words: slices.Clone(words[:(j+1)*m.pw()]), slots: slices.Clone(in), swa: hasSWA && at >= a.e, mamba: -1}
		m.ref[refKey(a.ns, p.words)] = p
		mark(0, at)
		if p.swa {
			mark(1, at)
			want.rebuild = append(want.rebuild, in...)
		}
	}
	exist := !hasMamba || L == 0
	if hasMamba && L > 0 {
		last := m.ref[refKey(a.ns, words[:L*m.width])]
		if last.mamba >= 0 {
			exist = true
		} else {
			last.mamba = a.mslot
			if m.pathCap > 0 {
				want.capActions = 1
				want.capDrops = m.capDrops(a.ns, words, L)
			}
		}
	}

	track := m.rng.IntN(2) == 0
	step, err := m.tree.BeginInsert(core.InsertParams{
		Namespace:          testNamespaces[a.ns],
		Tokens:             a.tokens,
		Slots:              slots,
		PrevPrefixLen:      prev,
		Priority:           int64(m.rng.IntN(3)),
		Chunked:            m.rng.IntN(4) == 0,
		TrackAdopted:       track,
		SWAEvictedSeqlen:   a.e,
		SWABranchingSeqlen: a.branch,
		MambaSlot:          a.mslot,
	})
	require.NoError(t, err)
	var got insertGot
	key := words[:L*m.width]
	for {
		barrier := false
		for _, act := range step.Actions {
			barrier = barrier || !deferrable(act.Kind)
			m.execInsertAction(act, &got, key)
		}
		if step.Done {
			require.False(t, barrier, "the final step of an insert carries a barrier")
			break
		}
		require.True(t, barrier, "an insert suspended without a barrier")
		require.True(t, m.tree.InsertInFlight())
		require.NoError(t, m.tree.SanityCheck(), "inside an insert")
		m.stats["insert-suspend"]++
		step, err = m.tree.ResumeInsert()
		require.NoError(t, err)
	}
	res := step.Result
	require.Equal(t, P, res.PrefixLen)
	require.Equal(t, L, res.TotalLen)
	require.Equal(t, exist, res.MambaExist, "MambaExist")
	require.Equal(t, hasSWA && a.branch > 0 && L >= a.branch, res.SWABranchInserted)
	sameMultiset(t, want.kv, got.kv, "FreeDeviceKV slots")
	sameMultiset(t, want.fullOnly, got.fullOnly, "FreeDeviceKVFullOnly slots")
	sameMultiset(t, want.rebuild, got.rebuild, "SWARebuild slots")
	sameMultiset(t, want.recover, got.recover, "RecoverSWAWithLockedFull pairs")
	require.Equal(t, want.capActions, got.capActions, "MambaEvictExcessPathStates actions")
	sameMultiset(t, want.capDrops, got.capDrops, "states dropped by the path cap")
	m.stats["cap-drop"] += len(got.capDrops)
	if track && L > 0 {
		require.Equal(t, ranges(adopt[0]), res.Adopted[core.Full], "adopted full ranges")
		require.Equal(t, ranges(adopt[1]), res.Adopted[core.SWA], "adopted swa ranges")
		require.Empty(t, res.Adopted[core.Mamba])
	} else if !track {
		require.Nil(t, res.Adopted)
	}
	if L == 0 {
		require.Equal(t, m.tree.Root(), res.LastDevice)
	} else {
		w, s := pathOf(t, m.tree, res.LastDevice)
		sameSlice(t, key, w)
		var now []int32
		for _, p := range m.chain(a.ns, words, L) {
			now = append(now, p.slots...)
		}
		sameSlice(t, now, s, "the inserted path's slots")
	}
	if hasMamba && exist {
		m.pools.mamba.put(t, []int32{a.mslot}) // not adopted: the request frees it
	}
	m.stats["insert"]++
	if P > 0 {
		m.stats["insert-shared"]++
	}
	return res
}

// deferrable mirrors the action kinds the host may batch.
func deferrable(k core.ActionKind) bool {
	switch k {
	case core.ActionFreeDeviceKV, core.ActionFreeDeviceKVFullOnly, core.ActionReplaceWriteThroughOnSplit:
		return true
	}
	return false
}

// ranges turns a per-atom mask into maximal [start, end) runs.
func ranges(mask []bool) []core.Range {
	var out []core.Range
	for i := 0; i < len(mask); i++ {
		if !mask[i] {
			continue
		}
		j := i
		for j < len(mask) && mask[j] {
			j++
		}
		out = append(out, core.Range{Start: i, End: j})
		i = j
	}
	return out
}

// execInsertAction checks one insert action against the tree and
// executes it on the pools.
func (m *model) execInsertAction(a core.Action, got *insertGot, key []uint32) {
	t := m.t
	p := m.pools
	switch a.Kind {
	case core.ActionFreeDeviceKV:
		got.kv = append(got.kv, a.Slots...)
		p.freeFull(a.Slots, true)
	case core.ActionFreeDeviceKVFullOnly:
		got.fullOnly = append(got.fullOnly, a.Slots...)
		p.freeFull(a.Slots, false)
	case core.ActionSWARebuild:
		info := m.inspect(a.Node)
		sameSlice(t, info.Device[core.Full], a.Slots, "SWARebuild must name %v's full slots", a.Node)
		require.NotNil(t, info.Device[core.SWA], "SWARebuild of %v, which holds no SWA value", a.Node)
		for _, f := range a.Slots {
			_, ok := p.swaOf[f]
			require.Truef(t, ok, "SWARebuild: full slot %d has no SWA slot", f)
		}
		got.rebuild = append(got.rebuild, a.Slots...)
	case core.ActionRecoverSWAWithLockedFull:
		info := m.inspect(a.Node)
		sameSlice(t, info.Device[core.Full], a.Slots, "RecoverSWAWithLockedFull must name %v's full slots", a.Node)
		require.Positive(t, info.Lock[core.Full], "RecoverSWAWithLockedFull on an unlocked node")
		require.Len(t, a.Incoming, len(a.Slots))
		for k, f := range a.Incoming {
			s, ok := p.swaOf[f]
			require.Truef(t, ok, "RecoverSWAWithLockedFull: incoming slot %d has no SWA slot", f)
			_, had := p.swaOf[a.Slots[k]]
			require.Falsef(t, had, "RecoverSWAWithLockedFull: kept slot %d still has an SWA slot", a.Slots[k])
			p.swaOf[a.Slots[k]] = s
			delete(p.swaOf, f)
			got.recover = append(got.recover, [2]int32{a.Slots[k], f})
		}
		p.full.put(t, a.Incoming)
	case core.ActionMambaEvictExcessPathStates:
		got.capActions++
		w, _ := pathOf(t, m.tree, a.Node)
		sameSlice(t, key, w, "the path cap must run on the insert's tail")
		snap := m.snapshot()
		acts, err := m.tree.EvictExcessPathStates(a.Node)
		require.NoError(t, err)
		for _, x := range acts {
			require.Equal(t, core.Mamba, x.Component, "the path cap freed %v", x)
			got.capDrops = append(got.capDrops, x.Slots...)
		}
		m.applyFrees(acts, 0, snap)
	default:
		require.Failf(t, "unexpected insert action", "%v", a)
	}
}

// snapshot inspects every live node, before an operation that may free
// nodes, so that the actions naming them can be checked.
func (m *model) snapshot() map[core.NodeID]core.NodeInfo {
	out := map[core.NodeID]core.NodeInfo{}
	for _, id := range m.tree.Nodes() {
		out[id] = m.inspect(id)
	}
	return out
}

// applyFrees judges the frees of one eviction (or early release, or path
// cap) against the reference, updates it and frees the pools. node, when
// set, is the one node every action must name. It returns what was freed
// per component (atoms; states for Mamba).
func (m *model) applyFrees(acts []core.Action, node core.NodeID, snap map[core.NodeID]core.NodeInfo) [3]int {
	t := m.t
	var freed [3]int
	bySlot := map[int32]*refPage{}
	byState := map[int32]*refPage{}
	for _, p := range m.ref {
		bySlot[p.slots[0]] = p
		if p.mamba >= 0 {
			byState[p.mamba] = p
		}
	}
	pagesOf := func(a core.Action) []*refPage {
		var out []*refPage
		require.Zero(t, len(a.Slots)%m.page, "%v frees part of a page", a)
		for k := 0; k < len(a.Slots); k += m.page {
			p := bySlot[a.Slots[k]]
			if p == nil || m.ref[refKey(p.ns, p.words)] != p || !slices.Equal(p.slots, a.Slots[k:k+m.page]) {
				require.Failf(t, "free of uncached slots", "%v: slots %v are not a cached page", a, a.Slots[k:k+m.page])
			}
			out = append(out, p)
		}
		return out
	}
	for _, a := range acts {
		eqf(t, core.ActionFreeDeviceSlots, a.Kind, "eviction emitted %v", a)
		if node != 0 {
			eqf(t, node, a.Node, "a step's actions name its node: %v", a)
		}
		info, ok := snap[a.Node]
		eqf(t, true, ok, "%v names a node that did not exist", a)
		switch a.Component {
		case core.Full:
			if trimmingPolicy(m.tree.Policy()) && !m.tree.Components().Has(core.SWA) && !m.tree.Components().Has(core.Mamba) {
				// A trimming walk frees the end of the leaf: a suffix.
				dev := info.Device[core.Full]
				require.LessOrEqual(t, len(a.Slots), len(dev), "%v frees more than %v holds", a, a.Node)
				sameSlice(t, dev[len(dev)-len(a.Slots):], a.Slots, "%v must free the end of %v's full slots", a, a.Node)
			} else {
				sameSlice(t, info.Device[core.Full], a.Slots, "%v must free all of %v's full slots", a, a.Node)
			}
			for _, p := range pagesOf(a) {
				switch {
				case m.fullLocked(p):
					require.Failf(t, "bad full free", "%v frees a locked page", a)
				case p.swa:
					require.Failf(t, "bad full free", "%v frees full slots before their SWA", a)
				case p.mamba >= 0:
					require.Failf(t, "bad full free", "%v frees full slots before the state saved at their end", a)
				}
				delete(m.ref, refKey(p.ns, p.words))
			}
			m.pools.freeFull(a.Slots, false)
		case core.SWA:
			require.NotNil(t, info.Device[core.SWA], "%v: the node held no SWA value", a)
			sameSlice(t, info.Device[core.Full], a.Slots, "%v must name all of %v's full slots", a, a.Node)
			for _, p := range pagesOf(a) {
				switch {
				case !p.swa:
					require.Failf(t, "bad SWA free", "%v frees SWA the reference does not hold", a)
				case m.swaGuarded(p):
					require.Failf(t, "bad SWA free", "%v frees SWA in the window of a live SWA lock", a)
				}
				p.swa = false
			}
			m.pools.freeSWA(a.Slots)
		case core.Mamba:
			require.Len(t, a.Slots, 1)
			sameSlice(t, info.Device[core.Mamba], a.Slots, "%v must free %v's state", a, a.Node)
			p := byState[a.Slots[0]]
			require.NotNilf(t, p, "%v frees a state the reference does not hold", a)
			require.Equalf(t, p.mamba, a.Slots[0], "%v frees a state twice", a)
			require.Falsef(t, m.mambaLocked(p), "%v frees a locked state", a)
			p.mamba = -1
			m.pools.mamba.put(t, a.Slots)
			freed[core.Mamba]++
			continue
		default:
			require.Failf(t, "bad component", "%v", a)
		}
		freed[a.Component] += len(a.Slots)
	}
	// Cascade: a node that keeps its Full slots but loses its SWA loses its
	// state too (SWA ranks above Mamba inside the tree).
	for _, a := range acts {
		if a.Component != core.SWA || snap[a.Node].Device[core.Mamba] == nil {
			continue
		}
		dropped := false
		for _, b := range acts {
			dropped = dropped || (b.Node == a.Node && b.Component == core.Mamba)
		}
		require.Truef(t, dropped, "%v drops %v's SWA but keeps its state", a, a.Node)
	}
	// What is left is closed under prefixes: evictions remove leaves.
	for _, p := range m.ref {
		if len(p.words) > m.pw() && m.ref[refKey(p.ns, p.words[:len(p.words)-m.pw()])] == nil {
			require.Failf(t, "eviction freed a non-leaf", "page %s is cached but its parent is not", fmtSeq(p.ns, p.words, p.slots))
		}
	}
	for c, n := range freed {
		m.stats["evicted-"+core.Component(c).String()] += n
	}
	return freed
}

// checkLockedPrefixes: after an eviction, every prefix under a lock that
// holds all components still matches in full, with the same slots.
func (m *model) checkLockedPrefixes() {
	for _, l := range m.allLocks() {
		if l.skip != 0 || l.early {
			continue
		}
		res := m.match(testNamespaces[l.ns], l.tokens)
		require.GreaterOrEqual(m.t, res.DeviceLen, l.d(), "a locked prefix lost its cache")
		sameSlice(m.t, l.slots, res.Indices[1:1+l.d()], "a locked prefix changed slots")
	}
}

func (m *model) evictOneShot(c core.Component, want int) {
	t := m.t
	before := m.tree.Evictable(c)
	var order []core.NodeID
	if c == core.Full {
		order = expectedEvictionOrder(t, m.tree, want)
	}
	snap := m.snapshot()
	acts, freed, err := m.tree.Evict(c, want, nil)
	require.NoError(t, err)
	require.GreaterOrEqual(t, freed, min(want, before))
	if freed < want {
		require.Zero(t, m.tree.Evictable(c), "evict %s stopped short with evictable data left", c)
	}
	got := m.applyFrees(acts, 0, snap)
	require.Equal(t, freed, got[c], "evict %s reports what it freed", c)
	if c == core.Full {
		var leaves []core.NodeID
		last := 0
		for _, a := range acts {
			if a.Component == core.Full {
				leaves = append(leaves, a.Node)
				last = len(a.Slots)
			}
		}
		// It stops as soon as want is met: all but the last leaf fall short.
		if len(leaves) > 0 {
			require.Less(t, freed-last, want, "evict freed more leaves than needed")
		} else {
			require.Zero(t, freed)
		}
		if order != nil {
			sameSlice(t, order, leaves, "eviction order under policy %s", m.tree.Policy())
		}
	}
	m.stats["evict-"+c.String()]++
	m.checkLockedPrefixes()
}

// randomComp picks one of the tree's components.
func (m *model) randomComp() core.Component {
	var cs []core.Component
	for c := core.Full; c <= core.Mamba; c++ {
		if m.has(c) {
			cs = append(cs, c)
		}
	}
	return cs[m.rng.IntN(len(cs))]
}

// pickE chooses a request's SWA evicted length: usually what leaves its
// last window, sometimes anything up to L.
func (m *model) pickE(L int) int {
	if !m.has(core.SWA) || m.rng.IntN(3) == 0 {
		return 0
	}
	top := max(L-m.window, 0) / m.page
	if m.rng.IntN(6) == 0 {
		top = L / m.page
	}
	return m.rng.IntN(top+1) * m.page
}

// finish inserts a request's sequence: its SWA slots below e are freed
// first (they left its window), then the insert runs.
func (m *model) finish(ns int, tokens []uint32, prefix, fresh []int32, mslot int32, branch int) {
	_, L := modelKey(tokens, m.page, m.bigram)
	e := m.pickE(L)
	if prev := len(prefix); e > prev {
		m.pools.freeSWA(fresh[:e-prev])
	}
	m.insert(insertArgs{ns: ns, tokens: tokens, prefix: prefix, fresh: fresh, e: e, mslot: mslot, branch: branch})
}

// newState allocates a request's Mamba state (-1 without Mamba).
func (m *model) newState() int32 {
	if !m.has(core.Mamba) {
		return -1
	}
	return m.pools.mamba.get(1)[0]
}

func (m *model) step() string {
	t := m.t
	rng := m.rng
	if m.walking && rng.IntN(3) != 0 {
		snap := m.snapshot()
		st, err := m.tree.EvictNext()
		require.NoError(t, err)
		if m.walkFreed >= m.walkWant {
			require.True(t, st.Done, "the walk went on after freeing %d of %d", m.walkFreed, m.walkWant)
		}
		m.walkFreed += st.Freed
		if st.Done {
			require.Zero(t, st.Node)
			require.Empty(t, st.Actions)
			if m.walkComp != core.Full && m.walkFreed < m.walkWant {
				require.Zero(t, m.tree.Evictable(m.walkComp), "the %s walk ended with evictable data left", m.walkComp)
			}
			if rng.IntN(2) == 0 {
				m.tree.EvictEnd()
				m.walking = false
			}
			return "evict-next(done)"
		}
		got := m.applyFrees(st.Actions, st.Node, snap)
		require.Equal(t, st.Freed, got[m.walkComp], "the step reports what it freed")
		require.Positive(t, st.Freed, "a step that frees nothing")
		if st.Actions[len(st.Actions)-1].Component == core.Full {
			_, err := m.tree.Inspect(st.Node)
			require.ErrorIs(t, err, core.ErrStaleNode, "an evicted leaf's handle must go stale")
		}
		if rng.IntN(8) == 0 {
			m.tree.EvictEnd()
			m.walking = false
		}
		m.checkLockedPrefixes()
		return "evict-next"
	}
	if !m.walking {
		full, _ := m.tree.TotalSize()
		if full > m.cap {
			m.evictOneShot(core.Full, full-m.cap/2)
			return "evict(pressure)"
		}
		if n := m.tree.Evictable(core.SWA) + m.tree.Protected(core.SWA); m.has(core.SWA) && n > m.cap/2 && rng.IntN(2) == 0 {
			m.evictOneShot(core.SWA, n-m.cap/4)
			return "evict-swa(pressure)"
		}
		if n := m.tree.Evictable(core.Mamba) + m.tree.Protected(core.Mamba); m.has(core.Mamba) && n > 10 && rng.IntN(2) == 0 {
			m.evictOneShot(core.Mamba, n-5)
			return "evict-mamba(pressure)"
		}
	}
	switch r := rng.IntN(100); {
	case r < 20: // plain insert: match, then insert at once
		ns := m.pickNS()
		tok := randomTokens(rng, m.streams)
		_, L := modelKey(tok, m.page, m.bigram)
		var prefix []int32
		branch := 0
		if rng.IntN(2) == 0 {
			res := m.match(testNamespaces[ns], tok)
			prefix = slices.Clone(res.Indices[1:])
			branch = max(res.SWABranchingSeqlen, 0)
		}
		fresh := m.pools.allocKV(L-len(prefix), m.has(core.SWA))
		m.finish(ns, tok, prefix, fresh, m.newState(), branch)
		return "insert"
	case r < 31: // a request arrives: match + lock, allocate the rest
		ns := m.pickNS()
		tok := randomTokens(rng, m.streams)
		l, res := m.lockMatch(ns, tok, m.randomSkip())
		_, L := modelKey(tok, m.page, m.bigram)
		prev := l.d()
		m.reqs = append(m.reqs, &modelRequest{lock: *l, ns: ns, tokens: tok, fresh: m.pools.allocKV(L-prev, m.has(core.SWA)),
			prev: prev, mslot: m.newState(), branch: max(res.SWABranchingSeqlen, 0)})
		return "request-begin"
	case r < 43: // a request finishes: insert the whole sequence, unlock
		if len(m.reqs) == 0 {
			return "noop"
		}
		k := rng.IntN(len(m.reqs))
		q := m.reqs[k]
		if rng.IntN(10) == 0 {
			// Aborted: the request frees its own slots and unlocks.
			m.pools.freeFull(q.fresh, true)
			if q.mslot >= 0 {
				m.pools.mamba.put(t, []int32{q.mslot})
			}
			m.unlock(&q.lock)
			m.reqs = slices.Delete(m.reqs, k, k+1)
			return "request-abort"
		}
		// The request stays listed during its insert: its lock counts.
		m.finish(q.ns, q.tokens, q.lock.slots, q.fresh, q.mslot, q.branch)
		m.unlock(&q.lock)
		m.reqs = slices.Delete(m.reqs, k, k+1)
		return "request-end"
	case r < 53:
		ns := m.pickNS()
		tok := randomTokens(rng, m.streams)
		if rng.IntN(10) == 0 {
			m.match(neverInserted, tok)
		} else {
			m.match(testNamespaces[ns], tok)
		}
		return "match"
	case r < 59:
		if len(m.locks) < 12 {
			l, _ := m.lockMatch(m.pickNS(), randomTokens(rng, m.streams), m.randomSkip())
			m.locks = append(m.locks, l)
		}
		return "lock"
	case r < 65:
		if len(m.locks) == 0 {
			return "noop"
		}
		k := rng.IntN(len(m.locks))
		m.unlock(m.locks[k])
		m.locks = slices.Delete(m.locks, k, k+1)
		return "unlock"
	case r < 70: // release the SWA part of a lock early
		if !m.has(core.SWA) {
			return "noop"
		}
		var cand []*heldLock
		for _, l := range m.allLocks() {
			if l.swaLive() {
				cand = append(cand, l)
			}
		}
		if len(cand) == 0 {
			return "noop"
		}
		m.unlockSWA(cand[rng.IntN(len(cand))])
		return "unlock-swa"
	case r < 78:
		if m.walking {
			before := m.tree.Render()
			_, _, err := m.tree.Evict(m.randomComp(), 1, nil)
			require.ErrorIs(t, err, core.ErrEvictionInFlight)
			require.Equal(t, before, m.tree.Render())
			return "evict(busy)"
		}
		c := m.randomComp()
		want := rng.IntN(3 * m.page * 4)
		if c == core.Mamba {
			want = rng.IntN(4)
		}
		m.evictOneShot(c, want)
		return "evict"
	case r < 86:
		if m.walking {
			require.ErrorIs(t, m.tree.EvictStart(m.randomComp(), 1), core.ErrEvictionInFlight)
			return "evict-start(busy)"
		}
		m.walkComp = m.randomComp()
		m.walkWant, m.walkFreed = rng.IntN(8*m.page+1), 0
		if m.walkComp == core.Mamba {
			m.walkWant = rng.IntN(5)
		}
		require.NoError(t, m.tree.EvictStart(m.walkComp, m.walkWant))
		m.walking = true
		return "evict-start"
	case r < 89:
		if m.walking {
			m.tree.EvictEnd()
			m.walking = false
		}
		return "evict-end"
	case r < 96: // enforce the path cap on a matched prefix
		ns := m.pickNS()
		tok := randomTokens(rng, m.streams)
		res := m.match(testNamespaces[ns], tok)
		if !m.has(core.Mamba) {
			before := m.tree.Render()
			_, err := m.tree.EvictExcessPathStates(res.LastDevice)
			require.ErrorIs(t, err, core.ErrInvalidArgument)
			require.Equal(t, before, m.tree.Render())
			return "path-cap(no mamba)"
		}
		words, _ := modelKey(tok, m.page, m.bigram)
		want := m.capDrops(ns, words, res.DeviceLen)
		snap := m.snapshot()
		acts, err := m.tree.EvictExcessPathStates(res.LastDevice)
		require.NoError(t, err)
		var got []int32
		for _, a := range acts {
			got = append(got, a.Slots...)
		}
		m.applyFrees(acts, 0, snap)
		sameMultiset(t, want, got, "states dropped by the path cap")
		m.stats["cap-drop"] += len(got)
		return "path-cap"
	case r < 99:
		return "noop"
	default:
		m.tree.Reset()
		// The host drops its whole pool: aborted requests free their
		// slots, everything the tree held is gone.
		m.pools = newHybridPools(t)
		m.ref, m.locks, m.reqs, m.walking = map[string]*refPage{}, nil, nil, false
		m.stats["reset"]++
		return "reset"
	}
}

// flatNode is one tree node with its namespace and root-to-node key.
type flatNode struct {
	info  core.NodeInfo
	ns    int
	words []uint32
}

// flatten renders the tree as reference pages (one per page of every
// node) and lists its nodes.
func (m *model) flatten() (map[string]refPage, []flatNode) {
	t := m.t
	pages := map[string]refPage{}
	var nodes []flatNode
	var walk func(id core.NodeID, ns int, words []uint32)
	walk = func(id core.NodeID, ns int, words []uint32) {
		info := m.inspect(id)
		if id != m.tree.Root() {
			ns = nsIndex(info.Namespace)
			if ns < 0 {
				require.Failf(t, "bad namespace", "node in unknown namespace %+v", info.Namespace)
			}
			if info.Device[core.Full] == nil {
				require.Failf(t, "evicted node", "%v: no device value in a tree without a host tier", id)
			}
			n := len(info.Key) / m.pw()
			for k := range n {
				w := append(slices.Clip(words), info.Key[:(k+1)*m.pw()]...)
				p := refPage{ns: ns, words: w, slots: info.Device[core.Full][k*m.page : (k+1)*m.page], swa: info.Device[core.SWA] != nil, mamba: -1}
				if k == n-1 && info.Device[core.Mamba] != nil {
					p.mamba = info.Device[core.Mamba][0]
				}
				pages[refKey(ns, w)] = p
			}
			for _, v := range info.Host {
				if v != nil {
					require.Failf(t, "host value", "%v: a host value without a host tier", id)
				}
			}
			words = append(slices.Clip(words), info.Key...)
			nodes = append(nodes, flatNode{info: info, ns: ns, words: words})
		}
		for _, c := range info.Children {
			walk(c, ns, words)
		}
	}
	walk(m.tree.Root(), 0, nil)
	return pages, nodes
}

func renderPage(p *refPage) string {
	s := fmtSeq(p.ns, p.words, p.slots)
	if p.swa {
		s += " swa"
	}
	if p.mamba >= 0 {
		s += " state=" + strconv.Itoa(int(p.mamba))
	}
	return s
}

// check runs after every step: sanity, equality with the reference, slot
// ownership in every pool, sizes and lock counts.
func (m *model) check(op string) {
	t := m.t
	require.NoError(t, m.tree.SanityCheck(), "after %s", op)

	pages, nodes := m.flatten()
	same := len(pages) == len(m.ref)
	for k, p := range m.ref {
		q, ok := pages[k]
		if !ok || q.swa != p.swa || q.mamba != p.mamba || !slices.Equal(q.slots, p.slots) {
			same = false
			break
		}
	}
	if !same {
		var want, got []string
		for _, p := range m.ref {
			want = append(want, renderPage(p))
		}
		for _, p := range pages {
			got = append(got, renderPage(&p))
		}
		slices.Sort(want)
		slices.Sort(got)
		sameSlice(t, want, got, "after %s: tree pages differ from the reference", op)
	}

	m.checkOwnership(op)
	m.checkSizes(op)
	m.checkLockCounts(nodes, op)

	for _, l := range m.allLocks() {
		words, slots := pathOf(t, m.tree, l.r.Node)
		sameSlice(t, l.words, words, "after %s: locked prefix of receipt %d changed", op, l.r.Serial)
		sameSlice(t, l.slots, slots, "after %s: locked slots of receipt %d changed", op, l.r.Serial)
	}
	eqf(t, len(m.allLocks()), m.tree.LiveReceiptCount(), "after %s: live receipts", op)
	eqf(t, m.walking, m.tree.EvictionInFlight(), "after %s: eviction in flight", op)
	eqf(t, false, m.tree.InsertInFlight(), "after %s: an insert left suspended", op)
}

// checkOwnership: every allocated slot of every pool has exactly one
// owner, the tree (per the reference) or one in-flight request; SWA slots
// are reached through the Full slots that map to them.
func (m *model) checkOwnership(op string) {
	t := m.t
	p := m.pools
	owner := make([]string, p.full.next)
	nOwned := 0
	own := func(s int32, who string) {
		if !p.full.isUsed(s) {
			require.Failf(t, "slot freed while in use", "after %s: slot %d held by the %s but not allocated", op, s, who)
		}
		if owner[s] != "" {
			require.Failf(t, "slot held twice", "after %s: slot %d held by the %s and the %s", op, s, owner[s], who)
		}
		owner[s] = who
		nOwned++
	}
	nSWA := 0
	for _, pg := range m.ref {
		for _, s := range pg.slots {
			own(s, "tree")
			if _, ok := p.swaOf[s]; ok != pg.swa {
				require.Failf(t, "SWA slot ownership", "after %s: page %s: full slot %d maps to an SWA slot: %v", op, renderPage(pg), s, ok)
			}
			if pg.swa {
				nSWA++
			}
		}
	}
	states := make([]string, p.mamba.next)
	nStates := 0
	ownState := func(s int32, who string) {
		if !p.mamba.isUsed(s) || states[s] != "" {
			require.Failf(t, "state ownership", "after %s: state %d held by the %s (allocated: %v, also held by: %q)", op, s, who, p.mamba.isUsed(s), states[s])
		}
		states[s] = who
		nStates++
	}
	for _, pg := range m.ref {
		if pg.mamba >= 0 {
			ownState(pg.mamba, "tree")
		}
	}
	for _, r := range m.reqs {
		for _, s := range r.fresh {
			own(s, "request")
			_, ok := p.swaOf[s]
			if !ok && m.has(core.SWA) {
				require.Failf(t, "SWA slot ownership", "after %s: request slot %d lost its SWA slot", op, s)
			}
			if ok {
				nSWA++
			}
		}
		if r.mslot >= 0 {
			ownState(r.mslot, "request")
		}
	}
	eqf(t, p.full.nUsed, nOwned, "after %s: full slots allocated vs owned (leak)", op)
	eqf(t, nSWA, len(p.swaOf), "after %s: SWA mappings vs owners", op)
	eqf(t, p.swa.nUsed, nSWA, "after %s: SWA slots allocated vs owned (leak)", op)
	eqf(t, p.mamba.nUsed, nStates, "after %s: states allocated vs owned (leak)", op)
}

// checkSizes compares the tree's size counters with the reference.
func (m *model) checkSizes(op string) {
	t := m.t
	var lockedPages, swaPages, swaLo, swaHi, states, lockedStates int
	for _, p := range m.ref {
		if m.fullLocked(p) {
			lockedPages++
		}
		if p.swa {
			swaPages++
			if m.swaGuarded(p) {
				swaLo++
			}
			if m.swaUnderLock(p) {
				swaHi++
			}
		}
		if p.mamba >= 0 {
			states++
			if m.mambaLocked(p) {
				lockedStates++
			}
		}
	}
	full, aux := m.tree.TotalSize()
	eqf(t, len(m.ref)*m.page, full, "after %s: full size", op)
	eqf(t, swaPages*m.page+states, aux, "after %s: aux size", op)
	eqf(t, lockedPages*m.page, m.tree.Protected(core.Full), "after %s: protected full", op)
	eqf(t, (len(m.ref)-lockedPages)*m.page, m.tree.Evictable(core.Full), "after %s: evictable full", op)
	eqf(t, swaPages*m.page, m.tree.Protected(core.SWA)+m.tree.Evictable(core.SWA), "after %s: SWA size", op)
	require.GreaterOrEqual(t, m.tree.Protected(core.SWA), swaLo*m.page, "after %s: protected SWA below the locked windows", op)
	require.LessOrEqual(t, m.tree.Protected(core.SWA), swaHi*m.page, "after %s: protected SWA outside locked prefixes", op)
	eqf(t, lockedStates, m.tree.Protected(core.Mamba), "after %s: protected states", op)
	eqf(t, states-lockedStates, m.tree.Evictable(core.Mamba), "after %s: evictable states", op)
}

// checkLockCounts derives each node's lock counts from the reference's
// locks: Full from every lock whose prefix contains the node; Mamba from
// live Mamba locks taken exactly at its end; SWA between the live SWA
// locks whose last window reaches into the node and all those whose
// prefix contains it (splits may stretch a lock's segment).
func (m *model) checkLockCounts(nodes []flatNode, op string) {
	t := m.t
	locks := m.allLocks()
	for _, n := range nodes {
		end := len(n.words) / m.width
		var full, mamba, lo, hi uint32
		for _, l := range locks {
			if l.ns != n.ns || len(l.words) < len(n.words) || !slices.Equal(l.words[:len(n.words)], n.words) {
				continue
			}
			full++
			if m.has(core.SWA) && l.swaLive() {
				hi++
				if l.d()-m.window < end {
					lo++
				}
			}
			if m.has(core.Mamba) && l.mambaLive() && l.d() == end {
				mamba++
			}
		}
		lk := n.info.Lock
		if lk[core.Full] != full || lk[core.Mamba] != mamba || lk[core.SWA] < lo || lk[core.SWA] > hi {
			require.Failf(t, "lock counts", "after %s: %v locks full=%d swa=%d mamba=%d, the reference's locks give full=%d swa=[%d,%d] mamba=%d",
				op, n.info.ID, lk[core.Full], lk[core.SWA], lk[core.Mamba], full, lo, hi, mamba)
		}
	}
}

// modelOps overrides the model test's operations per run, for soak runs:
// go test ./core -run TestTree_Model -model.ops 100000
var modelOps = flag.Int("model.ops", 0, "operations per TestTree_Model run (0: default)")

// modelSeeds replaces the model test's seeds by 1..N, for soak runs:
// go test ./core -run TestTree_Model -model.seeds 20 -model.all
var modelSeeds = flag.Int("model.seeds", 0, "TestTree_Model: run seeds 1..N instead of the default ones")

// modelAll runs every seed for the hybrid component sets too.
var modelAll = flag.Bool("model.all", false, "TestTree_Model: every seed for every component set")

// modelSets are the supported component sets.
var modelSets = []struct {
	name  string
	comps []core.Component
}{
	{"full", []core.Component{core.Full}},
	{"full+swa", []core.Component{core.Full, core.SWA}},
	{"full+mamba", []core.Component{core.Full, core.Mamba}},
	{"full+swa+mamba", []core.Component{core.Full, core.SWA, core.Mamba}},
}

func TestTree_Model(t *testing.T) {
	ops := 1000
	seeds := []uint64{1, 0x5eed, 0xdecafbad}
	if testing.Short() {
		ops, seeds = 300, seeds[:1]
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
	policies := core.PolicyNames()
	for si, set := range modelSets {
		total := map[string]int{}
		for _, bigram := range []bool{false, true} {
			for pi, page := range []int{1, 2, 4, 16} {
				for k, seed := range seeds {
					// Hybrid sets run each page size once (bigram
					// alternating) with one seed, unless asked for all.
					if si > 0 && !*modelAll && (bigram != ((pi+si)%2 == 1) || len(seeds) > 1 && k != (page+si)%len(seeds)) {
						continue
					}
					// The configuration lists the components in an order drawn from the seed.
					order := permuted(set.comps, rand.New(rand.NewPCG(seed, uint64(pi)<<1|b2u(bigram))).Uint64())
					cfg := modelConfig(si, k, pi, page, bigram, policies[(k+page)%len(policies)], order)
					name := fmt.Sprintf("%s/bigram=%v/page=%d/seed=%#x/%s", set.name, bigram, page, seed, cfg.Policy)
					if len(order) > 1 {
						name += "/order=" + componentOrder(order)
					}
					if si > 0 {
						name += fmt.Sprintf("/w=%d/chunk=%d/cap=%d", cfg.SWAWindow, cfg.MambaChunkSize, cfg.MambaMaxPathStates)
						if cfg.MambaPolicy != "" {
							name += fmt.Sprintf("/mamba=%s/alpha=%g", cfg.MambaPolicy, cfg.MambaAlpha)
						}
					}
					t.Run(name, func(t *testing.T) {
						stats := runModel(t, cfg, seed, ops)
						for k, v := range stats {
							total[k] += v
						}
					})
				}
			}
		}
		if t.Failed() {
			return
		}
		// The set's runs must have exercised what they claim to.
		t.Logf("%s: %v", set.name, total)
		for _, k := range []string{"insert-shared", "match-hit", "evicted-full"} {
			require.Positive(t, total[k], "%s: %s", set.name, k)
		}
		if slices.Contains(set.comps, core.SWA) {
			for _, k := range []string{"recover", "recover-locked", "evicted-swa", "unlock-swa", "match-aux-short", "insert-suspend"} {
				require.Positive(t, total[k], "%s: %s", set.name, k)
			}
		}
		if slices.Contains(set.comps, core.Mamba) {
			for _, k := range []string{"evicted-mamba", "match-aux-short", "cap-drop"} {
				require.Positive(t, total[k], "%s: %s", set.name, k)
			}
		}
	}
}

// modelConfig picks a configuration; the hybrid parameters vary with the
// run's shape so that every set meets several windows, chunks and caps.
func modelConfig(si, k, pi, page int, bigram bool, policy string, comps []core.Component) core.Config {
	cfg := core.Config{PageSize: page, Policy: policy, Bigram: bigram, Components: comps}
	v := pi + si + k
	if slices.Contains(comps, core.SWA) {
		cfg.SWAWindow = []int{1, page, 2*page + 1, 3 * page, 5*page - 1}[(v+int(b2u(bigram)))%5]
	}
	if slices.Contains(comps, core.Mamba) {
		cfg.MambaChunkSize = []int{0, 2 * page, 3, 1}[v%4]
		cfg.MambaMaxPathStates = []int{0, 1, 2, 3}[(v+si/2)%4]
		if (v+k)%2 == 1 { // half the Mamba runs evict by marconi's utility
			cfg.MambaPolicy = "marconi"
			cfg.MambaAlpha = float64(v%3) / 2
		}
	}
	return cfg
}

// runModel runs one model test and returns its stats.
func runModel(t *testing.T, cfg core.Config, seed uint64, ops int) map[string]int {
	page := cfg.PageSize
	rng := rand.New(rand.NewPCG(seed, uint64(page)<<1|b2u(cfg.Bigram)))
	tree, err := core.New(cfg)
	require.NoError(t, err)
	m := &model{
		t: t, tree: tree, rng: rng, page: page, width: 1, bigram: cfg.Bigram,
		set: tree.Components(), window: cfg.SWAWindow, pathCap: cfg.MambaMaxPathStates,
		streams: genStreams(rng, 4, 3*page+1, 12*page+7),
		cap:     40 * page,
		ref:     map[string]*refPage{},
		pools:   newHybridPools(t),
		stats:   map[string]int{},
	}
	if cfg.Bigram {
		m.width = 2
	}
	chunk := cfg.MambaChunkSize
	if chunk == 0 {
		chunk = page
	}
	m.grid = chunk / gcd(chunk, page) * page
	var trail []string
	for i := range ops {
		op := m.step()
		trail = append(trail, op)
		if len(trail) > 8 {
			trail = trail[1:]
		}
		m.check(fmt.Sprintf("step %d (last ops %s)", i, strings.Join(trail, ",")))
	}
	t.Logf("stats: %v", m.stats)
	return m.stats
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// sameMultiset compares two lists ignoring order.
func sameMultiset[T interface{ ~int32 | [2]int32 }](t testing.TB, want, got []T, msgAndArgs ...any) {
	t.Helper()
	key := func(v T) string { return fmt.Sprint(v) }
	count := map[string]int{}
	for _, v := range want {
		count[key(v)]++
	}
	for _, v := range got {
		count[key(v)]--
	}
	for _, n := range count {
		if n != 0 {
			require.Equal(t, sortedStrings(want), sortedStrings(got), msgAndArgs...)
			return
		}
	}
}

func sortedStrings[T any](v []T) []string {
	out := make([]string, len(v))
	for i, x := range v {
		out[i] = fmt.Sprint(x)
	}
	slices.Sort(out)
	return out
}

// pathOf returns the key words and slots from the root down to node.
func pathOf(t testing.TB, tree *core.Tree, node core.NodeID) ([]uint32, []int32) {
	var chain []core.NodeInfo
	for id := node; id != tree.Root(); {
		info, err := tree.Inspect(id)
		if err != nil {
			require.NoError(t, err)
		}
		chain = append(chain, info)
		id = info.Parent
	}
	var words []uint32
	var slots []int32
	for k := len(chain) - 1; k >= 0; k-- {
		words = append(words, chain[k].Key...)
		slots = append(slots, chain[k].Device[core.Full]...)
	}
	return words, slots
}

func fmtSeq(ns int, words []uint32, slots []int32) string {
	b := make([]byte, 0, 8+8*(len(words)+len(slots)))
	b = strconv.AppendInt(append(b, "ns"...), int64(ns), 10)
	for _, w := range words {
		b = strconv.AppendUint(append(b, ' '), uint64(w), 10)
	}
	b = append(b, " ->"...)
	for _, v := range slots {
		b = strconv.AppendInt(append(b, ' '), int64(v), 10)
	}
	return string(b)
}

// treeLeafPaths lists every root-to-leaf path of the tree and every device
// slot the tree holds.
func treeLeafPaths(t testing.TB, tree *core.Tree) ([]string, []int32) {
	var paths []string
	var all []int32
	var walk func(id core.NodeID, ns int, words []uint32, slots []int32)
	walk = func(id core.NodeID, ns int, words []uint32, slots []int32) {
		info, err := tree.Inspect(id)
		if err != nil {
			require.NoError(t, err)
		}
		if id != tree.Root() {
			ns = nsIndex(info.Namespace)
			if ns < 0 {
				require.Failf(t, "bad namespace", "node in unknown namespace %+v", info.Namespace)
			}
			words = append(slices.Clip(words), info.Key...)
			if info.Device[core.Full] == nil {
				require.Failf(t, "evicted node", "%v: no device value in a tree without a host tier", id)
			}
			slots = append(slices.Clip(slots), info.Device[core.Full]...)
			all = append(all, info.Device[core.Full]...)
			if len(info.Children) == 0 {
				paths = append(paths, fmtSeq(ns, words, slots))
			}
		}
		for _, c := range info.Children {
			walk(c, ns, words, slots)
		}
	}
	walk(tree.Root(), 0, nil, nil)
	slices.Sort(paths)
	return paths, all
}

// trimmingPolicy reports the policies whose Full walk frees only the end
// of a leaf it needs, in a Full-only tree (see core's adaptive.go).
func trimmingPolicy(p string) bool { return p == "lrfu" || p == "admit" || p == "branch" || p == "lhd" }

// policyKey is the naive statement of each policy's order (smallest
// first), computed from inspected node state; nil for gdsf, whose credit
// is not inspectable.
func policyKey(policy string, n core.NodeInfo) []int64 {
	switch policy {
	case "lru":
		return []int64{n.LastAccess}
	case "lfu":
		return []int64{n.Hits, n.LastAccess}
	case "fifo":
		return []int64{n.Creation}
	case "mru":
		return []int64{-n.LastAccess}
	case "filo":
		return []int64{-n.Creation}
	case "priority":
		return []int64{n.Priority, n.LastAccess}
	case "slru":
		seg := int64(0)
		if n.Hits >= 2 {
			seg = 1
		}
		return []int64{seg, n.LastAccess}
	}
	return nil
}

// expectedEvictionOrder simulates a one-shot eviction naively: repeatedly
// take the smallest evictable leaf (ties by arena slot), and let a parent
// left without children and locks become a candidate.
func expectedEvictionOrder(t testing.TB, tree *core.Tree, want int) []core.NodeID {
	if policyKey(tree.Policy(), core.NodeInfo{}) == nil {
		return nil
	}
	infos := map[core.NodeID]core.NodeInfo{}
	kids := map[core.NodeID]int{}
	for _, id := range tree.Nodes() {
		info, err := tree.Inspect(id)
		require.NoError(t, err)
		infos[id] = info
		kids[id] = len(info.Children)
	}
	var cand []core.NodeID
	for id, info := range infos {
		if info.DLeaf {
			cand = append(cand, id)
		}
	}
	key := func(id core.NodeID) []int64 {
		return append(policyKey(tree.Policy(), infos[id]), int64(uint32(id)))
	}
	order := []core.NodeID{}
	freed := 0
	for freed < want && len(cand) > 0 {
		best := 0
		for k := range cand {
			if slices.Compare(key(cand[k]), key(cand[best])) < 0 {
				best = k
			}
		}
		id := cand[best]
		cand = slices.Delete(cand, best, best+1)
		order = append(order, id)
		freed += len(infos[id].Device[core.Full])
		p := infos[id].Parent
		kids[p]--
		if p != tree.Root() && kids[p] == 0 && infos[p].Lock[core.Full] == 0 {
			cand = append(cand, p)
		}
	}
	return order
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// sameSlice compares slices by content, treating nil and empty alike.
func sameSlice[T comparable](t testing.TB, want, got []T, msgAndArgs ...any) {
	if !slices.Equal(want, got) {
		t.Helper()
		require.Equal(t, want, got, msgAndArgs...)
	}
}

// eqf is require.Equalf that costs nothing when the values are equal (the
// model runs it millions of times).
func eqf[T comparable](t testing.TB, want, got T, format string, args ...any) {
	if want != got {
		t.Helper()
		require.Equalf(t, want, got, format, args...)
	}
}
