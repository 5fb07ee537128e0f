package abi_test

import (
	"encoding/hex"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/radixkv/radixkv/abi"
	"github.com/radixkv/radixkv/abi/dispatch"
	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/core/flops"
)

func sampleRequests() []abi.Request {
	ns := core.Namespace{ExtraKey: "x", CacheSalt: "salt", LoRA: "l"}
	rc := core.Receipt{Node: 0x1234_0000_0007, Serial: 9, Delta: 12, SWAUUID: -3, SWAHostUUID: 4, Skipped: 2}
	hrc := core.Receipt{Node: 0x1234_0000_0008, Serial: 10, SWAHostUUID: -5, Skipped: 1, Host: true}
	return []abi.Request{
		{Op: abi.OpVersion, ID: 1},
		{Op: abi.OpCreate, ID: 2, Config: core.Config{PageSize: 16, Components: []core.Component{core.Full, core.SWA},
			Policy: "gdsf", Bigram: true, HostTier: true, WritePolicy: core.WriteBack, WriteThroughThreshold: -2, KVEvents: true,
			HashConvention: core.HashVLLM, SWAWindow: -8, MambaChunkSize: 1 << 20, MambaMaxPathStates: 3, ExternalLinker: true,
			MambaPolicy: "marconi", MambaModel: flops.Model{SSMLayers: 1, AttnLayers: -2, MLPLayers: 3, D: 4, N: 5}, MambaAlpha: 0.25}},
		{Op: abi.OpDestroy, Instance: 3, ID: 3},
		{Op: abi.OpReset, Instance: 3},
		{Op: abi.OpStats, Instance: 3},
		{Op: abi.OpMatch, Instance: 1, ID: 1 << 63, Insert: core.InsertParams{Namespace: ns, Tokens: []uint32{1, 0xffffffff, 3}}},
		{Op: abi.OpInsert, Instance: 1, Insert: core.InsertParams{Namespace: ns, Tokens: []uint32{5, 6}, Slots: []int32{-1, 1 << 30},
			PrevPrefixLen: -7, Priority: -1 << 40, Chunked: true, TrackAdopted: true, SessionID: "sess",
			SWAEvictedSeqlen: 6, SWABranchingSeqlen: -2, MambaSlot: -1}},
		{Op: abi.OpBeginInsert, Instance: 1, Insert: core.InsertParams{Tokens: []uint32{5}, Slots: []int32{1}, MambaSlot: 1<<31 - 1}},
		{Op: abi.OpResumeInsert, Instance: 1},
		{Op: abi.OpEndInsert, Instance: 1},
		{Op: abi.OpLock, Instance: 1, Node: 0xffff_ffff_ffff_ffff, Skip: 6},
		{Op: abi.OpUnlock, Instance: 1, Node: 77, Receipt: rc, SkipSWA: true},
		{Op: abi.OpUnlockSWAEarly, Instance: 1, Node: 78, Receipt: rc},
		{Op: abi.OpEvict, Instance: 1, Component: 2, Want: -5},
		{Op: abi.OpEvictStart, Instance: 1, Component: 9, Want: 1 << 50},
		{Op: abi.OpEvictNext, Instance: 1},
		{Op: abi.OpEvictEnd, Instance: 1},
		{Op: abi.OpEvictExcessPathStates, Instance: 1, Node: 0xfedc_0000_0003},
		{Op: abi.OpSanityCheck, Instance: 1},
		{Op: abi.OpInspect, Instance: 1, Node: 5},
		{Op: abi.OpRender, Instance: 1},
		{Op: abi.OpDeviceLeaves, Instance: 1},
		{Op: abi.OpNodes, Instance: 1},
		{Op: abi.OpDFSOrder, Instance: 1, Nodes: []core.NodeID{1, 2, 0xabcdef}},
		{Op: abi.OpLRUOrder, Instance: 1, Component: core.SWA, Host: true},
		{Op: abi.OpTakeEvents, Instance: 1},
		{Op: abi.OpSanityCheckOngoing, Instance: 1, Ongoing: core.Ongoing{WriteThrough: []core.NodeID{3, 4}, LoadBack: []core.NodeID{}}},
		{Op: abi.OpSanityCheckOngoing, Instance: 1},
		{Op: abi.OpHostLock, Instance: 1, Node: 0xabc_0000_0001},
		{Op: abi.OpHostUnlock, Instance: 1, Node: 0xabc_0000_0001, Receipt: hrc},
		{Op: abi.OpEvictHost, Instance: 1, Component: core.Mamba, Want: 17},
		{Op: abi.OpBackupSpec, Instance: 1, Node: 41},
		{Op: abi.OpCommitBackup, Instance: 1, Node: 41, Backup: core.BackupCommit{Full: []int32{1, -2}, SWA: [][]int32{{3}, nil, {4, 5}}, Mamba: 6}},
		{Op: abi.OpCommitBackup, Instance: 1, Node: 42, Backup: core.BackupCommit{Full: []int32{}, Mamba: -1}},
		{Op: abi.OpCommitBackup, Instance: 1, Node: 43, Backup: core.BackupCommit{Mamba: -1}},
		{Op: abi.OpMarkWriteThroughPending, Instance: 1, Nodes: []core.NodeID{5, 6}, Ack: 7},
		{Op: abi.OpFinishWriteThrough, Instance: 1, Nodes: []core.NodeID{5}, Ack: -7},
		{Op: abi.OpDemote, Instance: 1, Node: 8},
		{Op: abi.OpDropSubtreeNoHost, Instance: 1, Node: 9},
		{Op: abi.OpLoadBack, Instance: 1, Node: 10},
		{Op: abi.OpCommitLoadBack, Instance: 1, Node: 10, LoadBack: core.LoadBackCommit{Full: [][]int32{{1, 2}, {3}}, SWA: [][]int32{{4}}, Mamba: -1}},
		{Op: abi.OpCommitLoadBack, Instance: 1, Node: 11, LoadBack: core.LoadBackCommit{Mamba: 12}},
		{Op: abi.OpFinishLoadBack, Instance: 1, Node: 10},
		{Op: abi.OpInsertHost, Instance: 1, Node: 12, Insert: core.InsertParams{Namespace: ns, Tokens: []uint32{1, 2}, Slots: []int32{9, -9}}},
		{Op: abi.OpStorageSpec, Instance: 1, Node: 13},
		{Op: abi.OpBackfillHashes, Instance: 1},
		{Op: abi.OpProtect, Instance: 1, Insert: core.InsertParams{Namespace: ns, Tokens: []uint32{1, 2, 3}}},
		{Op: abi.OpUnprotect, Instance: 1, Serial: 1<<64 - 1},
		{Op: abi.OpLinkerChain, Instance: 1, Node: 14},
		{Op: abi.OpMarkLinkerPending, Instance: 1, Nodes: []core.NodeID{15}, OffloadID: 16},
		{Op: abi.OpFinishLinkerOffload, Instance: 1, Nodes: []core.NodeID{15, 17}, OffloadID: 16, OK: true},
		{Op: abi.OpMarkLinkerStoredPath, Instance: 1, Node: 18, Until: 19},
		{Op: abi.OpMarkLinkerStoredPath, Instance: 1, Node: 18},
	}
}

