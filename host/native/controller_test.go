package native

import (
	"errors"
	"testing"

	"github.com/radixkv/radixkv/core"
	"github.com/stretchr/testify/require"
)

func newCtl(t testing.TB, capacity int, tcfg core.Config, cfg ControllerConfig) (*Controller, *MemPool) {
	t.Helper()
	return newCtlOn(t, NewDirectEngine, capacity, tcfg, cfg)
}

// newCtlOn is newCtl on an engine built by newEngine.
func newCtlOn(t testing.TB, newEngine engineCtor, capacity int, tcfg core.Config, cfg ControllerConfig) (*Controller, *MemPool) {
	t.Helper()
	eng, err := newEngine(tcfg)
	require.NoError(t, err)
	// A pool of pages of the tree's page size: the controller allocates
	// and frees it a page at a time.
	kv, err := NewPagedMemPool(capacity, CanaryBytes, max(tcfg.PageSize, 1))
	require.NoError(t, err)
	c, err := NewController(eng, NewPoolSet(kv), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c, kv
}

var canaryOn = ControllerConfig{Canary: true, VerifyMatches: true}

func seq(from, n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(from + i)
	}
	return out
}

func cat(parts ...[]uint32) []uint32 {
	var out []uint32
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func sizes(t *testing.T, c *Controller) (evictable, protected int) {
	t.Helper()
	ev, err := c.Engine().Evictable(core.Full)
	require.NoError(t, err)
	pr, err := c.Engine().Protected(core.Full)
	require.NoError(t, err)
	return ev, pr
}

func run(t *testing.T, c *Controller, ns core.Namespace, tokens []uint32) *Request {
	t.Helper()
	r, err := c.Arrive(ns, tokens)
	require.NoError(t, err)
	require.NoError(t, c.Prefill(r, r.Pending()))
	require.NoError(t, c.Verify(r))
	require.NoError(t, c.Finish(r))
	require.True(t, r.Done())
	require.NoError(t, c.Audit())
	return r
}

func TestController_Lifecycle(t *testing.T) {
	forEachEngine(t, func(t *testing.T, newEngine engineCtor) {
		c, kv := newCtlOn(t, newEngine, 64, core.Config{PageSize: 4}, canaryOn)
		ns := core.Namespace{}
		sys := seq(1, 8)

		// A miss: everything is computed; the 2-token ragged tail is freed.
		a, err := c.Arrive(ns, cat(sys, seq(100, 2)))
		require.NoError(t, err)
		require.Equal(t, 0, a.CachedLen())
		require.Empty(t, a.Slots())
		require.Equal(t, 10, a.Pending())
		require.NoError(t, c.Prefill(a, 6))
		require.NoError(t, c.Prefill(a, 4))
		require.ErrorIs(t, c.Prefill(a, 1), ErrInvalidArgument)
		require.Equal(t, 10, a.Computed())
		require.NoError(t, c.Audit())
		aSlots := append([]int32(nil), a.Slots()...)
		require.NoError(t, c.Finish(a))
		require.ErrorIs(t, c.Finish(a), ErrRequestDone)
		require.ErrorIs(t, c.Abort(a), ErrRequestDone)
		ev, pr := sizes(t, c)
		require.Equal(t, 8, ev)
		require.Equal(t, 0, pr)
		require.Equal(t, 56, kv.Available())
		require.NoError(t, c.Audit())

		// A hit on the shared 8 tokens: the cached slots are A's, locked.
		b, err := c.Arrive(ns, cat(sys, seq(200, 6)))
		require.NoError(t, err)
		require.Equal(t, 8, b.CachedLen())
		require.Equal(t, aSlots[:8], b.Slots())
		_, pr = sizes(t, c)
		require.Equal(t, 8, pr)
		require.NoError(t, c.Prefill(b, b.Pending()))
		require.NoError(t, c.Extend(b, 7, 7))
		require.Equal(t, 16, b.Computed())
		require.NoError(t, c.Verify(b))
		require.NoError(t, c.Finish(b))
		ev, pr = sizes(t, c)
		require.Equal(t, 16, ev)
		require.Equal(t, 0, pr)
		require.NoError(t, c.Audit())

		// Another namespace shares nothing.
		d, err := c.Arrive(core.Namespace{CacheSalt: "tenant-2"}, cat(sys, seq(200, 6)))
		require.NoError(t, err)
		require.Equal(t, 0, d.CachedLen())
		require.NoError(t, c.Abort(d))

		st := c.Stats()
		require.EqualValues(t, 3, st.Requests)
		require.EqualValues(t, 2, st.Finished)
		require.EqualValues(t, 1, st.Aborted)
		require.EqualValues(t, 38, st.InputTokens)
		require.EqualValues(t, 8, st.MatchedTokens)
		require.EqualValues(t, 18, st.ComputedTokens)
		require.EqualValues(t, 18*CanaryBytes, st.BytesWritten)
		require.Zero(t, st.CanaryMismatches)
		require.NotZero(t, st.CanaryChecked)
	})
}

func TestController_DuplicateInsertFreesSlots(t *testing.T) {
	forEachEngine(t, func(t *testing.T, newEngine engineCtor) {
		c, kv := newCtlOn(t, newEngine, 64, core.Config{PageSize: 4}, canaryOn)
		p := seq(1, 12)
		// Both miss, both compute the same prompt; the second insert hands its
		// duplicate slots back.
		a, err := c.Arrive(core.Namespace{}, p)
		require.NoError(t, err)
		b, err := c.Arrive(core.Namespace{}, p)
		require.NoError(t, err)
		require.NoError(t, c.Prefill(a, 12))
		require.NoError(t, c.Prefill(b, 12))
		require.Equal(t, 40, kv.Available())
		require.NoError(t, c.Finish(a))
		require.NoError(t, c.Finish(b))
		require.Equal(t, 52, kv.Available())
		require.EqualValues(t, 12, c.Stats().FreedSlots)
		require.NoError(t, c.Audit())

		got, err := c.Match(nil, core.Namespace{}, p)
		require.NoError(t, err)
		require.Len(t, got, 12)
		require.NoError(t, c.VerifyMatch(core.Namespace{}, p, got))
	})
}

func TestController_Abort(t *testing.T) {
	forEachEngine(t, func(t *testing.T, newEngine engineCtor) {
		c, kv := newCtlOn(t, newEngine, 32, core.Config{PageSize: 4}, canaryOn)
		run(t, c, core.Namespace{}, seq(1, 8))
		r, err := c.Arrive(core.Namespace{}, seq(1, 16))
		require.NoError(t, err)
		require.Equal(t, 8, r.CachedLen())
		require.NoError(t, c.Prefill(r, 8))
		require.Equal(t, 16, kv.Available())
		require.NoError(t, c.Abort(r))
		require.Equal(t, 24, kv.Available())
		ev, pr := sizes(t, c)
		require.Equal(t, 8, ev)
		require.Equal(t, 0, pr)
		require.NoError(t, c.Audit())
	})
}

func TestController_FinishChunk(t *testing.T) {
	forEachEngine(t, func(t *testing.T, newEngine engineCtor) {
		c, _ := newCtlOn(t, newEngine, 64, core.Config{PageSize: 4}, canaryOn)
		ns := core.Namespace{ExtraKey: "chunked"}
		p := seq(1, 20)
		r, err := c.Arrive(ns, p)
		require.NoError(t, err)

		require.NoError(t, c.Prefill(r, 6))
		require.NoError(t, c.FinishChunk(r, 6))
		require.Equal(t, 4, r.ProtectedLen())
		_, pr := sizes(t, c)
		require.Equal(t, 4, pr, "the chunk's page is cached and locked")
		require.NoError(t, c.FinishChunk(r, 5), "no new whole page: nothing to do")
		require.Equal(t, 4, r.ProtectedLen())
		require.ErrorIs(t, c.FinishChunk(r, 7), ErrInvalidArgument)
		require.NoError(t, c.Audit())

		// A second request sees the chunk already.
		o, err := c.Arrive(ns, p)
		require.NoError(t, err)
		require.Equal(t, 4, o.CachedLen())
		require.NoError(t, c.Abort(o))

		require.NoError(t, c.Prefill(r, 7))
		require.NoError(t, c.FinishChunk(r, 13))
		require.Equal(t, 12, r.ProtectedLen())
		require.NoError(t, c.Verify(r))
		require.NoError(t, c.Audit())
		require.NoError(t, c.Prefill(r, r.Pending()))
		require.NoError(t, c.Finish(r))
		ev, pr := sizes(t, c)
		require.Equal(t, 20, ev)
		require.Equal(t, 0, pr)
		require.NoError(t, c.Audit())
		require.EqualValues(t, 2, c.Stats().ChunkFinishes)
	})
}

func TestController_ChunkDuplicatesReplaced(t *testing.T) {
	forEachEngine(t, func(t *testing.T, newEngine engineCtor) {
		// r computes pages another request cached meanwhile: its chunk insert
		// frees its duplicates and r takes the tree's slots instead.
		c, _ := newCtlOn(t, newEngine, 64, core.Config{PageSize: 4}, canaryOn)
		p := seq(1, 16)
		r, err := c.Arrive(core.Namespace{}, p)
		require.NoError(t, err)
		require.NoError(t, c.Prefill(r, 10))
		run(t, c, core.Namespace{}, p[:8])
		require.NoError(t, c.FinishChunk(r, 10))
		require.Equal(t, 8, r.ProtectedLen())
		got, err := c.Match(nil, core.Namespace{}, p[:8])
		require.NoError(t, err)
		require.Equal(t, got, r.Slots()[:8])
		require.NoError(t, c.Verify(r))
		require.NoError(t, c.Audit())
		require.NoError(t, c.Abort(r))
		require.NoError(t, c.Audit())
	})
}

func TestController_Evicts(t *testing.T) {
	forEachEngine(t, func(t *testing.T, newEngine engineCtor) {
		c, kv := newCtlOn(t, newEngine, 16, core.Config{PageSize: 4}, canaryOn)
		run(t, c, core.Namespace{}, seq(1, 8))
		run(t, c, core.Namespace{}, seq(100, 8))
		require.Equal(t, 0, kv.Available())
		run(t, c, core.Namespace{}, seq(200, 8)) // evicts the least recent
		st := c.Stats()
		require.EqualValues(t, 1, st.EvictedNodes)
		require.EqualValues(t, 8, st.EvictedTokens)

		got, err := c.Match(nil, core.Namespace{}, seq(1, 8))
		require.NoError(t, err)
		require.Empty(t, got, "the oldest entry was evicted")
		got, err = c.Match(nil, core.Namespace{}, seq(100, 8))
		require.NoError(t, err)
		require.NoError(t, c.VerifyMatch(core.Namespace{}, seq(100, 8), got))
		require.Zero(t, c.Stats().CanaryMismatches)
	})
}

func TestController_CapacityTooSmall(t *testing.T) {
	forEachEngine(t, func(t *testing.T, newEngine engineCtor) {
		c, kv := newCtlOn(t, newEngine, 8, core.Config{PageSize: 4}, canaryOn)
		run(t, c, core.Namespace{}, seq(1, 8))
		r, err := c.Arrive(core.Namespace{}, seq(50, 12))
		require.NoError(t, err)
		err = c.Prefill(r, 12)
		require.ErrorIs(t, err, ErrPoolExhausted)
		require.Contains(t, err.Error(), "12 KV slots needed")
		require.Equal(t, 0, r.Computed(), "a failed prefill leaves the request as it was")
		ev, _ := sizes(t, c)
		require.Equal(t, 8, ev, "nothing is evicted when eviction cannot help")
		require.NoError(t, c.Prefill(r, 8), "a smaller chunk fits after evicting")
		require.NoError(t, c.Abort(r))
		require.NoError(t, c.Audit())
		require.Equal(t, 8, kv.Available())

		// Everything locked by running requests: a clear error.
		a, err := c.Arrive(core.Namespace{}, seq(1, 8))
		require.NoError(t, err)
		require.NoError(t, c.Prefill(a, 8))
		b, err := c.Arrive(core.Namespace{}, seq(9, 4))
		require.NoError(t, err)
		err = c.Prefill(b, 4)
		require.ErrorIs(t, err, ErrPoolExhausted)
		require.Contains(t, err.Error(), "owned by them")
		require.NoError(t, c.Finish(a))
		err = c.Prefill(b, 4) // a's pages are cached but still... unlocked now
		require.NoError(t, err)
		require.NoError(t, c.Finish(b))
		require.NoError(t, c.Audit())
	})
}

func TestController_Actions(t *testing.T) {
	c, kv := newCtl(t, 8, core.Config{PageSize: 4}, canaryOn)
	for _, k := range []core.ActionKind{core.ActionBackupKV, core.ActionReplaceWriteThroughOnSplit} {
		err := c.execute([]core.Action{{Kind: k}})
		require.ErrorIs(t, err, ErrHostTier)
		require.Contains(t, err.Error(), "host tier not configured")
	}
	require.ErrorIs(t, c.execute([]core.Action{{Kind: core.ActionFreeHostSlots, Slots: []int32{1}}}), ErrHostTier)
	require.ErrorIs(t, c.execute([]core.Action{{Kind: core.ActionFreeDeviceSlots, Component: core.Mamba, Slots: []int32{1}}}), ErrNoPool)
	require.ErrorIs(t, c.execute([]core.Action{{Kind: core.ActionFreeDeviceSlots, Component: core.SWA, Slots: []int32{1}}}), ErrNoPool)
	require.ErrorIs(t, c.execute([]core.Action{{Kind: core.ActionKind(99)}}), ErrUnknownAction)

	// Frees run in order, and a failing action does not stop the rest.
	s, err := kv.Alloc(nil, 3)
	require.NoError(t, err)
	err = c.execute([]core.Action{
		{Kind: core.ActionFreeDeviceKV, Slots: s[:1]},
		{Kind: core.ActionBackupKV},
		{Kind: core.ActionFreeDeviceKVFullOnly, Slots: s[1:2]},
		{Kind: core.ActionFreeDeviceSlots, Component: core.Full, Slots: s[2:]},
	})
	require.ErrorIs(t, err, ErrHostTier)
	require.Equal(t, 8, kv.Available())
	require.ErrorIs(t, c.execute([]core.Action{{Kind: core.ActionFreeDeviceKV, Slots: s[:1]}}), ErrSlotNotAllocated)

	// With a host pool, host frees go there.
	host, err := NewMemPool(4, 0)
	require.NoError(t, err)
	require.NoError(t, c.pools.(*PoolSet).Set(core.Full, Host, host))
	hs, err := host.Alloc(nil, 2)
	require.NoError(t, err)
	require.NoError(t, c.execute([]core.Action{{Kind: core.ActionFreeHostSlots, Component: core.Full, Slots: hs}}))
	require.Equal(t, 4, host.Available())
}

func TestController_CanaryCatchesCorruption(t *testing.T) {
	forEachEngine(t, func(t *testing.T, newEngine engineCtor) {
		c, kv := newCtlOn(t, newEngine, 32, core.Config{PageSize: 4}, canaryOn)
		p := seq(1, 8)
		run(t, c, core.Namespace{}, p)
		got, err := c.Match(nil, core.Namespace{}, p)
		require.NoError(t, err)
		require.ErrorIs(t, c.VerifyMatch(core.Namespace{CacheSalt: "x"}, p, got), ErrCanaryMismatch, "wrong tenant")
		require.ErrorIs(t, c.VerifyMatch(core.Namespace{}, seq(2, 8), got), ErrCanaryMismatch, "wrong tokens")
		require.ErrorIs(t, c.VerifyMatch(core.Namespace{}, p, got[1:]), ErrCanaryMismatch, "shifted")
		require.ErrorIs(t, c.VerifyMatch(core.Namespace{}, p[:2], got), ErrInvalidArgument)

		require.NoError(t, kv.Write(got[5], []byte("junk")))
		_, err = c.Arrive(core.Namespace{}, p)
		require.ErrorIs(t, err, ErrCanaryMismatch)
		require.Contains(t, err.Error(), "position 5")
		require.NoError(t, c.Audit(), "a rejected arrival holds nothing")
	})
}

func TestController_CanaryOff(t *testing.T) {
	forEachEngine(t, func(t *testing.T, newEngine engineCtor) {
		eng, err := newEngine(core.Config{PageSize: 2})
		require.NoError(t, err)
		kv, err := NewMemPool(16, 0) // no storage at all
		require.NoError(t, err)
		c, err := NewController(eng, NewPoolSet(kv), ControllerConfig{})
		require.NoError(t, err)
		defer c.Close()
		r, err := c.Arrive(core.Namespace{}, seq(1, 5))
		require.NoError(t, err)
		require.NoError(t, c.Prefill(r, 5))
		require.ErrorIs(t, c.Verify(r), ErrInvalidArgument)
		require.NoError(t, c.Finish(r))
		require.Zero(t, c.Stats().BytesWritten)
		require.NoError(t, c.Audit())
	})
}

func TestController_Bigram(t *testing.T) {
	forEachEngine(t, func(t *testing.T, newEngine engineCtor) {
		c, kv := newCtlOn(t, newEngine, 32, core.Config{PageSize: 2, Bigram: true}, canaryOn)
		p := seq(1, 7) // 6 atoms
		run(t, c, core.Namespace{}, p)
		ev, _ := sizes(t, c)
		require.Equal(t, 6, ev)
		require.Equal(t, 26, kv.Available())
		r, err := c.Arrive(core.Namespace{}, cat(p, seq(50, 3)))
		require.NoError(t, err)
		require.Equal(t, 6, r.CachedLen())
		require.NoError(t, c.Prefill(r, r.Pending()))
		require.NoError(t, c.FinishChunk(r, 9)) // 8 atoms
		require.Equal(t, 8, r.ProtectedLen())
		require.NoError(t, c.Finish(r))
		require.NoError(t, c.Audit())
	})
}

func TestController_Errors(t *testing.T) {
	eng, err := NewDirectEngine(core.Config{PageSize: 4})
	require.NoError(t, err)
	small, err := NewMemPool(4, CanaryBytes-1)
	require.NoError(t, err)
	_, err = NewController(nil, NewPoolSet(small), ControllerConfig{})
	require.ErrorIs(t, err, ErrInvalidArgument)
	_, err = NewController(eng, NewPoolSet(nil), ControllerConfig{})
	require.ErrorIs(t, err, ErrNoPool)
	_, err = NewController(eng, NewPoolSet(small), ControllerConfig{Canary: true})
	require.ErrorIs(t, err, ErrInvalidArgument, "slots too small for the canary")
	_, err = NewController(eng, NewPoolSet(small), ControllerConfig{VerifyMatches: true})
	require.ErrorIs(t, err, ErrInvalidArgument)

	c1, _ := newCtl(t, 8, core.Config{PageSize: 4}, canaryOn)
	c2, _ := newCtl(t, 8, core.Config{PageSize: 4}, canaryOn)
	r, err := c1.Arrive(core.Namespace{}, seq(1, 4))
	require.NoError(t, err)
	require.ErrorIs(t, c2.Prefill(r, 1), ErrInvalidArgument)
	require.ErrorIs(t, c1.Prefill(nil, 1), ErrInvalidArgument)
	require.ErrorIs(t, c1.Prefill(r, -1), ErrInvalidArgument)
	require.NoError(t, c1.Close())
	require.ErrorIs(t, c1.Prefill(r, 1), ErrClosed)
	_, err = c1.Arrive(core.Namespace{}, seq(1, 4))
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, c1.Audit(), ErrClosed)
	require.NoError(t, c1.Close())
}

