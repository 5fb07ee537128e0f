package core_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/radixkv/radixkv/core"
)

// fuzzReader hands out bytes of the fuzz input; past the end it returns 0.
type fuzzReader struct{ b []byte }

func (r *fuzzReader) next() int {
	if len(r.b) == 0 {
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return int(v)
}

func (r *fuzzReader) done() bool { return len(r.b) == 0 }

// tokens reads a short sequence over a tiny alphabet, so that sequences
// share prefixes and split each other often.
func (r *fuzzReader) tokens() []uint32 {
	n := r.next() % 14
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(1 + r.next()%4)
	}
	return out
}

// fuzzHarness runs one op sequence and checks, after every op, that the
// tree is sane, that every slot it holds was allocated exactly once, and
// that each error is one the op may return in the current state.
type fuzzHarness struct {
	t       *testing.T
	tree    *core.Tree
	other   *core.Tree
	alloc   *fakeAlloc
	handles []core.NodeID
	// receipts ever issued (live or not), plus foreign ones.
	receipts []core.Receipt
	// live maps the serial of each unreleased receipt to the receipt.
	live    map[uint64]core.Receipt
	walking bool
	bigram  bool
	// prot holds the serials of the live protections.
	prot []uint64
	// liveNodes caches the live handles during one op.
	liveNodes map[core.NodeID]bool
}

func (h *fuzzHarness) remember(id core.NodeID) {
	if len(h.handles) < 64 && !slices.Contains(h.handles, id) {
		h.handles = append(h.handles, id)
	}
}

func (h *fuzzHarness) handle(r *fuzzReader) core.NodeID {
	k := r.next()
	switch {
	case k == 255:
		return 0
	case k == 254:
		return core.NodeID(1<<40 | 7) // a slot that was never issued
	case len(h.handles) == 0:
		return h.tree.Root()
	}
	return h.handles[k%len(h.handles)]
}

// isLive answers from the tree's node listing, taken once per op.
func (h *fuzzHarness) isLive(id core.NodeID) bool {
	if h.liveNodes == nil {
		h.liveNodes = map[core.NodeID]bool{}
		for _, n := range h.tree.Nodes() {
			h.liveNodes[n] = true
		}
	}
	return h.liveNodes[id]
}

// expectErr fails unless err is nil when want is nil, or matches want.
func (h *fuzzHarness) expectErr(op string, want, err error) {
	h.t.Helper()
	if want == nil {
		require.NoError(h.t, err, op)
		return
	}
	require.ErrorIs(h.t, err, want, op)
	require.False(h.t, errors.Is(err, core.ErrBroken), "%s: broke the tree: %v", op, err)
}

func (h *fuzzHarness) freeEvicted(acts []core.Action) {
	for _, a := range acts {
		require.Equal(h.t, core.ActionFreeDeviceSlots, a.Kind)
		h.alloc.put(h.t, a.Slots)
	}
}

func (h *fuzzHarness) freeDup(acts []core.Action) {
	for _, a := range acts {
		require.Equal(h.t, core.ActionFreeDeviceKV, a.Kind)
		h.alloc.put(h.t, a.Slots)
	}
}

var fuzzNamespaces = append(slices.Clone(testNamespaces), neverInserted)

