package native

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/radixkv/radixkv/abi"
	"github.com/radixkv/radixkv/abi/dispatch"
	"github.com/radixkv/radixkv/core"
	"github.com/stretchr/testify/require"
)

// wireKinds are the engines that speak the ABI.
var wireKinds = engineKinds[1:]

func TestWireEngine_Config(t *testing.T) {
	for _, k := range wireKinds {
		t.Run(k.name, func(t *testing.T) {
			_, err := k.new(core.Config{PageSize: 0})
			require.ErrorIs(t, err, core.ErrInvalidConfig)
			var re *RemoteError
			require.ErrorAs(t, err, &re)
			require.Equal(t, abi.OpCreate, re.Op)
			require.Equal(t, abi.CodeInvalidConfig, re.Code)
			_, err = k.new(core.Config{PageSize: 1, Policy: "nope"})
			require.ErrorIs(t, err, core.ErrUnknownPolicy)
			_, err = k.new(core.Config{PageSize: -1})
			require.ErrorIs(t, err, core.ErrInvalidConfig, "not wrapped to a huge u32")
			_, err = k.new(core.Config{PageSize: 1, Components: []core.Component{core.Full, core.SWA}})
			require.ErrorIs(t, err, core.ErrInvalidConfig, "swa without a window")
			for _, bad := range []core.Config{
				{PageSize: 1, Components: []core.Component{core.Full, core.SWA}, SWAWindow: 1 << 40},
				{PageSize: 1, Components: []core.Component{core.Full, core.Mamba}, MambaChunkSize: 1<<32 + 1},
				{PageSize: 1, Components: []core.Component{core.Full, core.Mamba}, MambaMaxPathStates: 1<<32 + 2},
			} {
				_, err = k.new(bad)
				require.ErrorIs(t, err, core.ErrInvalidConfig, "not wrapped to a small i32: %+v", bad)
			}

			cfg := core.Config{PageSize: 4, Components: []core.Component{core.Full}, Policy: "lfu"}
			e := newEngine(t, k.new, cfg)
			got := e.Config()
			require.Equal(t, cfg, got)
			got.Components[0] = core.Mamba
			require.Equal(t, core.Full, e.Config().Components[0], "Config returns a copy")

			hy := core.Config{PageSize: 2, Components: []core.Component{core.Full, core.SWA, core.Mamba},
				SWAWindow: 6, MambaChunkSize: 4, MambaMaxPathStates: 2}
			require.Equal(t, hy, newEngine(t, k.new, hy).Config())
		})
	}
}

// TestWireEngine_ForeignHandles hands node ids and receipts of one engine
// to others (of the same kind, whose guests number their instances alike,
// and of the other kind): each is refused, and every engine stays usable.
func TestWireEngine_ForeignHandles(t *testing.T) {
	cfg := core.Config{PageSize: 2}
	var engs []Engine
	for _, k := range append(wireKinds, wireKinds...) {
		engs = append(engs, newEngine(t, k.new, cfg))
	}
	p := seq(1, 8)
	type held struct {
		node core.NodeID
		rc   core.Receipt
	}
	var hs []held
	for i, e := range engs {
		_, _, err := e.Insert(core.InsertParams{Tokens: p, Slots: []int32{0, 1, 2, 3, 4, 5, 6, 7}})
		require.NoError(t, err)
		m, err := e.Match(nil, core.Namespace{}, p)
		require.NoError(t, err)
		require.Len(t, m.Indices, 8)
		rc, err := e.Lock(m.LastDevice, 0)
		require.NoError(t, err)
		hs = append(hs, held{m.LastDevice, rc})
		// Every engine's tree is built the same way, so the nodes are the
		// same in core form; only the handles differ.
		require.Equal(t, coreID(engs[0], hs[0].node), coreID(e, m.LastDevice), "engine %d", i)
	}
	for i, e := range engs {
		for j, h := range hs {
			if i == j {
				continue
			}
			_, err := e.Lock(h.node, 0)
			require.ErrorIs(t, err, core.ErrStaleNode, "engine %d given engine %d's node", i, j)
			require.ErrorIs(t, e.Unlock(h.node, h.rc, false), core.ErrStaleNode)
			require.ErrorIs(t, e.Unlock(hs[i].node, h.rc, false), core.ErrReceipt, "engine %d given engine %d's receipt", i, j)
		}
		// Still usable, and its own lock is intact.
		pr, err := e.Protected(core.Full)
		require.NoError(t, err)
		require.Equal(t, 8, pr)
		require.NoError(t, e.Unlock(hs[i].node, hs[i].rc, false))
		require.ErrorIs(t, e.Unlock(hs[i].node, hs[i].rc, false), core.ErrReceipt)
		require.NoError(t, e.SanityCheck())
		m, err := e.Match(nil, core.Namespace{}, p)
		require.NoError(t, err)
		require.Len(t, m.Indices, 8)
	}
}

