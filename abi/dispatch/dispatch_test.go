package dispatch

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/radixkv/radixkv/abi"
	"github.com/radixkv/radixkv/core"
)

// call encodes q, runs it and decodes the response.
func call(t testing.TB, d *Dispatcher, q abi.Request) *abi.Response {
	t.Helper()
	var r abi.Response
	require.NoError(t, abi.DecodeResponse(&r, d.Call(abi.AppendRequest(nil, &q))))
	require.Equal(t, q.Op, r.Op)
	require.Equal(t, q.ID, r.ID)
	return &r
}

func ok(t testing.TB, d *Dispatcher, q abi.Request) *abi.Response {
	t.Helper()
	r := call(t, d, q)
	require.Equal(t, abi.StatusOK, r.Status, "%s: %s %s", q.Op, r.Code, r.Message)
	return r
}

func fails(t testing.TB, d *Dispatcher, q abi.Request, code abi.Code) *abi.Response {
	t.Helper()
	r := call(t, d, q)
	require.Equal(t, abi.StatusError, r.Status, "%s should fail", q.Op)
	require.Equal(t, code, r.Code, "%s: %s", q.Op, r.Message)
	require.NotEmpty(t, r.Message)
	return r
}

func create(t testing.TB, d *Dispatcher, page int) uint32 {
	return ok(t, d, abi.Request{Op: abi.OpCreate, Config: core.Config{PageSize: page}}).Handle
}

func insert(t testing.TB, d *Dispatcher, h uint32, toks []uint32, slots []int32) *abi.Response {
	return ok(t, d, abi.Request{Op: abi.OpInsert, Instance: h, Insert: core.InsertParams{Tokens: toks, Slots: slots}})
}

// snapshot is what must not change after a refused request.
func snapshot(t testing.TB, d *Dispatcher, h uint32) string {
	r := ok(t, d, abi.Request{Op: abi.OpRender, Instance: h})
	s := ok(t, d, abi.Request{Op: abi.OpStats, Instance: h})
	ok(t, d, abi.Request{Op: abi.OpSanityCheck, Instance: h})
	return r.Text + string(abi.AppendResponse(nil, s))
}