func (h *fuzzHarness) op(r *fuzzReader) string {
	t := h.t
	tree := h.tree
	before := tree.Render()
	unchanged := func(op string, err error) {
		if err != nil {
			require.Equal(t, before, tree.Render(), "%s failed (%v) but changed the tree", op, err)
		}
	}
	switch code := r.next() % 16; code {
	case 0, 1: // insert, optionally on top of an immediate match
		ns := testNamespaces[r.next()%len(testNamespaces)]
		tok := r.tokens()
		var prefix []int32
		if r.next()%2 == 0 {
			res, err := tree.Match(nil, ns, tok)
			require.NoError(t, err)
			prefix = res.Indices
		}
		n := h.atoms(tok)
		slots := append(prefix, h.alloc.get(n-len(prefix))...)
		res, acts, err := tree.Insert(core.InsertParams{Namespace: ns, Tokens: tok, Slots: slots, PrevPrefixLen: len(prefix)})
		require.NoError(t, err)
		h.freeDup(acts)
		h.remember(res.LastDevice)
		return "insert"
	case 2: // match
		ns := fuzzNamespaces[r.next()%len(fuzzNamespaces)]
		res, err := tree.Match(nil, ns, r.tokens())
		require.NoError(t, err)
		require.Len(t, res.Indices, res.DeviceLen)
		h.remember(res.LastDevice)
		return "match"
	case 3: // lock a handle, maybe stale, maybe with a bad skip set
		id := h.handle(r)
		var skip core.ComponentSet
		switch r.next() % 8 {
		case 0:
			skip = skip.With(core.Full)
		case 1:
			skip = skip.With(core.SWA)
		}
		var want error
		switch {
		case !h.isLive(id):
			want = core.ErrStaleNode
		case skip != 0:
			want = core.ErrInvalidArgument
		}
		rc, err := tree.Lock(id, skip)
		h.expectErr("lock", want, err)
		unchanged("lock", err)
		if err == nil {
			require.Equal(t, id, rc.Node)
			h.live[rc.Serial] = rc
			h.receipts = append(h.receipts, rc)
		}
		return "lock"
	case 4: // unlock a receipt, maybe released, foreign or tampered with
		if len(h.receipts) == 0 {
			return "noop"
		}
		rc := h.receipts[r.next()%len(h.receipts)]
		node := rc.Node
		switch r.next() % 8 {
		case 0:
			node = h.handle(r) // maybe the wrong node
		case 1:
			rc.Serial += 1000 // never issued
		case 2:
			rc.Skipped = rc.Skipped.With(core.Full) // would leave the lock behind
		case 3:
			rc.Node = h.handle(r)
			node = rc.Node
		}
		// Only the very receipt issued, presented on its own node,
		// releases; anything else is refused.
		var want error
		switch issued, ok := h.live[rc.Serial]; {
		case !h.isLive(node):
			want = core.ErrStaleNode
		case rc.Node != node, !ok, issued != rc:
			want = core.ErrReceipt
		}
		err := tree.Unlock(node, rc, r.next()%4 == 0)
		h.expectErr("unlock", want, err)
		unchanged("unlock", err)
		if err == nil {
			delete(h.live, rc.Serial)
		}
		return "unlock"
	case 5: // one-shot eviction, maybe negative
		want := r.next()%24 - 3
		var wantErr error
		switch {
		case h.walking:
			wantErr = core.ErrEvictionInFlight
		case want < 0:
			wantErr = core.ErrInvalidArgument
		}
		acts, freed, err := tree.Evict(core.Full, want, nil)
		h.expectErr("evict", wantErr, err)
		unchanged("evict", err)
		if err == nil {
			require.GreaterOrEqual(t, freed, 0)
			h.freeEvicted(acts)
		}
		return "evict"
	case 6: // start a step-wise eviction
		want := r.next()%24 - 2
		comp := core.Full
		if r.next()%8 == 0 {
			comp = core.Mamba
		}
		var wantErr error
		switch {
		case h.walking:
			wantErr = core.ErrEvictionInFlight
		case comp != core.Full, want < 0:
			wantErr = core.ErrInvalidArgument
		}
		err := tree.EvictStart(comp, want)
		h.expectErr("evict-start", wantErr, err)
		unchanged("evict-start", err)
		if err == nil {
			h.walking = true
		}
		return "evict-start"
	case 7, 8: // one eviction step
		var wantErr error
		if !h.walking {
			wantErr = core.ErrNoEviction
		}
		st, err := tree.EvictNext()
		h.expectErr("evict-next", wantErr, err)
		unchanged("evict-next", err)
		if err == nil {
			h.freeEvicted(st.Actions)
			if st.Node != 0 {
				_, err := tree.Inspect(st.Node)
				require.ErrorIs(t, err, core.ErrStaleNode)
			}
		}
		return "evict-next"
	case 9:
		tree.EvictEnd()
		h.walking = false
		return "evict-end"
	case 10: // begin a resumable insert with possibly malformed arguments
		ns := testNamespaces[r.next()%len(testNamespaces)]
		tok := r.tokens()
		n := h.atoms(tok)
		slots := h.alloc.get(n)
		p := core.InsertParams{Namespace: ns, Tokens: tok, Slots: slots}
		var wantErr error
		switch r.next() % 6 {
		case 0:
			if n > 0 {
				p.Slots = slots[:n-1]
				wantErr = core.ErrInvalidArgument
			}
		case 1:
			if n > 0 {
				p.Slots = slices.Clone(slots)
				p.Slots[n-1] = -1
				wantErr = core.ErrInvalidArgument
			}
		case 2:
			p.PrevPrefixLen = -1
			wantErr = core.ErrInvalidArgument
		case 3:
			p.PrevPrefixLen = n + 1
			wantErr = core.ErrInvalidArgument
		}
		st, err := tree.BeginInsert(p)
		h.expectErr("begin-insert", wantErr, err)
		unchanged("begin-insert", err)
		if err != nil {
			h.alloc.put(t, slots)
			return "begin-insert(bad)"
		}
		require.True(t, st.Done, "a Full-only tree has no barriers")
		h.freeDup(st.Actions)
		h.remember(st.Result.LastDevice)
		// A second insert may begin at once: nothing is suspended.
		require.False(t, tree.InsertInFlight())
		return "begin-insert"
	case 11:
		_, err := tree.ResumeInsert()
		h.expectErr("resume-insert", core.ErrNoInsert, err)
		unchanged("resume-insert", err)
		return "resume-insert"
	case 12:
		require.Empty(t, tree.EndInsert())
		require.Equal(t, before, tree.Render())
		return "end-insert"
	case 13:
		switch r.next() % 4 {
		case 1: // protect a queued request's prefix
			ns := testNamespaces[r.next()%len(testNamespaces)]
			p, err := tree.Protect(ns, r.tokens())
			if h.walking {
				require.ErrorIs(t, err, core.ErrEvictionInFlight)
				return "protect"
			}
			require.NoError(t, err)
			require.LessOrEqual(t, p.Len, 64)
			h.prot = append(h.prot, p.Serial)
			return "protect"
		case 2: // release one, maybe twice, maybe never issued
			var s uint64
			k := r.next()
			if len(h.prot) > 0 && k%4 != 0 {
				s = h.prot[k%len(h.prot)]
			} else {
				s = uint64(k) + 1<<40
			}
			err := tree.Unprotect(s)
			i := slices.Index(h.prot, s)
			switch {
			case h.walking:
				require.ErrorIs(t, err, core.ErrEvictionInFlight)
			case i < 0:
				require.ErrorIs(t, err, core.ErrInvalidArgument)
			default:
				require.NoError(t, err)
				h.prot = slices.Delete(h.prot, i, i+1)
			}
			return "unprotect"
		case 3:
			return "noop"
		}
		tree.Reset()
		h.alloc = newFakeAlloc()
		clear(h.live)
		h.prot = h.prot[:0]
		h.walking = false
		return "reset"
	case 14: // inspect a handle, maybe stale
		id := h.handle(r)
		info, err := tree.Inspect(id)
		if h.isLive(id) {
			require.NoError(t, err)
			require.Equal(t, id, info.ID)
		} else {
			require.ErrorIs(t, err, core.ErrStaleNode)
		}
		order, err := tree.DFSWeightOrder([]core.NodeID{id, tree.Root(), id})
		if h.isLive(id) {
			require.NoError(t, err)
			require.ElementsMatch(t, []int{0, 1, 2}, order)
		} else {
			require.ErrorIs(t, err, core.ErrStaleNode)
		}
		require.Equal(t, before, tree.Render())
		return "inspect"
	default: // handles of another tree
		if r.next()%2 == 0 && len(h.handles) < 64 {
			h.handles = append(h.handles, h.other.Nodes()...)
		} else {
			h.receipts = append(h.receipts, fuzzForeignReceipt(t, h.other))
		}
		return "foreign"
	}
}