// TestWireEngine_ErrorsThenUsable walks error after error through the
// ABI and checks that each maps to core's sentinel and that the engine
// still answers correctly afterwards.
func TestWireEngine_ErrorsThenUsable(t *testing.T) {
	for _, k := range wireKinds {
		t.Run(k.name, func(t *testing.T) {
			e := newEngine(t, k.new, core.Config{PageSize: 2})
			p := seq(10, 6)
			_, _, err := e.Insert(core.InsertParams{Tokens: p, Slots: []int32{1, 2}})
			require.ErrorIs(t, err, core.ErrInvalidArgument, "too few slots")
			_, _, err = e.Insert(core.InsertParams{Tokens: p, Slots: seqSlots(0, 6), PrevPrefixLen: 1 << 40})
			require.ErrorIs(t, err, core.ErrInvalidArgument, "prev prefix beyond the wire's i32")
			_, err = e.BeginInsert(core.InsertParams{Tokens: p, Slots: seqSlots(0, 6), SWAEvictedSeqlen: 1 << 40})
			require.ErrorIs(t, err, core.ErrInvalidArgument, "SWA evicted length beyond the wire's i32")
			_, _, err = e.Insert(core.InsertParams{Tokens: p, Slots: seqSlots(0, 6), SWABranchingSeqlen: -1 << 40})
			require.ErrorIs(t, err, core.ErrInvalidArgument, "SWA branching length beyond the wire's i32")
			_, _, err = e.Insert(core.InsertParams{Tokens: p, Slots: seqSlots(0, 6), SWAEvictedSeqlen: 2})
			require.ErrorIs(t, err, core.ErrInvalidArgument, "SWA lengths without swa")
			res, acts, err := e.Insert(core.InsertParams{Tokens: p, Slots: seqSlots(0, 6)})
			require.NoError(t, err)
			require.Empty(t, acts)
			require.Equal(t, 6, res.TotalLen)

			_, err = e.ResumeInsert()
			require.ErrorIs(t, err, core.ErrNoInsert)
			_, err = e.EvictNext()
			require.ErrorIs(t, err, core.ErrNoEviction)
			require.NoError(t, e.EvictStart(core.Full, 2))
			require.ErrorIs(t, e.EvictStart(core.Full, 2), core.ErrEvictionInFlight)
			require.NoError(t, e.EvictEnd())
			_, _, err = e.Evict(core.Full, -1, nil)
			require.ErrorIs(t, err, core.ErrInvalidArgument)
			_, err = e.Lock(res.LastDevice, core.ComponentSet(0).With(core.SWA))
			require.ErrorIs(t, err, core.ErrInvalidArgument)
			_, err = e.Lock(res.LastDevice^1<<40, 0)
			require.ErrorIs(t, err, core.ErrStaleNode)
			var re *RemoteError
			require.ErrorAs(t, err, &re)
			require.Equal(t, abi.CodeStaleNode, re.Code)
			require.Contains(t, err.Error(), "node 0x", "names the id as sent")

			rc, err := e.Lock(res.LastDevice, 0)
			require.NoError(t, err)
			acts, err = e.UnlockSWA(res.LastDevice, rc)
			require.ErrorIs(t, err, core.ErrInvalidArgument, "no swa")
			require.Empty(t, acts)
			_, err = e.EvictExcessPathStates(res.LastDevice)
			require.ErrorIs(t, err, core.ErrInvalidArgument, "no mamba")
			_, err = e.EvictExcessPathStates(res.LastDevice ^ 1<<40)
			require.ErrorIs(t, err, core.ErrStaleNode)
			forged := rc
			forged.Serial++
			require.ErrorIs(t, e.Unlock(res.LastDevice, forged, false), core.ErrReceipt)
			require.NoError(t, e.Unlock(res.LastDevice, rc, false))

			// A reset makes every handle stale.
			require.NoError(t, e.Reset())
			_, err = e.Lock(res.LastDevice, 0)
			require.ErrorIs(t, err, core.ErrStaleNode)
			m, err := e.Match([]int32{7}, core.Namespace{}, p)
			require.NoError(t, err)
			require.Equal(t, []int32{7}, m.Indices)
			require.Zero(t, m.DeviceLen)

			require.NoError(t, e.Close())
			require.NoError(t, e.Close())
			_, err = e.Match(nil, core.Namespace{}, p)
			require.ErrorIs(t, err, ErrClosed)
			require.ErrorIs(t, e.Reset(), ErrClosed)
			_, err = e.UnlockSWA(res.LastDevice, rc)
			require.ErrorIs(t, err, ErrClosed)
			_, err = e.EvictExcessPathStates(res.LastDevice)
			require.ErrorIs(t, err, ErrClosed)
		})
	}
}