func TestDispatcher_BadInputsLeaveInstanceUsable(t *testing.T) {
	d := New()
	h := create(t, d, 2)
	ins := insert(t, d, h, []uint32{1, 2, 3, 4}, []int32{10, 11, 12, 13})
	leaf := ins.Insert.LastDevice
	lock := ok(t, d, abi.Request{Op: abi.OpLock, Instance: h, Node: leaf}).Receipt
	ok(t, d, abi.Request{Op: abi.OpEvict, Instance: h, Want: 100}) // nothing evictable: locked
	before := snapshot(t, d, h)

	hdr := func(op abi.Op, inst uint32) []byte {
		return abi.AppendRequest(nil, &abi.Request{Op: op, Instance: inst})[:abi.RequestHeaderSize]
	}
	raw := []struct {
		name string
		b    []byte
		code abi.Code
	}{
		{"empty", nil, abi.CodeTruncated},
		{"short header", hdr(abi.OpStats, h)[:23], abi.CodeTruncated},
		{"bad magic", append([]byte("XXXX"), hdr(abi.OpStats, h)[4:]...), abi.CodeBadMagic},
		{"bad version", func() []byte { b := hdr(abi.OpStats, h); b[4] = 2; return b }(), abi.CodeBadVersion},
		{"unknown op", func() []byte { b := hdr(abi.OpStats, h); b[6], b[7] = 0xee, 0xee; return b }(), abi.CodeUnknownOp},
		{"truncated match", hdr(abi.OpMatch, h), abi.CodeTruncated},
		{"trailing bytes", append(hdr(abi.OpStats, h), 1, 2), abi.CodeMalformed},
		{"huge token count", append(append(hdr(abi.OpMatch, h), make([]byte, 12)...), 0xff, 0xff, 0xff, 0xff), abi.CodeTruncated},
	}
	for _, c := range raw {
		var r abi.Response
		require.NoError(t, abi.DecodeResponse(&r, d.Call(c.b)), c.name)
		require.Equal(t, abi.StatusError, r.Status, c.name)
		require.Equal(t, c.code, r.Code, "%s: %s", c.name, r.Message)
		require.Equal(t, before, snapshot(t, d, h), c.name)
	}

	bad := []struct {
		name string
		q    abi.Request
		code abi.Code
	}{
		{"unknown instance", abi.Request{Op: abi.OpStats, Instance: 77}, abi.CodeUnknownInstance},
		{"stale node", abi.Request{Op: abi.OpLock, Instance: h, Node: leaf + 1<<32}, abi.CodeStaleNode},
		{"never issued node", abi.Request{Op: abi.OpInspect, Instance: h, Node: 99}, abi.CodeStaleNode},
		{"skip full", abi.Request{Op: abi.OpLock, Instance: h, Node: leaf, Skip: 1}, abi.CodeInvalidArgument},
		{"receipt serial", abi.Request{Op: abi.OpUnlock, Instance: h, Node: leaf,
			Receipt: core.Receipt{Node: leaf, Serial: lock.Serial + 1}}, abi.CodeReceipt},
		{"receipt node", abi.Request{Op: abi.OpUnlock, Instance: h, Node: leaf,
			Receipt: core.Receipt{Node: ins.Insert.LastDevice ^ 1, Serial: lock.Serial}}, abi.CodeReceipt},
		{"negative slot", abi.Request{Op: abi.OpInsert, Instance: h,
			Insert: core.InsertParams{Tokens: []uint32{7, 8}, Slots: []int32{1, -1}}}, abi.CodeInvalidArgument},
		{"slot count", abi.Request{Op: abi.OpInsert, Instance: h,
			Insert: core.InsertParams{Tokens: []uint32{7, 8}, Slots: []int32{1}}}, abi.CodeInvalidArgument},
		{"prev prefix out of range", abi.Request{Op: abi.OpBeginInsert, Instance: h,
			Insert: core.InsertParams{Tokens: []uint32{7, 8}, Slots: []int32{1, 2}, PrevPrefixLen: -3}}, abi.CodeInvalidArgument},
		{"negative want", abi.Request{Op: abi.OpEvict, Instance: h, Want: -1}, abi.CodeInvalidArgument},
		{"component out of range", abi.Request{Op: abi.OpEvictStart, Instance: h, Component: 200, Want: 1}, abi.CodeInvalidArgument},
		{"resume without insert", abi.Request{Op: abi.OpResumeInsert, Instance: h}, abi.CodeNoInsert},
		{"evict next without walk", abi.Request{Op: abi.OpEvictNext, Instance: h}, abi.CodeNoEviction},
		{"dfs stale", abi.Request{Op: abi.OpDFSOrder, Instance: h, Nodes: []core.NodeID{leaf, 12345}}, abi.CodeStaleNode},
		{"no host tier", abi.Request{Op: abi.OpCommitBackup, Instance: h, Node: leaf}, abi.CodeInvalidArgument},
		{"linker off", abi.Request{Op: abi.OpLinkerChain, Instance: h, Node: leaf}, abi.CodeInvalidArgument},
		{"bad config", abi.Request{Op: abi.OpCreate, Config: core.Config{PageSize: 1 << 20}}, abi.CodeInvalidConfig},
	}
	for i, c := range bad {
		c.q.ID = uint64(1000 + i)
		fails(t, d, c.q, c.code)
		require.Equal(t, before, snapshot(t, d, h), c.name)
	}

	// Still usable: the lock releases, the tree evicts, inserts go on.
	ok(t, d, abi.Request{Op: abi.OpUnlock, Instance: h, Node: leaf, Receipt: lock})
	ev := ok(t, d, abi.Request{Op: abi.OpEvict, Instance: h, Want: 4})
	require.Equal(t, int64(4), ev.Freed)
	insert(t, d, h, []uint32{1, 2}, []int32{20, 21})
	ok(t, d, abi.Request{Op: abi.OpSanityCheck, Instance: h})
}