// fuzzForeignReceipt locks the other tree's deepest node.
func fuzzForeignReceipt(t *testing.T, other *core.Tree) core.Receipt {
	nodes := other.Nodes()
	rc, err := other.Lock(nodes[len(nodes)-1], 0)
	require.NoError(t, err)
	return rc
}

// atoms is the aligned atom count of tokens for the tree's config.
func (h *fuzzHarness) atoms(tok []uint32) int {
	_, n := modelKey(tok, h.tree.PageSize(), h.bigram)
	return n
}

func (h *fuzzHarness) check(op string) {
	t := h.t
	require.NoError(t, h.tree.SanityCheck(), "after %s", op)
	_, slots := treeLeafPaths(t, h.tree)
	seen := make([]bool, h.alloc.next)
	for _, s := range slots {
		require.Truef(t, h.alloc.isUsed(s), "after %s: the tree holds slot %d, which is not allocated", op, s)
		require.Falsef(t, seen[s], "after %s: the tree holds slot %d twice", op, s)
		seen[s] = true
	}
	require.Equal(t, h.alloc.nUsed, len(slots), "after %s: allocated slots leaked", op)
	full, _ := h.tree.TotalSize()
	require.Equal(t, len(slots), full)
	live := h.tree.LiveReceipts()
	require.Len(t, live, len(h.live), "after %s", op)
	for _, s := range live {
		require.Contains(t, h.live, s)
	}
	require.Equal(t, h.walking, h.tree.EvictionInFlight())
	require.Equal(t, len(h.prot), h.tree.Protections(), "after %s", op)
}

func runFuzzOps(t *testing.T, data []byte) {
	r := &fuzzReader{b: data}
	cfg := r.next()
	pols := core.PolicyNames()
	conf := core.Config{
		PageSize: []int{1, 2, 4}[cfg%3],
		Bigram:   cfg&4 != 0,
		Policy:   pols[(cfg>>3)%len(pols)],
	}
	tree, err := core.New(conf)
	require.NoError(t, err)
	other, err := core.New(conf)
	require.NoError(t, err)
	_, _, err = other.Insert(core.InsertParams{Tokens: []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9}, Slots: make([]int32, 9)})
	require.NoError(t, err)
	h := &fuzzHarness{t: t, tree: tree, other: other, alloc: newFakeAlloc(), live: map[uint64]core.Receipt{}, bigram: conf.Bigram}
	h.remember(tree.Root())
	for steps := 0; !r.done() && steps < 256; steps++ {
		h.liveNodes = nil
		op := h.op(r)
		h.check(op)
	}
}

func FuzzOps(f *testing.F) {
	f.Add([]byte{0})
	f.Add([]byte{1, 0, 0, 9, 1, 2, 3, 4, 1, 2, 3, 4, 1, 0, 2, 0, 9, 1, 2, 3, 4, 1, 2, 3, 4, 1})
	// insert, match, lock, evict (blocked by the lock), unlock, evict
	f.Add([]byte{0, 0, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8, 3, 1, 2, 5, 30, 4, 0, 7, 0, 5, 30})
	// step-wise eviction interleaved with inserts, then reset and stale handles
	f.Add([]byte{2, 0, 1, 12, 3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 1, 0, 2, 6, 3, 3, 3, 3, 1, 1, 1, 6, 12, 0, 7, 0, 5, 0, 4, 8, 7, 9, 13, 0, 14, 1, 3, 1, 0, 4, 0, 1})
	// foreign handles and receipts, tampered receipts, bad begin-insert
	f.Add([]byte{4, 15, 0, 15, 1, 4, 0, 2, 4, 0, 1, 4, 0, 3, 0, 10, 0, 5, 1, 2, 3, 4, 1, 0, 10, 1, 4, 1, 2, 3, 4, 1, 11, 12, 3, 254, 0, 3, 255, 0})
	// protect a prefix, evict around it, release it twice
	f.Add([]byte{0, 0, 0, 8, 1, 2, 3, 4, 1, 2, 3, 4, 1, 13, 1, 0, 8, 1, 2, 3, 4, 1, 2, 3, 4, 0, 0, 8, 2, 2, 2, 2, 3, 3, 3, 3, 1, 5, 30, 13, 2, 1, 13, 2, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		runFuzzOps(t, data)
	})
}

// FuzzHybridOps runs operation sequences on hybrid trees: the input's
// first bytes choose the component set, page size, bigram keys, policy,
// SWA window, Mamba chunk and path cap; the rest is a sequence of
// operations, among them resumable inserts that stay suspended while
// other operations run, early SWA releases, SWA and Mamba eviction walks
// and the Mamba path cap. Every action is executed on simulated pools
// (hybridPools). After every operation the tree must be sane, every slot
// it holds in every pool must be allocated and held once, every allocated
// slot must belong to the tree or to the insert in flight, and each error
// must be one the operation may return in the current state.
func FuzzHybridOps(f *testing.F) {
	for _, seed := range hybridFuzzSeeds {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		runHybridFuzz(t, data)
	})
}

// hybridSeed writes fuzz inputs for FuzzHybridOps in the layout its
// reader expects, so that seeds read as operation lists.
type hybridSeed struct {
	b          []byte
	swa, mamba bool
}