// TestEngines_Hybrid runs one SWA and Mamba request through every engine:
// the insert's rebuild and cap actions, the cap's frees, the match's
// Mamba slot, the early SWA release and the unlock that must follow it.
func TestEngines_Hybrid(t *testing.T) {
	forEachEngine(t, func(t *testing.T, ctor engineCtor) {
		e := newEngine(t, ctor, core.Config{PageSize: 2, Components: []core.Component{core.Full, core.SWA, core.Mamba},
			SWAWindow: 4, MambaMaxPathStates: 1})
		p := seq(1, 8)
		res, acts, err := e.Insert(core.InsertParams{Tokens: p, Slots: seqSlots(100, 8), MambaSlot: 5})
		require.NoError(t, err)
		require.False(t, res.MambaExist)
		require.Len(t, acts, 3)
		require.Equal(t, core.ActionSWARebuild, acts[0].Kind)
		require.Equal(t, seqSlots(100, 4), acts[0].Slots)
		require.Equal(t, core.ActionMambaEvictExcessPathStates, acts[2].Kind)
		require.Equal(t, res.LastDevice, acts[2].Node)
		frees, err := e.EvictExcessPathStates(acts[2].Node)
		require.NoError(t, err)
		require.Empty(t, frees, "one state on the path")

		// A second state further down: the cap drops the first one.
		res2, acts, err := e.Insert(core.InsertParams{Tokens: seq(1, 12), Slots: seqSlots(200, 12), PrevPrefixLen: 8, MambaSlot: 6})
		require.NoError(t, err)
		require.Equal(t, core.ActionMambaEvictExcessPathStates, acts[len(acts)-1].Kind)
		frees, err = e.EvictExcessPathStates(res2.LastDevice)
		require.NoError(t, err)
		require.Equal(t, []core.Action{{Kind: core.ActionFreeDeviceSlots, Component: core.Mamba, Node: res.LastDevice, Slots: []int32{5}}}, frees)

		m, err := e.Match(nil, core.Namespace{}, seq(1, 12))
		require.NoError(t, err)
		require.Equal(t, int32(6), m.MambaSlot)
		require.Equal(t, res2.LastDevice, m.LastDevice)
		m0, err := e.Match(nil, core.Namespace{}, seq(1, 8))
		require.NoError(t, err)
		require.Equal(t, int32(-1), m0.MambaSlot, "the first state was dropped")

		rc, err := e.Lock(m.LastDevice, 0)
		require.NoError(t, err)
		require.NotZero(t, rc.SWAUUID)
		acts, err = e.UnlockSWA(m.LastDevice, rc)
		require.NoError(t, err)
		require.Empty(t, acts)
		_, err = e.UnlockSWA(m.LastDevice, rc)
		require.ErrorIs(t, err, core.ErrReceipt)
		require.ErrorIs(t, e.Unlock(m.LastDevice, rc, false), core.ErrReceipt)
		require.NoError(t, e.Unlock(m.LastDevice, rc, true))

		for _, c := range []core.Component{core.SWA, core.Mamba} {
			acts, freed, err := e.Evict(c, 1, nil)
			require.NoError(t, err)
			require.Positive(t, freed, "%v", c)
			require.Equal(t, c, acts[0].Component)
		}
		require.NoError(t, e.SanityCheck())
	})
}