func TestRequest_RoundTrip(t *testing.T) {
	for _, q := range sampleRequests() {
		b := abi.AppendRequest(nil, &q)
		var got abi.Request
		require.NoError(t, abi.DecodeRequest(&got, b), q.Op.String())
		require.Equal(t, q, got, q.Op.String())
	}
}

func TestDecodeRequest_EveryTruncation(t *testing.T) {
	for _, q := range sampleRequests() {
		b := abi.AppendRequest(nil, &q)
		for n := range len(b) {
			var got abi.Request
			err := abi.DecodeRequest(&got, b[:n])
			var ae *abi.Error
			require.True(t, errors.As(err, &ae), "%s cut at %d: %v", q.Op, n, err)
			require.Equal(t, abi.CodeTruncated, ae.Code, "%s cut at %d: %v", q.Op, n, err)
		}
		var got abi.Request
		err := abi.DecodeRequest(&got, append(b, 0))
		var ae *abi.Error
		require.True(t, errors.As(err, &ae))
		require.Equal(t, abi.CodeMalformed, ae.Code, "%s with a trailing byte", q.Op)
	}
}

func TestDecodeRequest_ReusesScratch(t *testing.T) {
	q := abi.Request{Op: abi.OpMatch, Instance: 1, Insert: core.InsertParams{Tokens: []uint32{1, 2, 3, 4}}}
	b := abi.AppendRequest(nil, &q)
	scratch := make([]uint32, 0, 16)
	var got abi.Request
	got.Insert.Tokens = scratch
	require.NoError(t, abi.DecodeRequest(&got, b))
	require.Equal(t, []uint32{1, 2, 3, 4}, got.Insert.Tokens)
	require.Same(t, &scratch[:1][0], &got.Insert.Tokens[0], "decoded into the caller's buffer")
}