// newHybridSeed starts an input: b0 picks the set (b0%4), page
// ((b0>>2)%3), bigram (b0&0x10) and policy; b1 the SWA window (1+b1%12)
// and Mamba chunk; b2 the path cap (b2%4).
func newHybridSeed(b0, b1, b2 byte) *hybridSeed {
	return &hybridSeed{b: []byte{b0, b1, b2}, swa: b0%4 == 1 || b0%4 == 3, mamba: b0%4 >= 2}
}

func (s *hybridSeed) add(b ...byte) *hybridSeed { s.b = append(s.b, b...); return s }

// toks encodes a token list (values 0..3 read as tokens 1..4).
func (s *hybridSeed) toks(t []byte) *hybridSeed { return s.add(byte(len(t))).add(t...) }

// insert: op 0 (one shot) or 2 (resumable); match asks for the cached
// prefix first; e is the SWA evicted length in pages.
func (s *hybridSeed) insert(resumable bool, ns byte, t []byte, match bool, e byte) *hybridSeed {
	code := byte(0)
	if resumable {
		code = 2
	}
	s.add(code, ns).toks(t)
	m := byte(1)
	if match {
		m = 0
	}
	s.add(m, 0) // flags: not chunked, no tracking
	if s.swa {
		s.add(e, 0)
	}
	return s.add(15) // well-formed arguments
}

func (s *hybridSeed) resume() *hybridSeed    { return s.add(3) }
func (s *hybridSeed) endInsert() *hybridSeed { return s.add(4) }
func (s *hybridSeed) match(ns byte, t []byte) *hybridSeed {
	return s.add(5, ns).toks(t)
}

// lock takes a lock on remembered handle h (0 is the root).
func (s *hybridSeed) lock(h, skip byte) *hybridSeed { return s.add(6, h, skip) }
func (s *hybridSeed) unlock(k byte, skipSWA bool) *hybridSeed {
	b := byte(1)
	if skipSWA {
		b = 0
	}
	return s.add(7, k, b)
}
func (s *hybridSeed) unlockSWA(k byte) *hybridSeed { return s.add(8, k) }

// evict, evictStart: component c (3 is none), want atoms.
func (s *hybridSeed) evict(c, want byte) *hybridSeed      { return s.add(9, c, want+2) }
func (s *hybridSeed) evictStart(c, want byte) *hybridSeed { return s.add(10, c, want+2) }
func (s *hybridSeed) evictNext() *hybridSeed              { return s.add(11) }
func (s *hybridSeed) evictEnd() *hybridSeed               { return s.add(13) }
func (s *hybridSeed) pathCap(h byte) *hybridSeed          { return s.add(14, h) }
func (s *hybridSeed) reset() *hybridSeed                  { return s.add(15, 0) }

// hybridFuzzSeeds are the in-code seed inputs (testdata/fuzz/FuzzHybridOps
// holds more, found by the fuzzer).
var hybridFuzzSeeds = [][]byte{
	// Full+SWA, page 1, window 4: a sequence whose first 8 atoms left the
	// request's window (tombstones), locked by a match; its SWA released
	// early and evicted; the same sequence inserted again recovers the
	// tombstones under the locked Full slots; then unlocked.
	newHybridSeed(1, 3, 0).
		insert(false, 0, []byte{0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3}, false, 8).
		match(0, []byte{0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3}).
		lock(1, 0).unlockSWA(0).evict(1, 12).
		insert(false, 0, []byte{0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3}, true, 0).
		unlock(0, true).evict(0, 20).b,
	// Full+Mamba, page 1, cap 1: three sequences extending each other
	// (the cap drops the shallower states), a branch, the cap on the
	// root, a Mamba walk.
	newHybridSeed(2, 0, 1).
		insert(false, 0, []byte{0, 1, 2, 3}, false, 0).
		insert(false, 0, []byte{0, 1, 2, 3, 1, 1, 1, 1}, true, 0).
		insert(false, 0, []byte{0, 1, 2, 3, 1, 1, 1, 1, 2, 2, 2, 2}, true, 0).
		insert(false, 0, []byte{0, 1, 2, 3, 3, 3}, false, 0).
		pathCap(0).evictStart(2, 2).evictNext().evictNext().evictNext().evictEnd().b,
	// Full+SWA+Mamba, page 2, window 6, cap 2: a resumable insert left
	// suspended across a match, a lock and an early release, then resumed
	// to the end; another suspended across a Full eviction, then resumed;
	// a reset while a third is suspended.
	newHybridSeed(7, 5, 2).
		insert(false, 0, []byte{0, 1, 2, 3, 0, 1, 2, 3, 0, 1}, false, 0).
		insert(true, 0, []byte{0, 1, 2, 3, 0, 1, 2, 3, 3, 3, 2, 2}, true, 2).
		match(0, []byte{0, 1, 2, 3, 0, 1}).lock(2, 0).unlockSWA(0).
		resume().resume().resume().
		insert(true, 1, []byte{3, 2, 1, 0, 3, 2, 1, 0}, false, 0).evict(0, 30).resume().
		insert(true, 1, []byte{3, 2, 1, 0, 3, 2, 1, 0}, false, 1).endInsert().
		unlock(0, true).
		insert(true, 2, []byte{3, 2, 1, 0, 3, 2}, false, 0).reset().resume().b,
	// Full only, through the hybrid harness: resumable inserts never
	// suspend.
	newHybridSeed(0, 0, 0).
		insert(true, 0, []byte{0, 1, 2, 3}, false, 0).
		insert(true, 2, []byte{0, 1, 2, 3}, true, 0).resume().evict(0, 3).b,
}

// hybridFuzz is the state of one hybrid fuzz run.
type hybridFuzz struct {
	t       *testing.T
	tree    *core.Tree
	pools   *hybridPools
	page    int
	bigram  bool
	handles []core.NodeID
	live    map[uint64]*fuzzLock
	serials []uint64 // every receipt issued, live or not
	dead    map[uint64]core.Receipt
	walking bool
	// ins is the insert in flight (suspended at a barrier), or nil.
	ins       *fuzzInsert
	swaWindow int
}