// TestEngine_API runs every Engine method on each engine.
func TestEngine_API(t *testing.T) {
	forEachEngine(t, func(t *testing.T, newEngine engineCtor) {
		_, err := newEngine(core.Config{PageSize: 0})
		require.ErrorIs(t, err, core.ErrInvalidConfig)
		e, err := newEngine(core.Config{PageSize: 2, Components: []core.Component{core.Full}})
		require.NoError(t, err)
		require.Equal(t, 2, e.Config().PageSize)

		_, acts, err := e.Insert(core.InsertParams{Tokens: seq(1, 4), Slots: []int32{0, 1, 2, 3}})
		require.NoError(t, err)
		require.Empty(t, acts)
		step, err := e.BeginInsert(core.InsertParams{Tokens: seq(1, 6), Slots: []int32{9, 9, 9, 9, 4, 5}})
		require.NoError(t, err)
		require.True(t, step.Done)
		_, err = e.ResumeInsert()
		require.ErrorIs(t, err, core.ErrNoInsert)
		rest, err := e.EndInsert()
		require.NoError(t, err)
		require.Empty(t, rest)

		m, err := e.Match(nil, core.Namespace{}, seq(1, 6))
		require.NoError(t, err)
		require.Equal(t, []int32{0, 1, 2, 3, 4, 5}, m.Indices)
		rc, err := e.Lock(m.LastDevice, 0)
		require.NoError(t, err)
		pr, err := e.Protected(core.Full)
		require.NoError(t, err)
		require.Equal(t, 6, pr)
		require.NoError(t, e.Unlock(m.LastDevice, rc, false))
		require.ErrorIs(t, e.Unlock(m.LastDevice, rc, false), core.ErrReceipt)

		require.NoError(t, e.EvictStart(core.Full, 2))
		st, err := e.EvictNext()
		require.NoError(t, err)
		require.Equal(t, 2, st.Freed)
		require.NoError(t, e.EvictEnd())
		acts, freed, err := e.Evict(core.Full, 100, nil)
		require.NoError(t, err)
		require.Equal(t, 4, freed)
		require.Len(t, acts, 1)
		ev, err := e.Evictable(core.Full)
		require.NoError(t, err)
		require.Zero(t, ev)
		require.NoError(t, e.SanityCheck())
		s, err := e.Render()
		require.NoError(t, err)
		require.NotEmpty(t, s)
		require.NoError(t, e.Reset())

		require.NoError(t, e.Close())
		_, err = e.Match(nil, core.Namespace{}, seq(1, 2))
		require.ErrorIs(t, err, ErrClosed)
		require.ErrorIs(t, e.SanityCheck(), ErrClosed)
		_, err = e.Render()
		require.True(t, errors.Is(err, ErrClosed))
	})
}