func TestDispatcher_SecondInstanceHandlesAreRejected(t *testing.T) {
	d := New()
	a, b := create(t, d, 1), create(t, d, 1)
	toks, slots := []uint32{1, 2, 3}, []int32{1, 2, 3}
	na := insert(t, d, a, toks, slots).Insert.LastDevice
	nb := insert(t, d, b, toks, slots).Insert.LastDevice
	require.NotEqual(t, na, nb, "same core handle, different wire ids")
	ra := ok(t, d, abi.Request{Op: abi.OpLock, Instance: a, Node: na}).Receipt
	before := snapshot(t, d, b)
	fails(t, d, abi.Request{Op: abi.OpLock, Instance: b, Node: na}, abi.CodeStaleNode)
	fails(t, d, abi.Request{Op: abi.OpInspect, Instance: b, Node: na}, abi.CodeStaleNode)
	fails(t, d, abi.Request{Op: abi.OpUnlock, Instance: b, Node: na, Receipt: ra}, abi.CodeStaleNode)
	fails(t, d, abi.Request{Op: abi.OpUnlock, Instance: b, Node: nb, Receipt: ra}, abi.CodeReceipt)
	fails(t, d, abi.Request{Op: abi.OpDFSOrder, Instance: b, Nodes: []core.NodeID{na}}, abi.CodeStaleNode)
	require.Equal(t, before, snapshot(t, d, b))
	ok(t, d, abi.Request{Op: abi.OpUnlock, Instance: a, Node: na, Receipt: ra})
}

func TestDispatcher_HandlesNeverReused(t *testing.T) {
	d := New()
	h1 := create(t, d, 1)
	ok(t, d, abi.Request{Op: abi.OpDestroy, Instance: h1})
	fails(t, d, abi.Request{Op: abi.OpDestroy, Instance: h1}, abi.CodeUnknownInstance)
	fails(t, d, abi.Request{Op: abi.OpCreate, Config: core.Config{}}, abi.CodeInvalidConfig)
	h2 := create(t, d, 1)
	require.Equal(t, h1+1, h2)
	d.last = ^uint32(0)
	fails(t, d, abi.Request{Op: abi.OpCreate, Config: core.Config{PageSize: 1}}, abi.CodeExhausted)
}

func TestDispatcher_ResumableInsertAndStepwiseEviction(t *testing.T) {
	d := New()
	h := create(t, d, 1)
	st := ok(t, d, abi.Request{Op: abi.OpBeginInsert, Instance: h,
		Insert: core.InsertParams{Tokens: []uint32{1, 2, 3}, Slots: []int32{4, 5, 6}, TrackAdopted: true}})
	require.True(t, st.Done)
	require.Equal(t, [][]core.Range{{{Start: 0, End: 3}}, nil, nil}, st.Insert.Adopted)
	ok(t, d, abi.Request{Op: abi.OpEndInsert, Instance: h})
	dup := insert(t, d, h, []uint32{1, 2, 3, 4}, []int32{7, 8, 9, 10})
	require.Equal(t, []core.Action{{Kind: core.ActionFreeDeviceKV, Slots: []int32{7, 8, 9}}}, dup.Actions)

	ok(t, d, abi.Request{Op: abi.OpEvictStart, Instance: h, Want: 2})
	fails(t, d, abi.Request{Op: abi.OpEvictStart, Instance: h, Want: 2}, abi.CodeEvictionInFlight)
	s := ok(t, d, abi.Request{Op: abi.OpEvictNext, Instance: h})
	require.Equal(t, int64(1), s.Freed)
	require.Equal(t, []int32{10}, s.Actions[0].Slots)
	require.Equal(t, s.Node, s.Actions[0].Node, "action node ids are in wire form too")
	s = ok(t, d, abi.Request{Op: abi.OpEvictNext, Instance: h})
	require.Equal(t, int64(3), s.Freed)
	s = ok(t, d, abi.Request{Op: abi.OpEvictNext, Instance: h})
	require.True(t, s.Done)
	ok(t, d, abi.Request{Op: abi.OpEvictEnd, Instance: h})
	ok(t, d, abi.Request{Op: abi.OpSanityCheck, Instance: h})
}