type fuzzLock struct {
	r     core.Receipt
	early bool
}

// fuzzInsert is a request whose insert runs: the Full slots it still owns
// (those the tree has not adopted or had freed) and its Mamba state.
type fuzzInsert struct {
	fresh map[int32]bool
	mslot int32
	key   []uint32
	L     int
}

func (h *hybridFuzz) has(c core.Component) bool { return h.tree.Components().Has(c) }

func (h *hybridFuzz) remember(id core.NodeID) {
	if len(h.handles) < 64 && !slices.Contains(h.handles, id) {
		h.handles = append(h.handles, id)
	}
}

func (h *hybridFuzz) handle(r *fuzzReader) core.NodeID {
	k := r.next()
	switch {
	case k == 255:
		return core.NodeID(1<<40 | 7) // a slot that was never issued
	case len(h.handles) == 0:
		return h.tree.Root()
	}
	return h.handles[k%len(h.handles)]
}

func (h *hybridFuzz) isLive(id core.NodeID) bool {
	_, err := h.tree.Inspect(id)
	return err == nil
}

func (h *hybridFuzz) expectErr(op string, want, err error) {
	h.t.Helper()
	if want == nil {
		require.NoError(h.t, err, op)
		return
	}
	require.ErrorIs(h.t, err, want, op)
	require.False(h.t, errors.Is(err, core.ErrBroken), "%s: broke the tree: %v", op, err)
}

// snapshot maps each live node to its state before an operation frees.
func (h *hybridFuzz) snapshot() map[core.NodeID]core.NodeInfo {
	out := map[core.NodeID]core.NodeInfo{}
	for _, id := range h.tree.Nodes() {
		info, err := h.tree.Inspect(id)
		require.NoError(h.t, err)
		out[id] = info
	}
	return out
}

// execFrees checks eviction frees against the nodes they name (before
// the operation) and executes them.
func (h *hybridFuzz) execFrees(acts []core.Action, snap map[core.NodeID]core.NodeInfo) {
	t := h.t
	for _, a := range acts {
		require.Equal(t, core.ActionFreeDeviceSlots, a.Kind, "eviction emitted %v", a)
		info, ok := snap[a.Node]
		require.Truef(t, ok, "%v names a node that did not exist", a)
		switch a.Component {
		case core.Full, core.SWA:
			sameSlice(t, info.Device[core.Full], a.Slots, "%v must name the node's full slots", a)
			if a.Component == core.SWA {
				require.NotNil(t, info.Device[core.SWA], "%v: the node held no SWA", a)
			}
		case core.Mamba:
			sameSlice(t, info.Device[core.Mamba], a.Slots, "%v must name the node's state", a)
		}
	}
	h.pools.exec(h.tree, slices.Clone(acts))
}

// execInsert executes one insert step's actions and updates what the
// request still owns.
func (h *hybridFuzz) execInsert(acts []core.Action) {
	// Insert frees name the request's duplicates or (SWA recovery) the
	// tree's old slots, never slots the tree still holds.
	held, _ := h.treeOwned()
	for _, a := range acts {
		switch a.Kind {
		case core.ActionFreeDeviceKV, core.ActionFreeDeviceKVFullOnly:
			for _, s := range a.Slots {
				require.Falsef(h.t, held[s], "%v frees slot %d, which the tree holds", a, s)
			}
		case core.ActionRecoverSWAWithLockedFull:
			for _, s := range a.Incoming {
				require.Truef(h.t, h.ins != nil && h.ins.fresh[s], "%v takes slot %d, which the request does not own", a, s)
			}
		}
	}
	h.pools.exec(h.tree, slices.Clone(acts))
	h.dropFreed()
}

// dropFreed forgets request slots that are no longer allocated.
func (h *hybridFuzz) dropFreed() {
	if h.ins == nil {
		return
	}
	for s := range h.ins.fresh {
		if !h.pools.full.isUsed(s) {
			delete(h.ins.fresh, s)
		}
	}
}

// treeOwned lists the Full slots and states the tree holds.
func (h *hybridFuzz) treeOwned() (full, states map[int32]bool) {
	full, states = map[int32]bool{}, map[int32]bool{}
	for _, id := range h.tree.Nodes() {
		info, err := h.tree.Inspect(id)
		require.NoError(h.t, err)
		for _, s := range info.Device[core.Full] {
			full[s] = true
		}
		for _, s := range info.Device[core.Mamba] {
			states[s] = true
		}
	}
	return full, states
}

// finishInsert ends the request of the insert in flight: after a
// completed insert every slot it gave must be the tree's or freed; after
// an abandoned one the host frees what the tree did not keep.
func (h *hybridFuzz) finishInsert(res *core.InsertResult) {
	t := h.t
	q := h.ins
	h.ins = nil
	for s := range q.fresh {
		if !h.pools.full.isUsed(s) {
			delete(q.fresh, s)
		}
	}
	full, states := h.treeOwned()
	for s := range q.fresh {
		if full[s] {
			continue
		}
		require.Nilf(t, res, "a completed insert left slot %d to the request (neither adopted nor freed)", s)
		_, mapped := h.pools.swaOf[s]
		h.pools.freeFull([]int32{s}, mapped)
	}
	if q.mslot < 0 {
		return
	}
	switch {
	case res != nil && res.MambaExist:
		require.False(t, states[q.mslot], "MambaExist, yet the tree holds the request's state")
		h.pools.mamba.put(t, []int32{q.mslot})
	case res != nil:
		require.True(t, states[q.mslot] || !h.pools.mamba.isUsed(q.mslot), "the tree did not adopt the request's state")
	case !states[q.mslot] && h.pools.mamba.isUsed(q.mslot):
		h.pools.mamba.put(t, []int32{q.mslot})
	}
	if res != nil && q.L > 0 {
		w, _ := pathOf(t, h.tree, res.LastDevice)
		sameSlice(t, q.key, w, "LastDevice ends the inserted key")
		h.remember(res.LastDevice)
	}
}