func seqSlots(from, n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(from + i)
	}
	return out
}

// fakeTransport answers from a function (to inject guest failures).
type fakeTransport struct {
	d      *dispatch.Dispatcher
	answer func(req, resp []byte) ([]byte, error)
	closed bool
}

func (f *fakeTransport) call(req []byte) ([]byte, error) {
	return f.answer(req, f.d.Call(req))
}

func (f *fakeTransport) close() error { f.closed = true; return nil }

func TestWireEngine_GuestFailures(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer func(req, resp []byte) ([]byte, error)
		want   string
	}{
		{"transport", func([]byte, []byte) ([]byte, error) { return nil, errors.New("trap") }, "trap"},
		{"garbage", func([]byte, []byte) ([]byte, error) { return []byte("nonsense"), nil }, "undecodable"},
		{"truncated", func(_, resp []byte) ([]byte, error) { return resp[:len(resp)-1], nil }, "undecodable"},
		{"wrong id", func(_, resp []byte) ([]byte, error) { resp[16]++; return resp, nil }, "does not answer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ft := &fakeTransport{d: dispatch.New(), answer: func(_, resp []byte) ([]byte, error) { return resp, nil }}
			e, err := newWireEngine(core.Config{PageSize: 1}, ft)
			require.NoError(t, err)
			ft.answer = tc.answer
			_, err = e.Match(nil, core.Namespace{}, seq(1, 4))
			require.ErrorIs(t, err, ErrGuest)
			require.Contains(t, err.Error(), tc.want)
			require.ErrorIs(t, e.SanityCheck(), ErrGuest, "a failed engine refuses work")
			require.NoError(t, e.Close())
			require.True(t, ft.closed)
			require.ErrorIs(t, e.SanityCheck(), ErrClosed)
		})
	}

	// An ABI-level error code (not one of core's) unwraps to ErrGuest.
	ft := &fakeTransport{d: dispatch.New(), answer: func(_, resp []byte) ([]byte, error) { return resp, nil }}
	e, err := newWireEngine(core.Config{PageSize: 1}, ft)
	require.NoError(t, err)
	e.handle = 99 // an instance the guest never issued
	err = e.SanityCheck()
	require.ErrorIs(t, err, ErrGuest)
	var re *RemoteError
	require.ErrorAs(t, err, &re)
	require.Equal(t, abi.CodeUnknownInstance, re.Code)
	require.Contains(t, err.Error(), "unknown_instance")
	e.handle = 1
	require.NoError(t, e.SanityCheck(), "an error response does not disable the engine")
	require.NoError(t, e.Close())

	// A failed create closes the transport.
	ft = &fakeTransport{d: dispatch.New(), answer: func([]byte, []byte) ([]byte, error) { return nil, errors.New("boom") }}
	_, err = newWireEngine(core.Config{PageSize: 1}, ft)
	require.ErrorIs(t, err, ErrGuest)
	require.True(t, ft.closed)
}