func sampleResponses() []abi.Response {
	acts := []core.Action{
		{Kind: core.ActionFreeDeviceKV, Slots: []int32{1, 2, 3}},
		{Kind: core.ActionBackupKV, Node: 9, Nodes: []core.NodeID{7, 8, 9}},
		{Kind: core.ActionReplaceWriteThroughOnSplit, Ack: -4, Nodes: []core.NodeID{1, 2, 3}},
		{Kind: core.ActionFreeHostSlots, Component: core.Mamba, Node: 3, Slots: []int32{-1}},
		{Kind: core.ActionSWARebuild, Node: 4, Slots: []int32{5, 6}},
		{Kind: core.ActionRecoverSWAWithLockedFull, Node: 5, Slots: []int32{7, 8}, Incoming: []int32{9, 10}},
		{Kind: core.ActionMambaEvictExcessPathStates, Node: 6},
		{Kind: core.ActionRebuildFullToSWAMapping, Node: 7, Slots: []int32{1, 2}, Incoming: []int32{3, 4}},
	}
	info := core.NodeInfo{ID: 5, Parent: 1, Children: []core.NodeID{6, 7}, Namespace: core.Namespace{LoRA: "l"},
		Key: []uint32{1, 2}, Hits: 3, Priority: -9, LastAccess: 10, Creation: 2, DLeaf: true, SWAUUID: -11,
		HLeaf: true, WriteThroughPending: 12, PinnedBy: 13, ExternalStored: true, ExternalPending: -14}
	info.Device[0] = []int32{4, 5}
	info.Host[1] = []int32{}
	info.Lock = [3]uint32{1, 2, 3}
	info.HostLock = [3]uint32{4, 5, 6}
	return []abi.Response{
		{Op: abi.OpVersion, ID: 1, ABIVersion: 1, Impl: "radixkv"},
		{Op: abi.OpCreate, Handle: 4, Root: 1 << 40, PageSize: 64, CompSet: 1, Policy: "lru"},
		{Op: abi.OpDestroy, Instance: 2},
		{Op: abi.OpReset, Root: 3},
		{Op: abi.OpStats, Stats: abi.Stats{Root: 1, PageSize: 2, Components: 1, Policy: "fifo",
			Evictable: [3]int64{1, 2, 3}, Protected: [3]int64{4, 5, 6}, InsertInFlight: true, LiveReceipts: 8}},
		{Op: abi.OpMatch, Match: core.MatchResult{Indices: []int32{1, 2}, DeviceLen: 2, LastDevice: 4, LastHost: 5, Best: 6,
			HostHitLen: 7, SWAHostHitLen: 8, SWABranchingSeqlen: -1, MambaHostHitLen: 1, MambaBranchingSeqlen: -1, FullKVHitLen: 9,
			MambaSlot: 12}, Actions: acts},
		{Op: abi.OpInsert, Insert: core.InsertResult{PrefixLen: 1, TotalLen: 2, LastDevice: 3, MambaExist: true, SWABranchInserted: true,
			Adopted: [][]core.Range{{{Start: 0, End: 2}, {Start: 4, End: 6}}, nil, {{Start: 1, End: 2}}}}, Actions: acts},
		{Op: abi.OpBeginInsert, Done: true, Insert: core.InsertResult{TotalLen: 2}},
		{Op: abi.OpResumeInsert, Insert: core.InsertResult{Adopted: [][]core.Range{}}},
		{Op: abi.OpLock, Receipt: core.Receipt{Node: 1, Serial: 2, Delta: 3, SWAUUID: 4, SWAHostUUID: 5, Skipped: 6}},
		{Op: abi.OpEvict, Freed: 99, Actions: acts},
		{Op: abi.OpEvictNext, Node: 3, Freed: 4, Done: true},
		{Op: abi.OpInspect, Info: info},
		{Op: abi.OpRender, Text: "tree page=1\n"},
		{Op: abi.OpDeviceLeaves, Nodes: []core.NodeID{1, 2}},
		{Op: abi.OpNodes, Nodes: []core.NodeID{3}},
		{Op: abi.OpLRUOrder, Nodes: []core.NodeID{4, 5}},
		{Op: abi.OpUnlockSWAEarly, Actions: acts},
		{Op: abi.OpEvictExcessPathStates, Actions: acts[len(acts)-2 : len(acts)-1]},
		{Op: abi.OpHostLock, Receipt: core.Receipt{Node: 1, Serial: 2, SWAHostUUID: 5, Skipped: 1, Host: true}},
		{Op: abi.OpHostUnlock},
		{Op: abi.OpEvictHost, Freed: 3, Actions: acts[3:4]},
		{Op: abi.OpBackupSpec, Spec: core.BackupSpec{Node: 4, Full: []int32{1, 2}, SWA: []core.NodeSlots{{Node: 3, Slots: []int32{7}}, {Node: 4, Slots: []int32{1, 2}}}, Mamba: 9}},
		{Op: abi.OpBackupSpec, Spec: core.BackupSpec{Node: 4, Mamba: -1}},
		{Op: abi.OpBackupSpec, Spec: core.BackupSpec{Node: 4, Full: []int32{}, Mamba: -1}},
		{Op: abi.OpCommitBackup},
		{Op: abi.OpMarkWriteThroughPending, Nodes: []core.NodeID{2, 3}},
		{Op: abi.OpFinishWriteThrough},
		{Op: abi.OpDemote, Actions: acts},
		{Op: abi.OpDropSubtreeNoHost, Dropped: true, Actions: acts[:1]},
		{Op: abi.OpLoadBack, Plan: core.LoadBackPlan{Anchor: 5, Full: []core.NodeSlots{{Node: 4, Slots: []int32{1}}, {Node: 5, Slots: []int32{2, 3}}},
			SWA: []core.NodeSlots{{Node: 5, Slots: []int32{8, 9}}}, Mamba: 4}},
		{Op: abi.OpLoadBack, Plan: core.LoadBackPlan{Anchor: 5, Mamba: -1, Pinned: true}},
		{Op: abi.OpCommitLoadBack, Actions: acts[len(acts)-1:]},
		{Op: abi.OpFinishLoadBack},
		{Op: abi.OpInsertHost, InsertHost: core.InsertHostResult{Node: 6, PrefixLen: 4, Dropped: true}, Actions: acts[2:3]},
		{Op: abi.OpStorageSpec, Storage: core.StorageSpec{Node: 7, PrefixKeys: []string{"aa", "bb"}, Full: []string{"cc", "dd"}, SWA: []string{"dd"}, Mamba: "dd"}},
		{Op: abi.OpStorageSpec, Storage: core.StorageSpec{Node: 7, Full: []string{"cc"}}},
		{Op: abi.OpBackfillHashes, Hashed: 12},
		{Op: abi.OpProtect, Protection: core.Protection{Serial: 1 << 63, Len: 48}},
		{Op: abi.OpUnprotect},
		{Op: abi.OpLinkerChain, Nodes: []core.NodeID{8, 9}},
		{Op: abi.OpMarkLinkerPending},
		{Op: abi.OpFinishLinkerOffload},
		{Op: abi.OpMarkLinkerStoredPath},
		{Op: abi.OpSanityCheckOngoing},
		{Op: abi.OpDFSOrder, Order: []int32{2, 0, 1}},
		{Op: abi.OpTakeEvents, Events: sampleEvents(), Actions: acts[:1]},
		{Op: abi.OpTakeEvents},
		{Op: abi.OpInsert, Status: abi.StatusError, Code: abi.CodeBroken, Message: "boom", Actions: acts[:1]},
	}
}