// insertParams reads an insert's arguments; bad is set when the reader
// chose malformed ones (the error the tree must return).
func (h *hybridFuzz) insertParams(r *fuzzReader) (p core.InsertParams, bad error, q *fuzzInsert) {
	tree := h.tree
	ns := testNamespaces[r.next()%len(testNamespaces)]
	tok := r.tokens()
	words, L := modelKey(tok, h.page, h.bigram)
	var prefix []int32
	if r.next()%2 == 0 {
		res, err := tree.Match(nil, ns, tok)
		require.NoError(h.t, err)
		prefix = res.Indices
		h.remember(res.LastDevice)
	}
	fresh := h.pools.allocKV(L-len(prefix), h.has(core.SWA))
	width := 1
	if h.bigram {
		width = 2
	}
	q = &fuzzInsert{fresh: map[int32]bool{}, mslot: -1, key: words[:L*width], L: L}
	for _, s := range fresh {
		q.fresh[s] = true
	}
	p = core.InsertParams{Namespace: ns, Tokens: tok, Slots: append(slices.Clone(prefix), fresh...), PrevPrefixLen: len(prefix), MambaSlot: -1}
	flags := r.next()
	p.Chunked = flags&1 != 0
	p.TrackAdopted = flags&2 != 0
	p.Priority = int64(flags>>2) % 3
	if h.has(core.SWA) {
		p.SWAEvictedSeqlen = r.next() % (L/h.page + 2) * h.page
		p.SWABranchingSeqlen = r.next() % (L + 2)
	}
	if h.has(core.Mamba) {
		q.mslot = h.pools.mamba.get(1)[0]
		p.MambaSlot = q.mslot
	} else if flags&0x40 != 0 {
		p.MambaSlot = 5 // ignored without Mamba
	}
	switch r.next() % 16 {
	case 0:
		if L > 0 {
			p.Slots = p.Slots[:L-1]
			bad = core.ErrInvalidArgument
		}
	case 1:
		p.PrevPrefixLen = L + 1
		bad = core.ErrInvalidArgument
	case 2:
		if h.has(core.SWA) && h.page > 1 {
			p.SWAEvictedSeqlen = 1
			bad = core.ErrInvalidArgument
		} else if !h.has(core.SWA) {
			p.SWAEvictedSeqlen = h.page
			bad = core.ErrInvalidArgument
		}
	case 3:
		if h.has(core.Mamba) && L > 0 {
			p.MambaSlot = -1
			bad = core.ErrInvalidArgument
		}
	}
	// The request's SWA slots below its evicted length left its window.
	if e := min(p.SWAEvictedSeqlen, L); bad == nil && e > len(prefix) {
		h.pools.freeSWA(fresh[:e-len(prefix)])
	}
	return p, bad, q
}

// dropRequest frees a request that never reached the tree.
func (h *hybridFuzz) dropRequest(q *fuzzInsert) {
	for s := range q.fresh {
		_, mapped := h.pools.swaOf[s]
		h.pools.freeFull([]int32{s}, mapped)
	}
	if q.mslot >= 0 {
		h.pools.mamba.put(h.t, []int32{q.mslot})
	}
}

func (h *hybridFuzz) randomComp(r *fuzzReader) core.Component {
	return core.Component(r.next() % 4) // 3 is no component at all
}