// TestWasmEngine_Instances checks that module instances are independent
// and that requests larger than the first guest buffer grow it.
func TestWasmEngine_Instances(t *testing.T) {
	a := newEngine(t, NewWasmEngine, core.Config{PageSize: 1})
	b := newEngine(t, NewWasmEngine, core.Config{PageSize: 1})
	long := seq(0, 50_000) // 200 KB of tokens: beyond the initial 64 KiB buffer
	_, _, err := a.Insert(core.InsertParams{Tokens: long, Slots: seqSlots(0, len(long))})
	require.NoError(t, err)
	m, err := a.Match(nil, core.Namespace{}, long)
	require.NoError(t, err)
	require.Equal(t, seqSlots(0, len(long)), m.Indices)
	m, err = b.Match(nil, core.Namespace{}, long)
	require.NoError(t, err)
	require.Empty(t, m.Indices, "a separate instance shares nothing")
	ga := a.(*wireEngine).tr.(*wasmGuest)
	require.GreaterOrEqual(t, ga.req.size, uint32(200_000))
	require.NotZero(t, ga.req.ptr)
	require.NoError(t, a.Close())
	require.Nil(t, ga.mod, "the module instance is released")
	require.Zero(t, ga.req.ptr)
}

// TestWasmEngine_Concurrent runs one engine per goroutine on the shared
// runtime (engines are single-threaded; the runtime is shared).
func TestWasmEngine_Concurrent(t *testing.T) {
	var wg sync.WaitGroup
	errc := make(chan error, 4)
	for w := range 4 {
		wg.Go(func() {
			e, err := NewWasmEngine(core.Config{PageSize: 2})
			if err != nil {
				errc <- err
				return
			}
			defer e.Close()
			for i := range 200 {
				p := seq(w*1000+i%20, 16)
				if _, _, err := e.Insert(core.InsertParams{Tokens: p, Slots: seqSlots(0, 16)}); err != nil {
					errc <- err
					return
				}
				if m, err := e.Match(nil, core.Namespace{}, p); err != nil || len(m.Indices) != 16 {
					errc <- fmt.Errorf("match: %d indices, %v", len(m.Indices), err)
					return
				}
			}
			errc <- e.SanityCheck()
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		require.NoError(t, err)
	}
}

func TestWasmRuntime_Own(t *testing.T) {
	if raceEnabled {
		t.Skip("compiles the module a second time, which is slow under the race detector")
	}
	ctx := context.Background()
	rt, err := NewWasmRuntime(ctx, WasmRuntimeConfig{CacheDir: t.TempDir()})
	require.NoError(t, err)
	e, err := NewWasmEngineWith(ctx, core.Config{PageSize: 1}, WasmOptions{Runtime: rt})
	require.NoError(t, err)
	_, _, err = e.Insert(core.InsertParams{Tokens: seq(1, 3), Slots: seqSlots(0, 3)})
	require.NoError(t, err)
	require.NoError(t, rt.Close(ctx))
	_, err = e.Match(nil, core.Namespace{}, seq(1, 3))
	require.ErrorIs(t, err, ErrGuest, "the runtime closed its modules")
	_ = e.Close()
}

// TestEngines_HostTier runs one write-through backup and one load-back
// through every engine, and checks the distinctions the wire keeps with
// present flags: a backup commit's absent Full slots versus an empty
// list, and SanityCheckOngoing's unknown view versus an empty one.
func TestEngines_HostTier(t *testing.T) {
	forEachEngine(t, func(t *testing.T, ctor engineCtor) {
		e := newEngine(t, ctor, core.Config{PageSize: 2, HostTier: true, ExternalLinker: true})
		res, acts, err := e.Insert(core.InsertParams{Tokens: []uint32{1, 2, 3, 4}, Slots: []int32{0, 1, 2, 3}})
		require.NoError(t, err)
		require.Equal(t, []core.NodeID{res.LastDevice}, acts[0].Nodes, "write-through after one hit: BackupKV")
		leaf := res.LastDevice

		spec, err := e.BackupSpec(leaf)
		require.NoError(t, err)
		require.Equal(t, core.BackupSpec{Node: leaf, Full: []int32{0, 1, 2, 3}, Mamba: -1}, spec)
		require.NoError(t, e.CommitBackup(leaf, core.BackupCommit{Full: []int32{10, 11, 12, 13}, Mamba: -1}))
		spec, err = e.BackupSpec(leaf)
		require.NoError(t, err)
		require.Nil(t, spec.Full, "on the host already")
		err = e.CommitBackup(leaf, core.BackupCommit{Full: []int32{}, Mamba: -1})
		require.ErrorIs(t, err, core.ErrInvalidArgument, "an empty Full list is not an absent one")
		require.NoError(t, e.CommitBackup(leaf, core.BackupCommit{Mamba: -1}))

		rc, err := e.Lock(leaf, 0)
		require.NoError(t, err)
		ids, err := e.MarkWriteThroughPending([]core.NodeID{leaf}, 3)
		require.NoError(t, err)
		require.Equal(t, []core.NodeID{leaf}, ids)
		require.NoError(t, e.SanityCheckOngoing(core.Ongoing{}), "an unknown view checks nothing in flight")
		require.ErrorIs(t, e.SanityCheckOngoing(core.Ongoing{WriteThrough: []core.NodeID{}}), core.ErrSanity,
			"an empty view misses the pending node")
		require.NoError(t, e.SanityCheckOngoing(core.Ongoing{WriteThrough: ids, LoadBack: []core.NodeID{}}))
		require.NoError(t, e.FinishWriteThrough(ids, 3))
		require.NoError(t, e.Unlock(leaf, rc, false))

		// Evicting demotes the backed-up leaf; a load-back restores it.
		acts, freed, err := e.Evict(core.Full, 4, nil)
		require.NoError(t, err)
		require.Equal(t, 4, freed)
		require.Len(t, acts, 1)
		m, err := e.Match(nil, core.Namespace{}, []uint32{1, 2, 3, 4})
		require.NoError(t, err)
		require.Equal(t, 4, m.HostHitLen)
		require.Equal(t, leaf, m.Best)
		hrc, err := e.HostLock(leaf)
		require.NoError(t, err)
		require.True(t, hrc.Host)
		require.ErrorIs(t, e.Unlock(leaf, hrc, false), core.ErrReceipt)
		rc, err = e.Lock(leaf, 0)
		require.NoError(t, err)
		plan, err := e.LoadBackPlan(leaf)
		require.NoError(t, err)
		require.Equal(t, core.LoadBackPlan{Anchor: leaf, Full: []core.NodeSlots{{Node: leaf, Slots: []int32{10, 11, 12, 13}}}, Mamba: -1}, plan)
		acts, err = e.CommitLoadBack(leaf, core.LoadBackCommit{Full: [][]int32{{20, 21, 22, 23}}, Mamba: -1})
		require.NoError(t, err)
		require.Empty(t, acts)
		require.NoError(t, e.FinishLoadBack(leaf))
		require.NoError(t, e.Unlock(leaf, rc, false))
		require.NoError(t, e.HostUnlock(leaf, hrc))
		m, err = e.Match(nil, core.Namespace{}, []uint32{1, 2, 3, 4})
		require.NoError(t, err)
		require.Equal(t, []int32{20, 21, 22, 23}, m.Indices)

		keys, err := e.StorageSpec(leaf)
		require.NoError(t, err)
		require.Equal(t, leaf, keys.Node)
		require.Len(t, keys.Full, 2)
		chain, err := e.LinkerChain(leaf)
		require.NoError(t, err)
		require.Equal(t, []core.NodeID{leaf}, chain)
		require.NoError(t, e.MarkLinkerPending(chain, 9))
		require.NoError(t, e.FinishLinkerOffload(chain, 9, true))
		chain, err = e.LinkerChain(leaf)
		require.NoError(t, err)
		require.Empty(t, chain, "stored")
		require.NoError(t, e.SanityCheck())
	})
}