func sampleEvents() []core.Event {
	return []core.Event{
		{Kind: core.EventBlockStored, BlockHashes: []int64{-1, 1 << 62}, ParentBlockHash: -7, HasParent: true,
			TokenIDs: []uint32{1, 0xffffffff, 3, 4}, BlockSize: 2, Medium: core.MediumCPU,
			CacheSalt: "salt", SessionID: "s\xff", LoRA: "l"},
		{Kind: core.EventBlockStored, BlockHashes: []int64{5}, TokenIDs: []uint32{9}, BlockSize: 1},
		{Kind: core.EventBlockRemoved, BlockHashes: []int64{3, 2, 1}},
		{Kind: core.EventAllBlocksCleared},
	}
}

func TestResponse_RoundTrip(t *testing.T) {
	for _, r := range sampleResponses() {
		b := abi.AppendResponse(nil, &r)
		var got abi.Response
		require.NoError(t, abi.DecodeResponse(&got, b), r.Op.String())
		if r.Op == abi.OpResumeInsert {
			r.Insert.Adopted = [][]core.Range{} // present, no components
		}
		require.Equal(t, r, got, r.Op.String())
		for n := range len(b) {
			require.Error(t, abi.DecodeResponse(&got, b[:n]), "%s cut at %d", r.Op, n)
		}
	}
}