func (h *hybridFuzz) op(r *fuzzReader) string {
	t := h.t
	tree := h.tree
	before := tree.Render()
	unchanged := func(op string, err error) {
		if err != nil {
			require.Equal(t, before, tree.Render(), "%s failed (%v) but changed the tree", op, err)
		}
	}
	switch code := r.next() % 16; code {
	case 0, 1, 2: // insert: one shot (0, 1) or resumable (2)
		p, bad, q := h.insertParams(r)
		before = tree.Render() // insertParams may have matched
		if h.ins != nil {
			bad = core.ErrInsertInFlight
		}
		var st core.InsertStep
		var err error
		if code < 2 {
			var res core.InsertResult
			var acts []core.Action
			res, acts, err = tree.Insert(p)
			st = core.InsertStep{Actions: acts, Done: true, Result: res}
		} else {
			st, err = tree.BeginInsert(p)
		}
		h.expectErr("insert", bad, err)
		unchanged("insert", err)
		if err != nil {
			h.dropRequest(q)
			return "insert(bad)"
		}
		h.ins = q
		h.execInsert(st.Actions)
		if st.Done {
			h.finishInsert(&st.Result)
			return "insert"
		}
		require.True(t, tree.InsertInFlight())
		return "begin-insert(suspended)"
	case 3: // resume the insert in flight
		st, err := tree.ResumeInsert()
		if h.ins == nil {
			h.expectErr("resume", core.ErrNoInsert, err)
			unchanged("resume", err)
			return "resume(none)"
		}
		if err != nil {
			// Abandoned: the node it stood on went away meanwhile.
			require.ErrorIs(t, err, core.ErrInvalidArgument)
			require.False(t, tree.InsertInFlight())
			h.execInsert(st.Actions)
			h.finishInsert(nil)
			return "resume(abandoned)"
		}
		h.execInsert(st.Actions)
		if st.Done {
			h.finishInsert(&st.Result)
			return "resume(done)"
		}
		return "resume"
	case 4: // abandon the insert in flight
		acts := tree.EndInsert()
		if h.ins == nil {
			require.Empty(t, acts)
			require.Equal(t, before, tree.Render())
			return "end-insert(none)"
		}
		h.execInsert(acts)
		h.finishInsert(nil)
		return "end-insert"
	case 5: // match, and check what it promises
		ns := fuzzNamespaces[r.next()%len(fuzzNamespaces)]
		res, err := tree.Match(nil, ns, r.tokens())
		require.NoError(t, err)
		require.Len(t, res.Indices, res.DeviceLen)
		h.remember(res.LastDevice)
		if h.has(core.SWA) {
			for k := max(0, res.DeviceLen-h.window()); k < res.DeviceLen; k++ {
				_, ok := h.pools.swaOf[res.Indices[k]]
				require.Truef(t, ok, "match of %d atoms: position %d has no SWA slot", res.DeviceLen, k)
			}
		}
		if h.has(core.Mamba) {
			require.Equal(t, res.DeviceLen > 0, res.MambaSlot >= 0, "a hit comes with a state to fork")
			if res.MambaSlot >= 0 {
				info, err := tree.Inspect(res.LastDevice)
				require.NoError(t, err)
				require.Equal(t, []int32{res.MambaSlot}, info.Device[core.Mamba])
			}
		} else {
			require.Equal(t, int32(-1), res.MambaSlot)
		}
		return "match"
	case 6: // lock a handle, maybe stale, maybe with a bad skip set
		id := h.handle(r)
		skip := core.ComponentSet(r.next() % 8)
		var want error
		switch {
		case !h.isLive(id):
			want = core.ErrStaleNode
		case skip.Has(core.Full),
			skip&^h.tree.Components() != 0,
			skip.Has(core.SWA) && h.has(core.Mamba) && !skip.Has(core.Mamba):
			want = core.ErrInvalidArgument
		}
		rc, err := tree.Lock(id, skip)
		h.expectErr("lock", want, err)
		unchanged("lock", err)
		if err == nil {
			h.live[rc.Serial] = &fuzzLock{r: rc}
			h.serials = append(h.serials, rc.Serial)
		}
		return "lock"
	case 7: // unlock, maybe with the wrong skipSWA, maybe twice
		if len(h.serials) == 0 {
			return "noop"
		}
		serial := h.serials[r.next()%len(h.serials)]
		l, ok := h.live[serial]
		var rc core.Receipt
		if ok {
			rc = l.r
		} else {
			rc = h.dead[serial]
		}
		skipSWA := r.next()%2 == 0
		var want error
		switch {
		case !h.isLive(rc.Node):
			want = core.ErrStaleNode
		case !ok:
			want = core.ErrReceipt
		case h.has(core.SWA) && skipSWA != l.early:
			want = core.ErrReceipt
		}
		err := tree.Unlock(rc.Node, rc, skipSWA)
		h.expectErr("unlock", want, err)
		unchanged("unlock", err)
		if err == nil {
			delete(h.live, serial)
			h.dead[serial] = rc
		}
		return "unlock"
	case 8: // release the SWA part early
		if len(h.serials) == 0 {
			return "noop"
		}
		serial := h.serials[r.next()%len(h.serials)]
		l, ok := h.live[serial]
		var rc core.Receipt
		if ok {
			rc = l.r
		} else {
			rc = h.dead[serial]
		}
		var want error
		switch {
		case !h.has(core.SWA):
			want = core.ErrInvalidArgument
		case !h.isLive(rc.Node):
			want = core.ErrStaleNode
		case !ok, l.early, rc.Skipped.Has(core.SWA):
			want = core.ErrReceipt
		}
		snap := h.snapshot()
		acts, err := tree.UnlockSWA(rc.Node, rc)
		h.expectErr("unlock-swa", want, err)
		unchanged("unlock-swa", err)
		if err == nil {
			l.early = true
			h.execFrees(acts, snap)
		}
		return "unlock-swa"
	case 9: // one-shot eviction of a component, maybe a bad one
		c := h.randomComp(r)
		want := r.next()%24 - 2
		var wantErr error
		switch {
		case h.walking:
			wantErr = core.ErrEvictionInFlight
		case !h.has(c), want < 0:
			wantErr = core.ErrInvalidArgument
		}
		snap := h.snapshot()
		evictable := tree.Evictable(c)
		acts, freed, err := tree.Evict(c, want, nil)
		h.expectErr("evict", wantErr, err)
		unchanged("evict", err)
		if err == nil {
			require.GreaterOrEqual(t, freed, min(want, evictable))
			if freed < want {
				require.Zero(t, tree.Evictable(c), "evict %s stopped short with evictable data left", c)
			}
			h.execFrees(acts, snap)
		}
		return "evict"
	case 10: // start a step-wise eviction
		c := h.randomComp(r)
		want := r.next()%24 - 2
		var wantErr error
		switch {
		case h.walking:
			wantErr = core.ErrEvictionInFlight
		case !h.has(c), want < 0:
			wantErr = core.ErrInvalidArgument
		}
		err := tree.EvictStart(c, want)
		h.expectErr("evict-start", wantErr, err)
		unchanged("evict-start", err)
		if err == nil {
			h.walking = true
		}
		return "evict-start"
	case 11, 12: // one eviction step
		var wantErr error
		if !h.walking {
			wantErr = core.ErrNoEviction
		}
		snap := h.snapshot()
		st, err := tree.EvictNext()
		h.expectErr("evict-next", wantErr, err)
		unchanged("evict-next", err)
		if err == nil {
			for _, a := range st.Actions {
				require.Equal(t, st.Node, a.Node, "a step's actions name its node")
			}
			h.execFrees(st.Actions, snap)
		}
		return "evict-next"
	case 13:
		tree.EvictEnd()
		h.walking = false
		return "evict-end"
	case 14: // the Mamba path cap on any node
		id := h.handle(r)
		var want error
		switch {
		case !h.isLive(id):
			want = core.ErrStaleNode
		case !h.has(core.Mamba):
			want = core.ErrInvalidArgument
		}
		snap := h.snapshot()
		acts, err := tree.EvictExcessPathStates(id)
		h.expectErr("path-cap", want, err)
		unchanged("path-cap", err)
		if err == nil {
			for _, a := range acts {
				require.Equal(t, core.Mamba, a.Component, "the path cap freed %v", a)
			}
			h.execFrees(acts, snap)
		}
		return "path-cap"
	default:
		if r.next()%4 != 0 {
			return "noop"
		}
		tree.Reset()
		h.pools = newHybridPools(t)
		clear(h.live)
		h.walking = false
		h.ins = nil
		require.False(t, tree.InsertInFlight(), "a reset drops the suspended insert")
		return "reset"
	}
}