func TestDispatcher_NodeIDsRoundTripThroughEveryOp(t *testing.T) {
	d := New()
	h := create(t, d, 1)
	insert(t, d, h, []uint32{1, 2, 3}, []int32{1, 2, 3})
	insert(t, d, h, []uint32{1, 2, 9}, []int32{1, 2, 9})
	nodes := ok(t, d, abi.Request{Op: abi.OpNodes, Instance: h}).Nodes
	require.Len(t, nodes, 4)
	for _, n := range nodes {
		info := ok(t, d, abi.Request{Op: abi.OpInspect, Instance: h, Node: n}).Info
		require.Equal(t, n, info.ID)
		for _, c := range info.Children {
			require.Equal(t, n, ok(t, d, abi.Request{Op: abi.OpInspect, Instance: h, Node: c}).Info.Parent)
		}
	}
	leaves := ok(t, d, abi.Request{Op: abi.OpDeviceLeaves, Instance: h}).Nodes
	require.Len(t, leaves, 2)
	order := ok(t, d, abi.Request{Op: abi.OpDFSOrder, Instance: h, Nodes: nodes}).Order
	require.ElementsMatch(t, []int32{0, 1, 2, 3}, order)
	m := ok(t, d, abi.Request{Op: abi.OpMatch, Instance: h, Insert: core.InsertParams{Tokens: []uint32{1, 2, 9}}})
	require.Equal(t, []int32{1, 2, 9}, m.Match.Indices)
	require.Contains(t, leaves, m.Match.LastDevice)
}

func TestDispatcher_RecoversFromPanics(t *testing.T) {
	d := New()
	h := create(t, d, 1)
	insert(t, d, h, []uint32{1}, []int32{1})
	testHook = func(op abi.Op) {
		if op == abi.OpMatch {
			panic("injected")
		}
	}
	defer func() { testHook = nil }()
	r := fails(t, d, abi.Request{Op: abi.OpMatch, Instance: h, ID: 5}, abi.CodeInternal)
	require.Contains(t, r.Message, "injected")
	require.Equal(t, uint64(5), r.ID)
	fails(t, d, abi.Request{Op: abi.OpStats, Instance: h}, abi.CodeBroken)
	testHook = nil
	ok(t, d, abi.Request{Op: abi.OpReset, Instance: h})
	ok(t, d, abi.Request{Op: abi.OpStats, Instance: h})
}

func TestDispatcher_ResponseBufferIsReused(t *testing.T) {
	d := New()
	a := d.Call(abi.AppendRequest(nil, &abi.Request{Op: abi.OpVersion, ID: 1}))
	saved := bytes.Clone(a)
	b := d.Call(abi.AppendRequest(nil, &abi.Request{Op: abi.OpVersion, ID: 2}))
	require.Equal(t, &a[0], &b[0], "documented: the next Call overwrites the buffer")
	require.NotEqual(t, saved, a)
}

// TestDispatcher_MatchAddsNoAllocations pins the steady-state hot path:
// decoding the request and encoding the response allocate nothing beyond
// what core.Tree.Match itself allocates.
func TestDispatcher_MatchAddsNoAllocations(t *testing.T) {
	d := New()
	h := create(t, d, 16)
	toks := make([]uint32, 4096)
	slots := make([]int32, 4096)
	for i := range toks {
		toks[i], slots[i] = uint32(i*7), int32(i)
	}
	insert(t, d, h, toks, slots)
	req := abi.AppendRequest(nil, &abi.Request{Op: abi.OpMatch, Instance: h, Insert: core.InsertParams{Tokens: toks}})
	d.Call(req)
	allocs := testing.AllocsPerRun(100, func() { d.Call(req) })
	tree := d.trees[h].tree
	buf := make([]int32, 0, len(toks))
	coreAllocs := testing.AllocsPerRun(100, func() { _, _ = tree.Match(buf[:0], core.Namespace{}, toks) })
	t.Logf("allocations per match call: dispatcher %v, of which core.Tree.Match %v", allocs, coreAllocs)
	require.Equal(t, coreAllocs, allocs)
	lock := abi.AppendRequest(nil, &abi.Request{Op: abi.OpStats, Instance: h})
	d.Call(lock)
	require.LessOrEqual(t, testing.AllocsPerRun(100, func() { d.Call(lock) }), 1.0)
}

func benchCall(b *testing.B, d *Dispatcher, req []byte) {
	d.Call(req)
	b.SetBytes(int64(len(req)))
	b.ReportAllocs()
	for b.Loop() {
		d.Call(req)
	}
}