func TestResponse_TagIsAppliedToEveryNodeID(t *testing.T) {
	const tag = 0xa5a5a5a5
	for _, r := range sampleResponses() {
		plain := abi.AppendResponse(nil, &r)
		r.Tag = tag
		tagged := abi.AppendResponse(nil, &r)
		var a, b abi.Response
		require.NoError(t, abi.DecodeResponse(&a, plain))
		require.NoError(t, abi.DecodeResponse(&b, tagged))
		require.Equal(t, len(plain), len(tagged))
		// Untagging b's ids by re-encoding with the same tag gives plain.
		b.Tag = tag
		require.Equal(t, plain, abi.AppendResponse(nil, &b), r.Op.String())
	}
	require.Equal(t, core.NodeID(0), abi.TagID(0, tag), "nil stays nil")
}

func TestOp_Names(t *testing.T) {
	for _, q := range sampleRequests() {
		require.True(t, q.Op.Known())
		require.NotContains(t, q.Op.String(), "op(")
	}
	require.Equal(t, "op(0x7777)", abi.Op(0x7777).String())
	require.Equal(t, "stale_node", abi.CodeStaleNode.String())
}

// FuzzDecode feeds arbitrary bytes to both decoders and to a dispatcher
// that already holds an instance with data: nothing panics, and the
// dispatcher always answers a well-formed response that echoes what it
// could read of the header.
func FuzzDecode(f *testing.F) {
	for _, q := range sampleRequests() {
		f.Add(abi.AppendRequest(nil, &q))
	}
	for _, v := range LoadVectors(f) {
		b, err := hex.DecodeString(v.Request)
		require.NoError(f, err)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var q abi.Request
		_ = abi.DecodeRequest(&q, b)
		var r abi.Response
		_ = abi.DecodeResponse(&r, b)

		d := dispatch.New()
		setup := []abi.Request{
			{Op: abi.OpCreate, Config: core.Config{PageSize: 1}},
			{Op: abi.OpInsert, Instance: 1, Insert: core.InsertParams{Tokens: []uint32{1, 2, 3}, Slots: []int32{1, 2, 3}}},
			{Op: abi.OpLock, Instance: 1, Node: dispatchNode(1, 1)},
		}
		for _, s := range setup {
			d.Call(abi.AppendRequest(nil, &s))
		}
		out := d.Call(b)
		require.NoError(t, abi.DecodeResponse(&r, out))
		if r.Status == abi.StatusError {
			require.NotEqual(t, abi.CodeNone, r.Code)
			require.NotEqual(t, abi.CodeInternal, r.Code, r.Message)
		}
		// The instance still passes its sanity check.
		sc := abi.Request{Op: abi.OpSanityCheck, Instance: 1}
		if q.Op == abi.OpDestroy && r.Status == abi.StatusOK {
			return
		}
		require.NoError(t, abi.DecodeResponse(&r, d.Call(abi.AppendRequest(nil, &sc))))
		require.Equal(t, abi.StatusOK, r.Status, r.Message)
	})
}