// TestController_TakeEvents drains KV events through the controller on
// every engine: the same events, as the caller's own copies (they survive
// the controller's next calls), and ErrClosed after Close.
func TestController_TakeEvents(t *testing.T) {
	var want string
	forEachEngine(t, func(t *testing.T, newEngine engineCtor) {
		c, _ := newCtlOn(t, newEngine, 64, core.Config{PageSize: 2, KVEvents: true, HashConvention: core.HashVLLM}, canaryOn)
		ns := core.Namespace{CacheSalt: "tenant"}
		run(t, c, ns, seq(1, 6))
		evs, err := c.TakeEvents(nil)
		require.NoError(t, err)
		require.Len(t, evs, 1)
		require.Equal(t, core.EventBlockStored, evs[0].Kind)
		require.Len(t, evs[0].BlockHashes, 3)
		require.Equal(t, seq(1, 6), evs[0].TokenIDs)
		require.Equal(t, "tenant", evs[0].CacheSalt)
		got := evs[0].String()

		// More work and another drain must not disturb the events taken.
		run(t, c, ns, cat(seq(1, 6), seq(50, 2)))
		more, err := c.TakeEvents(nil)
		require.NoError(t, err)
		require.Len(t, more, 1)
		require.True(t, more[0].HasParent)
		require.Equal(t, evs[0].BlockHashes[2], more[0].ParentBlockHash)
		require.Equal(t, got, evs[0].String(), "taken events are the caller's own")
		if want == "" {
			want = got
		}
		require.Equal(t, want, got, "every engine reports the same event")

		empty, err := c.TakeEvents(nil)
		require.NoError(t, err)
		require.Empty(t, empty)
		require.NoError(t, c.Close())
		_, err = c.TakeEvents(nil)
		require.ErrorIs(t, err, ErrClosed)
	})
}

// TestController_BigramFinishRightAfterArrive: with bigram keys a cached
// prefix of n atoms covers n+1 tokens, so a request that finishes right
// after arriving (its last token not yet computed) has fewer insertable
// atoms than its protected prefix. Finish must neither pass a prefix
// longer than the key nor free the tree's slots.
func TestController_BigramFinishRightAfterArrive(t *testing.T) {
	c, _ := newCtl(t, 64, core.Config{PageSize: 1, Bigram: true}, canaryOn)
	run(t, c, core.Namespace{}, seq(1, 8))
	r, err := c.Arrive(core.Namespace{}, seq(1, 8))
	require.NoError(t, err)
	require.NoError(t, c.Finish(r))
	require.NoError(t, c.Audit())
	run(t, c, core.Namespace{}, seq(1, 9))
	require.NoError(t, c.Audit())
}