func BenchmarkDispatcher_Match4096(b *testing.B) {
	d := New()
	h := create(b, d, 16)
	toks := make([]uint32, 4096)
	slots := make([]int32, 4096)
	for i := range toks {
		toks[i], slots[i] = uint32(i*7), int32(i)
	}
	insert(b, d, h, toks, slots)
	benchCall(b, d, abi.AppendRequest(nil, &abi.Request{Op: abi.OpMatch, Instance: h, Insert: core.InsertParams{Tokens: toks}}))
}

func BenchmarkDispatcher_InsertDuplicate4096(b *testing.B) {
	d := New()
	h := create(b, d, 16)
	toks := make([]uint32, 4096)
	slots := make([]int32, 4096)
	for i := range toks {
		toks[i], slots[i] = uint32(i*7), int32(i)
	}
	insert(b, d, h, toks, slots)
	benchCall(b, d, abi.AppendRequest(nil, &abi.Request{Op: abi.OpInsert, Instance: h, Insert: core.InsertParams{Tokens: toks, Slots: slots, PrevPrefixLen: 4096}}))
}

func BenchmarkDispatcher_Version(b *testing.B) {
	benchCall(b, New(), abi.AppendRequest(nil, &abi.Request{Op: abi.OpVersion}))
}

// TestDispatcher_HybridOps runs the SWA and Mamba ops through the wire:
// the new insert fields and actions, the Mamba slot of a match, the early
// SWA release, the path-state cap and the recency lists, with node ids in
// wire form everywhere (actions, receipts, lists).
func TestDispatcher_HybridOps(t *testing.T) {
	d := New()
	create(t, d, 1) // a first instance, so the hybrid one has another tag
	h := ok(t, d, abi.Request{Op: abi.OpCreate, Config: core.Config{PageSize: 2,
		Components: []core.Component{core.Full, core.SWA, core.Mamba}, SWAWindow: 4, MambaMaxPathStates: 1}}).Handle
	ins := ok(t, d, abi.Request{Op: abi.OpInsert, Instance: h, Insert: core.InsertParams{
		Tokens: []uint32{1, 2, 3, 4, 5, 6, 7, 8}, Slots: []int32{10, 11, 12, 13, 14, 15, 16, 17}, MambaSlot: 3}})
	leaf := ins.Insert.LastDevice
	require.False(t, ins.Insert.MambaExist)
	var kinds []core.ActionKind
	for _, a := range ins.Actions {
		kinds = append(kinds, a.Kind)
	}
	require.Equal(t, []core.ActionKind{core.ActionSWARebuild, core.ActionSWARebuild, core.ActionMambaEvictExcessPathStates}, kinds)
	require.Equal(t, leaf, ins.Actions[2].Node, "action node ids are in wire form")
	require.Equal(t, []int32{14, 15, 16, 17}, ins.Actions[1].Slots)

	ok(t, d, abi.Request{Op: abi.OpEvictExcessPathStates, Instance: h, Node: leaf})
	m := ok(t, d, abi.Request{Op: abi.OpMatch, Instance: h, Insert: core.InsertParams{Tokens: []uint32{1, 2, 3, 4, 5, 6, 7, 8}}}).Match
	require.Equal(t, int32(3), m.MambaSlot)
	require.Equal(t, leaf, m.LastDevice)
	lru := ok(t, d, abi.Request{Op: abi.OpLRUOrder, Instance: h, Component: core.Mamba}).Nodes
	require.Equal(t, []core.NodeID{leaf}, lru)

	rc := ok(t, d, abi.Request{Op: abi.OpLock, Instance: h, Node: leaf}).Receipt
	require.Equal(t, leaf, rc.Node)
	require.NotZero(t, rc.SWAUUID)
	fails(t, d, abi.Request{Op: abi.OpUnlockSWAEarly, Instance: h, Node: 0xdead_0000_0001, Receipt: rc}, abi.CodeStaleNode)
	ok(t, d, abi.Request{Op: abi.OpUnlockSWAEarly, Instance: h, Node: leaf, Receipt: rc})
	fails(t, d, abi.Request{Op: abi.OpUnlockSWAEarly, Instance: h, Node: leaf, Receipt: rc}, abi.CodeReceipt)
	fails(t, d, abi.Request{Op: abi.OpUnlock, Instance: h, Node: leaf, Receipt: rc}, abi.CodeReceipt)
	ok(t, d, abi.Request{Op: abi.OpUnlock, Instance: h, Node: leaf, Receipt: rc, SkipSWA: true})

	ev := ok(t, d, abi.Request{Op: abi.OpEvict, Instance: h, Component: core.SWA, Want: 1})
	require.Equal(t, int64(4), ev.Freed)
	require.Equal(t, core.SWA, ev.Actions[0].Component)
	require.Equal(t, []int32{10, 11, 12, 13}, ev.Actions[0].Slots, "an SWA free names Full slots")
	fails(t, d, abi.Request{Op: abi.OpInsert, Instance: h, Insert: core.InsertParams{
		Tokens: []uint32{9, 9}, Slots: []int32{1, 2}, MambaSlot: -1}}, abi.CodeInvalidArgument)
	ok(t, d, abi.Request{Op: abi.OpSanityCheck, Instance: h})
}