// dispatchNode is the wire id of arena slot i (generation 1) of instance h.
func dispatchNode(h uint32, slot uint32) core.NodeID {
	return abi.TagID(core.NodeID(1<<32|uint64(slot+1)), dispatch.Tag(h))
}

// TestDecodeResponse_EventsWithScratch decodes a take_events response
// into reused buffers: the same events as a plain decode, and a later
// decode reuses (overwrites) those buffers.
func TestDecodeResponse_EventsWithScratch(t *testing.T) {
	r := abi.Response{Op: abi.OpTakeEvents, Events: sampleEvents()}
	b := abi.AppendResponse(nil, &r)
	var plain, got abi.Response
	require.NoError(t, abi.DecodeResponse(&plain, b))
	var s abi.Scratch
	require.NoError(t, abi.DecodeResponseWith(&got, b, &s))
	require.Equal(t, plain, got)
	require.Equal(t, sampleEvents(), got.Events)
	// Once the buffers have grown, later decodes reuse them.
	require.NoError(t, abi.DecodeResponseWith(&got, b, &s))
	first := &got.Events[0].BlockHashes[0]
	require.NoError(t, abi.DecodeResponseWith(&got, b, &s))
	require.Same(t, first, &got.Events[0].BlockHashes[0], "the hash buffer is reused")
	require.Equal(t, sampleEvents(), got.Events)
}

// TestDecodeResponse_EventReserved rejects an event whose reserved byte
// is set, and a has_parent that is not a bool.
func TestDecodeResponse_EventReserved(t *testing.T) {
	r := abi.Response{Op: abi.OpTakeEvents, Events: sampleEvents()[:1]}
	b := abi.AppendResponse(nil, &r)
	const first = abi.ResponseHeaderSize + 4 // header, event count
	for off, v := range map[int]byte{first + 3: 1, first + 2: 2} {
		bad := append([]byte(nil), b...)
		bad[off] = v
		var got abi.Response
		err := abi.DecodeResponse(&got, bad)
		var ae *abi.Error
		require.True(t, errors.As(err, &ae), "offset %d: %v", off, err)
		require.Equal(t, abi.CodeMalformed, ae.Code, "offset %d", off)
	}
}

// The receipt is decoded in place when all of it is there; a bad host
// byte or a cut receipt still names its field as the field-by-field
// path does.
func TestDecodeRequest_ReceiptFailuresNameTheField(t *testing.T) {
	q := abi.Request{Op: abi.OpUnlock, Instance: 1, Node: 77, Receipt: core.Receipt{Node: 5, Serial: 1, Host: true}}
	b := abi.AppendRequest(nil, &q)
	host := abi.RequestHeaderSize + 8 + abi.ReceiptSize - 1
	require.Equal(t, byte(1), b[host])
	bad := append([]byte(nil), b...)
	bad[host] = 2
	var got abi.Request
	err := abi.DecodeRequest(&got, bad)
	require.EqualError(t, err, "abi: "+abi.CodeMalformed.String()+": receipt.host: boolean byte 2 is neither 0 nor 1")
	for cut, field := range map[int]string{8: "receipt.node", 16: "receipt.serial", 41: "receipt.skipped", 42: "receipt.host"} {
		err := abi.DecodeRequest(&got, b[:abi.RequestHeaderSize+8+cut-1])
		require.ErrorContains(t, err, field+": need", "cut inside byte %d of the receipt", cut)
	}
}