// window is the tree's SWA window (from the config the run chose).
func (h *hybridFuzz) window() int { return h.swaWindow }

// check runs after every operation.
func (h *hybridFuzz) check(op string) {
	t := h.t
	require.NoError(t, h.tree.SanityCheck(), "after %s", op)
	p := h.pools
	full, states := map[int32]bool{}, map[int32]bool{}
	swaOwned := 0
	for _, id := range h.tree.Nodes() {
		info, err := h.tree.Inspect(id)
		require.NoError(t, err)
		hasSWA := info.Device[core.SWA] != nil
		for _, s := range info.Device[core.Full] {
			if full[s] || !p.full.isUsed(s) {
				require.Failf(t, "full slot", "after %s: %v holds slot %d (held twice: %v, allocated: %v)", op, id, s, full[s], p.full.isUsed(s))
			}
			full[s] = true
			if _, mapped := p.swaOf[s]; mapped != hasSWA {
				require.Failf(t, "SWA slot", "after %s: %v (SWA value: %v) holds full slot %d, mapped to an SWA slot: %v", op, id, hasSWA, s, mapped)
			}
			if hasSWA {
				swaOwned++
			}
		}
		for _, s := range info.Device[core.Mamba] {
			require.Falsef(t, states[s], "after %s: state %d held twice", op, s)
			require.Truef(t, p.mamba.isUsed(s), "after %s: %v holds state %d, which is not allocated", op, id, s)
			states[s] = true
		}
	}
	reqFull, reqSWA, reqStates := 0, 0, 0
	if q := h.ins; q != nil {
		for s := range q.fresh {
			if full[s] || !p.full.isUsed(s) {
				continue
			}
			reqFull++
			if _, mapped := p.swaOf[s]; mapped {
				reqSWA++
			}
		}
		if q.mslot >= 0 && !states[q.mslot] && p.mamba.isUsed(q.mslot) {
			reqStates++
		}
	}
	require.Equalf(t, p.full.nUsed, len(full)+reqFull, "after %s: full slots allocated vs held (leak)", op)
	require.Equalf(t, p.swa.nUsed, len(p.swaOf), "after %s: SWA slots vs mappings", op)
	require.Equalf(t, p.swa.nUsed, swaOwned+reqSWA, "after %s: SWA slots allocated vs held (leak)", op)
	require.Equalf(t, p.mamba.nUsed, len(states)+reqStates, "after %s: states allocated vs held (leak)", op)
	fullSize, _ := h.tree.TotalSize()
	require.Equal(t, len(full), fullSize)
	require.Len(t, h.tree.LiveReceipts(), len(h.live), "after %s", op)
	require.Equal(t, h.walking, h.tree.EvictionInFlight(), "after %s", op)
	require.Equal(t, h.ins != nil, h.tree.InsertInFlight(), "after %s", op)
}

// traceOps, when set, receives each operation's name (for tests that
// check what a seed exercises).
var traceOps func(op string)

func runHybridFuzz(t *testing.T, data []byte) {
	r := &fuzzReader{b: data}
	b0, b1, b2 := r.next(), r.next(), r.next()
	sets := [][]core.Component{
		{core.Full}, {core.Full, core.SWA}, {core.Full, core.Mamba}, {core.Full, core.SWA, core.Mamba},
	}
	// The configuration lists the set in an order the input picks.
	comps := permuted(sets[b0%4], uint64(b2>>2))
	pols := core.PolicyNames()
	cfg := core.Config{
		PageSize:   []int{1, 2, 4}[(b0>>2)%3],
		Bigram:     b0&0x10 != 0,
		Policy:     pols[(b0>>5)%len(pols)],
		Components: comps,
	}
	if slices.Contains(comps, core.SWA) {
		cfg.SWAWindow = 1 + b1%12
	}
	if slices.Contains(comps, core.Mamba) {
		cfg.MambaChunkSize = []int{0, 1, 2, 3, 5, 8}[(b1>>4)%6]
		cfg.MambaMaxPathStates = b2 % 4
		if b2&0x40 != 0 { // the marconi victim order, with a drawn alpha
			cfg.MambaPolicy = "marconi"
			cfg.MambaAlpha = float64(b1%3) / 2
		}
	}
	tree, err := core.New(cfg)
	require.NoError(t, err)
	h := &hybridFuzz{t: t, tree: tree, pools: newHybridPools(t), page: cfg.PageSize, bigram: cfg.Bigram,
		live: map[uint64]*fuzzLock{}, dead: map[uint64]core.Receipt{}, swaWindow: cfg.SWAWindow}
	h.remember(tree.Root())
	for steps := 0; !r.done() && steps < 200; steps++ {
		op := h.op(r)
		if traceOps != nil {
			traceOps(op)
		}
		h.check(op)
	}
	// Wind down: finish the insert in flight, release every lock; the
	// tree must end sane with every slot accounted for.
	if h.ins != nil {
		for {
			st, err := tree.ResumeInsert()
			h.execInsert(st.Actions)
			if err != nil {
				h.finishInsert(nil)
				break
			}
			if st.Done {
				h.finishInsert(&st.Result)
				break
			}
		}
	}
	for _, s := range h.serials {
		if l, ok := h.live[s]; ok {
			require.NoError(t, tree.Unlock(l.r.Node, l.r, l.early))
			delete(h.live, s)
		}
	}
	h.check("wind-down")
}