// TestDispatcher_BeginInsertMatched: begin_insert_matched answers and
// changes the tree as the begin_insert it stands for, whether the sent
// slots were decoded in place after room for the match's (a buffer grown
// by earlier calls) or had to be joined to them (a fresh dispatcher).
func TestDispatcher_BeginInsertMatched(t *testing.T) {
	toks := make([]uint32, 40)
	for i := range toks {
		toks[i] = uint32(i + 1)
	}
	slots := func(from, n int) []int32 {
		s := make([]int32, n)
		for i := range s {
			s[i] = int32(from + i)
		}
		return s
	}
	for _, warm := range []bool{false, true} {
		plain, fused := New(), New()
		hp, hf := create(t, plain, 2), create(t, fused, 2)
		if warm {
			// Grow the fused dispatcher's slot buffer past what the
			// insert needs.
			insert(t, fused, hf, toks[20:], slots(500, 20))
			insert(t, plain, hp, toks[20:], slots(500, 20))
		}
		insert(t, plain, hp, toks[:8], slots(0, 8))
		insert(t, fused, hf, toks[:8], slots(0, 8))
		mp := ok(t, plain, abi.Request{Op: abi.OpMatch, Instance: hp, ID: 7, Insert: core.InsertParams{Tokens: toks[:12]}})
		mf := ok(t, fused, abi.Request{Op: abi.OpMatch, Instance: hf, ID: 7, Insert: core.InsertParams{Tokens: toks[:12]}})
		require.Equal(t, mp.Match.Indices, mf.Match.Indices)
		k := len(mf.Match.Indices)
		require.Equal(t, 8, k)
		all := append(append([]int32(nil), mp.Match.Indices...), slots(100, 4)...)
		rp := ok(t, plain, abi.Request{Op: abi.OpBeginInsert, Instance: hp, ID: 8,
			Insert: core.InsertParams{Tokens: toks[:12], Slots: all, PrevPrefixLen: k}})
		rf := ok(t, fused, abi.Request{Op: abi.OpBeginInsertMatched, Instance: hf, ID: 8,
			Matched: abi.MatchedRef{MatchID: 7, Tokens: 12, Slots: uint32(k)},
			Insert:  core.InsertParams{Slots: all[k:], PrevPrefixLen: k}})
		require.Equal(t, rp.Done, rf.Done, "warm=%v", warm)
		require.Equal(t, rp.Insert, rf.Insert, "warm=%v", warm)
		require.Equal(t, rp.Actions, rf.Actions, "warm=%v", warm)
		require.Equal(t, snapshot(t, plain, hp), snapshot(t, fused, hf), "warm=%v", warm)
		// The kept match is unchanged by the insert that used it.
		rf = ok(t, fused, abi.Request{Op: abi.OpBeginInsertMatched, Instance: hf, ID: 9,
			Matched: abi.MatchedRef{MatchID: 7, Tokens: 12, Slots: uint32(k)},
			Insert:  core.InsertParams{Slots: all[k:], PrevPrefixLen: k}})
		require.Equal(t, 12, rf.Insert.TotalLen)
	}
}
