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
		if r.next()%4 != 0 {
			return "noop"
		}
		tree.Reset()
		h.alloc = newFakeAlloc()
		clear(h.live)
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
	f.Fuzz(func(t *testing.T, data []byte) {
		runFuzzOps(t, data)
	})
}
