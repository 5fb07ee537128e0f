package core_test

import (
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
// side. The reference is a flat list of cached sequences (namespace, key
// words, one slot per atom) with no sharing structure at all: a match is
// the longest page-aligned common prefix with any sequence of the same
// namespace. After every operation the tree's root-to-leaf paths must be
// exactly the reference's maximal sequences, slot for slot, and every slot
// the fake allocator handed out must be owned by exactly one of the tree or
// an in-flight request.

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

type refSeq struct {
	ns    int
	words []uint32
	slots []int32
}

type heldLock struct {
	r      core.Receipt
	ns     int
	tokens []uint32 // the matched request
	words  []uint32 // the locked prefix
	slots  []int32
}

type modelRequest struct {
	lock   heldLock
	ns     int
	tokens []uint32
	fresh  []int32 // slots for atoms [prev, L)
	prev   int
}

type model struct {
	t       *testing.T
	tree    *core.Tree
	rng     *rand.Rand
	page    int
	width   int
	bigram  bool
	streams [][]uint32
	cap     int // eviction pressure: keep the tree near this many atoms

	seqs  []refSeq
	alloc *fakeAlloc
	locks []heldLock
	reqs  []modelRequest
	// walking is set while a step-wise eviction is open.
	walking bool
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

// atomLCP is the common prefix of two key word slices in atoms.
func (m *model) atomLCP(a, b []uint32) int {
	n := min(len(a), len(b)) / m.width
	for i := range n {
		for j := range m.width {
			if a[i*m.width+j] != b[i*m.width+j] {
				return i
			}
		}
	}
	return n
}

// refMatch is the naive match: the longest page-aligned common prefix with
// any cached sequence of the namespace.
func (m *model) refMatch(ns int, words []uint32, L int) (int, []int32) {
	best, bestSlots := 0, []int32(nil)
	for _, s := range m.seqs {
		if s.ns != ns {
			continue
		}
		n := min(m.atomLCP(s.words, words), L) / m.page * m.page
		if n > best {
			best, bestSlots = n, s.slots[:n]
		}
	}
	return best, slices.Clone(bestSlots)
}

// normalize drops empty sequences and sequences that are a prefix of
// another one in the same namespace, so that the list is exactly the set
// of maximal cached sequences (the tree's root-to-leaf paths).
func (m *model) normalize() {
	out := m.seqs[:0]
	for i, s := range m.seqs {
		if len(s.slots) == 0 {
			continue
		}
		covered := false
		for j, o := range m.seqs {
			if i == j || o.ns != s.ns || len(o.slots) < len(s.slots) {
				continue
			}
			if m.atomLCP(o.words, s.words) == len(s.slots) && (len(o.slots) > len(s.slots) || j < i) {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, s)
		}
	}
	m.seqs = out
}

// refEvict removes freed slots from the reference: each must be a whole
// page-aligned tail of every sequence that holds it.
func (m *model) refEvict(freed map[int32]bool) {
	t := m.t
	found := map[int32]bool{}
	for k := range m.seqs {
		s := &m.seqs[k]
		cut := -1
		for i, sl := range s.slots {
			if freed[sl] {
				found[sl] = true
				if cut < 0 {
					cut = i
				}
			} else if cut >= 0 {
				require.Failf(t, "eviction freed a non-leaf", "freed slot %d of %v but kept slot %d after it", s.slots[cut], s.slots, sl)
			}
		}
		if cut >= 0 {
			require.Zerof(t, cut%m.page, "eviction cut a sequence at %d, not page-aligned", cut)
			s.words, s.slots = s.words[:cut*m.width], s.slots[:cut]
		}
	}
	require.Len(t, found, len(freed), "eviction freed slots the reference did not hold")
	m.normalize()
}

func (m *model) refInsert(ns int, words []uint32, slots []int32) {
	m.seqs = append(m.seqs, refSeq{ns: ns, words: slices.Clone(words), slots: slices.Clone(slots)})
	m.normalize()
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

// check runs after every step: sanity, structure equality with the
// reference, slot ownership, size accounting and lock integrity.
func (m *model) check(op string) {
	t := m.t
	require.NoError(t, m.tree.SanityCheck(), "after %s", op)

	paths, treeSlots := treeLeafPaths(t, m.tree)
	var want []string
	for _, s := range m.seqs {
		want = append(want, fmtSeq(s.ns, s.words, s.slots))
	}
	slices.Sort(want)
	sameSlice(t, want, paths, "after %s: tree paths differ from the reference", op)

	// Every allocated slot has exactly one owner: the tree or one
	// in-flight request.
	owner := make([]string, m.alloc.next)
	own := func(s int32, who string) {
		if !m.alloc.isUsed(s) {
			require.Failf(t, "slot freed while in use", "after %s: slot %d held by the %s but not allocated", op, s, who)
		}
		if owner[s] != "" {
			require.Failf(t, "slot held twice", "after %s: slot %d held by the %s and the %s", op, s, owner[s], who)
		}
		owner[s] = who
	}
	nOwned := 0
	for _, s := range treeSlots {
		own(s, "tree")
		nOwned++
	}
	for _, r := range m.reqs {
		for _, s := range r.fresh {
			own(s, "request")
			nOwned++
		}
	}
	require.Equalf(t, m.alloc.nUsed, nOwned, "after %s: %d slots allocated, %d owned (leak)", op, m.alloc.nUsed, nOwned)

	full, _ := m.tree.TotalSize()
	require.Equal(t, len(treeSlots), full, "after %s", op)
	require.Equal(t, len(treeSlots), m.tree.Evictable(core.Full)+m.tree.Protected(core.Full), "after %s", op)

	locked := make([]bool, m.alloc.next)
	nLocked := 0
	for _, l := range m.allLocks() {
		words, slots := pathOf(t, m.tree, l.r.Node)
		sameSlice(t, l.words, words, "after %s: locked prefix of receipt %d changed", op, l.r.Serial)
		sameSlice(t, l.slots, slots, "after %s: locked slots of receipt %d changed", op, l.r.Serial)
		for _, s := range slots {
			if !locked[s] {
				locked[s] = true
				nLocked++
			}
		}
	}
	require.Equal(t, nLocked, m.tree.Protected(core.Full), "after %s: protected size", op)
	require.Len(t, m.tree.LiveReceipts(), len(m.allLocks()), "after %s", op)
	require.Equal(t, m.walking, m.tree.EvictionInFlight(), "after %s", op)
	require.False(t, m.tree.InsertInFlight(), "after %s: a Full-only tree never suspends", op)
}

func (m *model) allLocks() []heldLock {
	out := slices.Clone(m.locks)
	for _, r := range m.reqs {
		out = append(out, r.lock)
	}
	return out
}

func (m *model) pickNS() int { return m.rng.IntN(len(testNamespaces)) }

// match matches tokens in the tree and the reference and requires the
// same answer.
func (m *model) match(ns core.Namespace, tokens []uint32) core.MatchResult {
	t := m.t
	words, L := modelKey(tokens, m.page, m.bigram)
	wantLen, wantSlots := 0, []int32(nil)
	if i := nsIndex(ns); i >= 0 {
		wantLen, wantSlots = m.refMatch(i, words, L)
	}
	// A non-empty dst must be kept and appended to.
	dst := []int32{-7}
	res, err := m.tree.Match(dst, ns, tokens)
	require.NoError(t, err)
	require.Equal(t, wantLen, res.DeviceLen, "match length of %v in %+v", tokens, ns)
	require.Equal(t, int32(-7), res.Indices[0])
	got := res.Indices[1:]
	if wantLen == 0 {
		require.Empty(t, got)
		require.Equal(t, m.tree.Root(), res.LastDevice)
	} else {
		sameSlice(t, wantSlots, got)
		w, s := pathOf(t, m.tree, res.LastDevice)
		sameSlice(t, words[:wantLen*m.width], w, "LastDevice does not end the matched prefix")
		sameSlice(t, wantSlots, s)
	}
	require.Equal(t, res.LastDevice, res.Best)
	require.Equal(t, res.LastDevice, res.LastHost)
	require.Equal(t, wantLen, res.FullKVHitLen)
	require.Zero(t, res.HostHitLen)
	require.Empty(t, res.Actions)
	m.stats["match"]++
	if wantLen > 0 {
		m.stats["match-hit"]++
	}
	return res
}

func (m *model) lockMatch(ns int, tokens []uint32) heldLock {
	res := m.match(testNamespaces[ns], tokens)
	r, err := m.tree.Lock(res.LastDevice, 0)
	require.NoError(m.t, err)
	words, _ := modelKey(tokens, m.page, m.bigram)
	return heldLock{r: r, ns: ns, tokens: tokens, words: words[:res.DeviceLen*m.width], slots: slices.Clone(res.Indices[1:])}
}

func (m *model) unlock(l heldLock) {
	require.NoError(m.t, m.tree.Unlock(l.r.Node, l.r, false))
	// A second release of the same receipt is refused and changes nothing.
	before := m.tree.Render()
	require.ErrorIs(m.t, m.tree.Unlock(l.r.Node, l.r, false), core.ErrReceipt)
	require.Equal(m.t, before, m.tree.Render())
}

// insert inserts tokens whose first prev atoms are the request's cached
// (locked) prefix with slots prefix, and fresh slots for the rest.
func (m *model) insert(ns int, tokens []uint32, prefix, fresh []int32) {
	t := m.t
	words, L := modelKey(tokens, m.page, m.bigram)
	prev := len(prefix)
	require.Equal(t, L, prev+len(fresh))
	wantP, treeSlots := m.refMatch(ns, words, L)
	require.GreaterOrEqual(t, wantP, prev, "the request's locked prefix vanished")
	sameSlice(t, treeSlots[:prev], prefix, "the request's prefix is not the tree's")
	slots := append(slices.Clone(prefix), fresh...)
	// Unaligned tails carry extra slots the tree must ignore.
	slots = append(slots, 999999)
	track := m.rng.IntN(2) == 0
	res, acts, err := m.tree.Insert(core.InsertParams{
		Namespace:     testNamespaces[ns],
		Tokens:        tokens,
		Slots:         slots,
		PrevPrefixLen: prev,
		Priority:      int64(m.rng.IntN(3)),
		Chunked:       m.rng.IntN(4) == 0,
		TrackAdopted:  track,
	})
	require.NoError(t, err)
	require.Equal(t, wantP, res.PrefixLen)
	require.Equal(t, L, res.TotalLen)
	var freed []int32
	for _, a := range acts {
		require.Equal(t, core.ActionFreeDeviceKV, a.Kind, "insert emitted %v", a)
		freed = append(freed, a.Slots...)
	}
	wantFreed := slots[prev:max(prev, wantP)]
	if len(wantFreed) == 0 {
		require.Empty(t, freed)
	} else {
		sameSlice(t, wantFreed, freed, "insert freed the wrong duplicate slots")
	}
	if track && L > 0 {
		if wantP < L {
			require.Equal(t, []core.Range{{Start: wantP, End: L}}, res.Adopted[core.Full])
		} else {
			require.Empty(t, res.Adopted[core.Full])
		}
	} else if !track {
		require.Nil(t, res.Adopted)
	}
	if L == 0 {
		require.Equal(t, m.tree.Root(), res.LastDevice)
	} else {
		w, s := pathOf(t, m.tree, res.LastDevice)
		sameSlice(t, words, w)
		sameSlice(t, treeSlots, s[:wantP], "the tree's prefix slots changed")
		sameSlice(t, slots[wantP:L], s[wantP:], "the tree did not adopt the new slots")
	}
	m.alloc.put(t, freed)
	if L > 0 {
		m.refInsert(ns, words[:L*m.width], append(treeSlots, slots[wantP:L]...))
	}
	m.stats["insert"]++
	if wantP > 0 {
		m.stats["insert-shared"]++
	}
}

// applyEviction checks the actions of one eviction and updates the
// allocator and the reference.
func (m *model) applyEviction(acts []core.Action, freedAtoms int, node core.NodeID) {
	t := m.t
	freed := map[int32]bool{}
	var list []int32
	for _, a := range acts {
		require.Equal(t, core.ActionFreeDeviceSlots, a.Kind, "eviction emitted %v", a)
		require.Equal(t, core.Full, a.Component)
		if node != 0 {
			require.Equal(t, node, a.Node)
		}
		_, err := m.tree.Inspect(a.Node)
		require.ErrorIs(t, err, core.ErrStaleNode, "an evicted node's handle must go stale")
		for _, s := range a.Slots {
			require.False(t, freed[s], "slot %d freed twice by one eviction", s)
			freed[s] = true
		}
		list = append(list, a.Slots...)
	}
	require.Len(t, list, freedAtoms)
	for _, l := range m.allLocks() {
		for _, s := range l.slots {
			require.Falsef(t, freed[s], "eviction freed slot %d of a locked prefix", s)
		}
	}
	m.refEvict(freed)
	m.alloc.put(t, list)
	m.stats["evicted"] += freedAtoms
	// Every locked prefix still matches in full, with the same slots.
	for _, l := range m.allLocks() {
		res := m.match(testNamespaces[l.ns], l.tokens)
		require.GreaterOrEqual(t, res.DeviceLen, len(l.slots), "a locked prefix lost its cache")
		sameSlice(t, l.slots, res.Indices[1:1+len(l.slots)], "a locked prefix changed slots")
	}
}

func (m *model) evictOneShot(want int) {
	t := m.t
	before := m.tree.Evictable(core.Full)
	order := expectedEvictionOrder(t, m.tree, want)
	acts, freed, err := m.tree.Evict(core.Full, want, nil)
	require.NoError(t, err)
	require.GreaterOrEqual(t, freed, min(want, before))
	if freed < want {
		require.Zero(t, m.tree.Evictable(core.Full), "evict stopped short with evictable atoms left")
	}
	// It stops as soon as want is met: all but the last leaf fall short.
	if n := len(acts); n > 0 {
		require.Less(t, freed-len(acts[n-1].Slots), want, "evict freed more leaves than needed")
	} else {
		require.Zero(t, freed)
	}
	if order != nil {
		got := make([]core.NodeID, len(acts))
		for k, a := range acts {
			got[k] = a.Node
		}
		sameSlice(t, order, got, "eviction order under policy %s", m.tree.Policy())
	}
	m.applyEviction(acts, freed, 0)
	m.stats["evict"]++
}

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

func (m *model) step() string {
	t := m.t
	rng := m.rng
	if m.walking && rng.IntN(3) != 0 {
		st, err := m.tree.EvictNext()
		require.NoError(t, err)
		if m.walkFreed >= m.walkWant {
			require.True(t, st.Done, "the walk went on after freeing %d of %d", m.walkFreed, m.walkWant)
		}
		m.walkFreed += st.Freed
		if st.Done {
			require.Zero(t, st.Node)
			require.Empty(t, st.Actions)
			if rng.IntN(2) == 0 {
				m.tree.EvictEnd()
				m.walking = false
			}
			return "evict-next(done)"
		}
		m.applyEviction(st.Actions, st.Freed, st.Node)
		if rng.IntN(8) == 0 {
			m.tree.EvictEnd()
			m.walking = false
		}
		return "evict-next"
	}
	full, _ := m.tree.TotalSize()
	if full > m.cap && !m.walking {
		m.evictOneShot(full - m.cap/2)
		return "evict(pressure)"
	}
	switch r := rng.IntN(100); {
	case r < 25: // plain insert: match, then insert at once
		ns := m.pickNS()
		tok := randomTokens(rng, m.streams)
		_, L := modelKey(tok, m.page, m.bigram)
		var prefix []int32
		if rng.IntN(2) == 0 {
			res := m.match(testNamespaces[ns], tok)
			prefix = slices.Clone(res.Indices[1:])
		}
		fresh := m.alloc.get(L - len(prefix))
		m.insert(ns, tok, prefix, fresh)
		return "insert"
	case r < 37: // a request arrives: match + lock, allocate the rest
		ns := m.pickNS()
		tok := randomTokens(rng, m.streams)
		l := m.lockMatch(ns, tok)
		_, L := modelKey(tok, m.page, m.bigram)
		prev := len(l.slots)
		m.reqs = append(m.reqs, modelRequest{lock: l, ns: ns, tokens: tok, fresh: m.alloc.get(L - prev), prev: prev})
		return "request-begin"
	case r < 49: // a request finishes: insert the whole sequence, unlock
		if len(m.reqs) == 0 {
			return "noop"
		}
		k := rng.IntN(len(m.reqs))
		q := m.reqs[k]
		m.reqs = slices.Delete(m.reqs, k, k+1)
		if rng.IntN(10) == 0 {
			// Aborted: the request frees its own slots and unlocks.
			m.alloc.put(t, q.fresh)
			m.unlock(q.lock)
			return "request-abort"
		}
		m.insert(q.ns, q.tokens, q.lock.slots, q.fresh)
		m.unlock(q.lock)
		return "request-end"
	case r < 64:
		ns := m.pickNS()
		tok := randomTokens(rng, m.streams)
		if rng.IntN(10) == 0 {
			m.match(neverInserted, tok)
		} else {
			m.match(testNamespaces[ns], tok)
		}
		return "match"
	case r < 72:
		if len(m.locks) < 12 {
			m.locks = append(m.locks, m.lockMatch(m.pickNS(), randomTokens(rng, m.streams)))
		}
		return "lock"
	case r < 80:
		if len(m.locks) == 0 {
			return "noop"
		}
		k := rng.IntN(len(m.locks))
		m.unlock(m.locks[k])
		m.locks = slices.Delete(m.locks, k, k+1)
		return "unlock"
	case r < 88:
		if m.walking {
			before := m.tree.Render()
			_, _, err := m.tree.Evict(core.Full, 1, nil)
			require.ErrorIs(t, err, core.ErrEvictionInFlight)
			require.Equal(t, before, m.tree.Render())
			return "evict(busy)"
		}
		m.evictOneShot(rng.IntN(3 * m.page * 4))
		return "evict"
	case r < 96:
		if m.walking {
			require.ErrorIs(t, m.tree.EvictStart(core.Full, 1), core.ErrEvictionInFlight)
			return "evict-start(busy)"
		}
		m.walkWant, m.walkFreed = rng.IntN(8*m.page+1), 0
		require.NoError(t, m.tree.EvictStart(core.Full, m.walkWant))
		m.walking = true
		return "evict-start"
	case r < 99:
		if m.walking {
			m.tree.EvictEnd()
			m.walking = false
		}
		return "evict-end"
	default:
		m.tree.Reset()
		// The host drops its whole pool: aborted requests free their
		// slots, everything the tree held is gone.
		m.alloc = newFakeAlloc()
		m.seqs, m.locks, m.reqs, m.walking = nil, nil, nil, false
		m.stats["reset"]++
		return "reset"
	}
}

// modelOps overrides the model test's operations per run, for soak runs:
// go test ./core -run TestTree_Model -model.ops 100000
var modelOps = flag.Int("model.ops", 0, "operations per TestTree_Model run (0: default)")

func TestTree_Model(t *testing.T) {
	ops := 1000
	seeds := []uint64{1, 0x5eed, 0xdecafbad}
	if testing.Short() {
		ops, seeds = 300, seeds[:1]
	}
	if *modelOps > 0 {
		ops = *modelOps
	}
	policies := core.PolicyNames()
	for _, bigram := range []bool{false, true} {
		for _, page := range []int{1, 2, 4, 16} {
			for k, seed := range seeds {
				pol := policies[(k+page)%len(policies)]
				name := fmt.Sprintf("bigram=%v/page=%d/seed=%#x/%s", bigram, page, seed, pol)
				t.Run(name, func(t *testing.T) {
					rng := rand.New(rand.NewPCG(seed, uint64(page)<<1|b2u(bigram)))
					tree, err := core.New(core.Config{PageSize: page, Policy: pol, Bigram: bigram})
					require.NoError(t, err)
					m := &model{
						t: t, tree: tree, rng: rng, page: page, width: 1, bigram: bigram,
						streams: genStreams(rng, 4, 3*page+1, 12*page+7),
						cap:     40 * page,
						alloc:   newFakeAlloc(),
						stats:   map[string]int{},
					}
					if bigram {
						m.width = 2
					}
					var trail []string
					for i := range ops {
						op := m.step()
						trail = append(trail, op)
						if len(trail) > 8 {
							trail = trail[1:]
						}
						m.check(fmt.Sprintf("step %d (last ops %s)", i, strings.Join(trail, ",")))
					}
					// The run must have exercised what it claims to.
					require.Positive(t, m.stats["insert-shared"])
					require.Positive(t, m.stats["match-hit"])
					require.Positive(t, m.stats["evicted"])
					t.Logf("stats: %v", m.stats)
				})
			}
		}
	}
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// sameSlice compares slices by content, treating nil and empty alike.
func sameSlice[T comparable](t testing.TB, want, got []T, msgAndArgs ...any) {
	t.Helper()
	if !slices.Equal(want, got) {
		require.Equal(t, want, got, msgAndArgs...)
	}
}
