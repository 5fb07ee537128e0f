package core

// Unit tests per public method. They live in package core so that the two
// sentinels a healthy tree never returns (ErrBroken, ErrSanity) and the
// suspended-insert paths can be provoked by corrupting state directly.

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func apiTree(t *testing.T, cfg Config) *Tree {
	t.Helper()
	tr, err := New(cfg)
	require.NoError(t, err)
	return tr
}

func apiSlots(from int32, n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = from + int32(i)
	}
	return out
}

// apiInsert inserts tokens with fresh slots starting at from and returns
// the result and its actions.
func apiInsert(t *testing.T, tr *Tree, ns Namespace, tokens []uint32, from int32) (InsertResult, []Action) {
	t.Helper()
	res, acts, err := tr.Insert(InsertParams{Namespace: ns, Tokens: tokens, Slots: apiSlots(from, len(tokens))})
	require.NoError(t, err)
	require.NoError(t, tr.SanityCheck())
	return res, acts
}

// apiUnchanged runs f, which must fail with want, and requires the tree to
// render the same before and after.
func apiUnchanged(t *testing.T, tr *Tree, want error, f func() error) {
	t.Helper()
	before := tr.Render()
	err := f()
	require.ErrorIs(t, err, want)
	require.Equal(t, before, tr.Render(), "a failed call changed the tree")
	require.NoError(t, tr.SanityCheck())
}

func TestNew(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		want error
		msg  string
	}{
		{"page 0", Config{}, ErrInvalidConfig, "page size 0"},
		{"negative page", Config{PageSize: -4}, ErrInvalidConfig, "page size -4"},
		{"huge page", Config{PageSize: 1<<16 + 1}, ErrInvalidConfig, "65536"},
		{"no full", Config{PageSize: 1, Components: []Component{SWA}}, ErrInvalidConfig, "lacks full"},
		{"duplicate", Config{PageSize: 1, Components: []Component{Full, Full}}, ErrInvalidConfig, "listed twice"},
		{"unknown component", Config{PageSize: 1, Components: []Component{Full, 9}}, ErrInvalidConfig, "unknown component 9"},
		{"unknown policy", Config{PageSize: 1, Policy: "belady"}, ErrUnknownPolicy, `"belady"`},
		{"swa without window", Config{PageSize: 1, Components: []Component{Full, SWA}}, ErrInvalidConfig, "window is required"},
		{"window without swa", Config{PageSize: 1, SWAWindow: 8}, ErrInvalidConfig, "window is required"},
		{"negative window", Config{PageSize: 1, Components: []Component{Full, SWA}, SWAWindow: -1}, ErrInvalidConfig, "out of range"},
		{"mamba chunk without mamba", Config{PageSize: 1, MambaChunkSize: 4}, ErrInvalidConfig, "without the mamba"},
		{"mamba negative chunk", Config{PageSize: 1, Components: []Component{Mamba, Full}, MambaChunkSize: -2}, ErrInvalidConfig, "out of range"},
		{"mamba negative cap", Config{PageSize: 1, Components: []Component{Mamba, Full}, MambaMaxPathStates: -1}, ErrInvalidConfig, "negative"},
		{"linker with mamba", Config{PageSize: 1, Components: []Component{Full, Mamba}, ExternalLinker: true}, ErrUnsupported, "linker"},
		{"write policy", Config{PageSize: 1, WritePolicy: 5}, ErrInvalidConfig, "write policy"},
		{"threshold", Config{PageSize: 1, WriteThroughThreshold: -1}, ErrInvalidConfig, "threshold"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr, err := New(c.cfg)
			require.ErrorIs(t, err, c.want)
			require.Nil(t, tr)
			require.Contains(t, err.Error(), c.msg)
			require.True(t, strings.HasPrefix(err.Error(), "core: "), "errors are package-prefixed: %v", err)
		})
	}
	t.Run("unknown policy lists the known ones", func(t *testing.T) {
		_, err := New(Config{PageSize: 1, Policy: "belady"})
		for _, name := range PolicyNames() {
			require.Contains(t, err.Error(), name)
		}
	})
	t.Run("policy names are case-insensitive", func(t *testing.T) {
		for _, name := range PolicyNames() {
			tr := apiTree(t, Config{PageSize: 1, Policy: " " + strings.ToUpper(name) + " "})
			require.Equal(t, name, tr.Policy())
		}
		require.Equal(t, "lru", apiTree(t, Config{PageSize: 1}).Policy())
	})
	t.Run("defaults and copies", func(t *testing.T) {
		comps := []Component{Full}
		tr := apiTree(t, Config{PageSize: 4, Components: comps})
		comps[0] = SWA // the tree keeps its own copy
		require.Equal(t, ComponentSet(0).With(Full), tr.Components())
		require.Equal(t, 4, tr.PageSize())
		require.Equal(t, ComponentSet(0).With(Full), apiTree(t, Config{PageSize: 1}).Components())
		require.NoError(t, tr.SanityCheck())
	})
}

// TestErrors checks that every sentinel is distinct, reachable through the
// API (or by corrupting state for the two a healthy tree never returns)
// and matchable with errors.Is through its wrapping.
func TestErrors(t *testing.T) {
	all := []error{ErrInvalidConfig, ErrUnknownPolicy, ErrUnsupported, ErrInvalidArgument, ErrStaleNode,
		ErrReceipt, ErrInsertInFlight, ErrNoInsert, ErrEvictionInFlight, ErrNoEviction, ErrBusy, ErrBroken, ErrSanity}
	for i, a := range all {
		require.True(t, strings.HasPrefix(a.Error(), "core: "))
		for j, b := range all {
			require.Equal(t, i == j, errors.Is(a, b), "%v vs %v", a, b)
		}
	}
	reach := map[error]func(tr *Tree) error{
		ErrInvalidConfig: func(*Tree) error { _, err := New(Config{}); return err },
		ErrUnknownPolicy: func(*Tree) error { _, err := New(Config{PageSize: 1, Policy: "x"}); return err },
		ErrUnsupported: func(*Tree) error {
			_, err := New(Config{PageSize: 1, Components: []Component{Full, Mamba}, ExternalLinker: true})
			return err
		},
		ErrInvalidArgument: func(tr *Tree) error {
			_, _, err := tr.Evict(Full, -1, nil)
			return err
		},
		ErrStaleNode: func(tr *Tree) error { _, err := tr.Inspect(0); return err },
		ErrReceipt:   func(tr *Tree) error { return tr.Unlock(tr.Root(), Receipt{Node: tr.Root(), Serial: 99}, false) },
		ErrInsertInFlight: func(tr *Tree) error {
			tr.ins.active = true // as if suspended at a barrier
			defer tr.EndInsert()
			_, err := tr.BeginInsert(InsertParams{Tokens: []uint32{1}, Slots: []int32{1}})
			return err
		},
		ErrNoInsert:         func(tr *Tree) error { _, err := tr.ResumeInsert(); return err },
		ErrEvictionInFlight: func(tr *Tree) error { _ = tr.EvictStart(Full, 1); defer tr.EvictEnd(); return tr.EvictStart(Full, 1) },
		ErrNoEviction:       func(tr *Tree) error { _, err := tr.EvictNext(); return err },
		ErrBroken: func(tr *Tree) error {
			res, _ := apiInsert(t, tr, Namespace{}, []uint32{1, 2}, 0)
			rc, err := tr.Lock(res.LastDevice, 0)
			require.NoError(t, err)
			i, _ := tr.resolve(res.LastDevice)
			tr.nodes[i].lock[Full] = 0 // corrupt: the walk finds a zero count
			return tr.Unlock(res.LastDevice, rc, false)
		},
		ErrSanity: func(tr *Tree) error { tr.evictable[Full]++; return tr.SanityCheck() },
	}
	for _, want := range all {
		f, ok := reach[want]
		if !ok {
			// ErrBusy is reserved for operations refused while an insert
			// is suspended; with Full only nothing suspends and no
			// operation returns it yet.
			require.ErrorIs(t, want, ErrBusy)
			continue
		}
		err := f(apiTree(t, Config{PageSize: 1}))
		require.ErrorIs(t, err, want)
		require.True(t, strings.HasPrefix(err.Error(), "core: "), "%v", err)
		for _, other := range all {
			if other != want {
				require.False(t, errors.Is(err, other), "%v also matches %v", err, other)
			}
		}
	}
}

func TestTree_Match(t *testing.T) {
	t.Run("empty tree and unknown namespace", func(t *testing.T) {
		tr := apiTree(t, Config{PageSize: 2})
		res, err := tr.Match(nil, Namespace{}, []uint32{1, 2, 3, 4})
		require.NoError(t, err)
		require.Zero(t, res.DeviceLen)
		require.Equal(t, tr.Root(), res.LastDevice)
		apiInsert(t, tr, Namespace{}, []uint32{1, 2, 3, 4}, 0)
		before := tr.Render()
		res, err = tr.Match(nil, Namespace{LoRA: "never"}, []uint32{1, 2, 3, 4})
		require.NoError(t, err)
		require.Zero(t, res.DeviceLen)
		require.Empty(t, res.Indices)
		require.Equal(t, tr.Root(), res.LastDevice)
		require.Equal(t, before, tr.Render(), "an unknown namespace touches no node")
		_, ok := tr.nsLookup(&Namespace{LoRA: "never"})
		require.False(t, ok, "matching must not intern namespaces")
	})
	t.Run("keys shorter than a page", func(t *testing.T) {
		tr := apiTree(t, Config{PageSize: 4})
		apiInsert(t, tr, Namespace{}, []uint32{1, 2, 3, 4, 5, 6, 7, 8}, 0)
		before := tr.Render()
		res, err := tr.Match([]int32{42}, Namespace{}, []uint32{1, 2, 3})
		require.NoError(t, err)
		require.Equal(t, []int32{42}, res.Indices)
		require.Zero(t, res.DeviceLen)
		require.Equal(t, before, tr.Render())
	})
	t.Run("partial match splits at a page boundary", func(t *testing.T) {
		tr := apiTree(t, Config{PageSize: 2})
		apiInsert(t, tr, Namespace{}, []uint32{1, 2, 3, 4, 5, 6}, 10)
		res, err := tr.Match([]int32{-1}, Namespace{}, []uint32{1, 2, 3, 9, 9})
		require.NoError(t, err)
		require.Equal(t, 2, res.DeviceLen)
		require.Equal(t, []int32{-1, 10, 11}, res.Indices)
		info, err := tr.Inspect(res.LastDevice)
		require.NoError(t, err)
		require.Equal(t, []uint32{1, 2}, info.Key)
		require.Len(t, info.Children, 1)
		require.Equal(t, res.LastDevice, res.Best)
		require.Equal(t, 2, res.FullKVHitLen)
		require.Equal(t, -1, res.SWABranchingSeqlen)
		require.Equal(t, -1, res.MambaBranchingSeqlen)
		require.NoError(t, tr.SanityCheck())
	})
	t.Run("namespaces do not share", func(t *testing.T) {
		tr := apiTree(t, Config{PageSize: 1})
		a, b := Namespace{CacheSalt: "a"}, Namespace{CacheSalt: "b"}
		apiInsert(t, tr, a, []uint32{1, 2, 3}, 0)
		res, err := tr.Match(nil, b, []uint32{1, 2, 3})
		require.NoError(t, err)
		require.Zero(t, res.DeviceLen)
		res, err = tr.Match(nil, a, []uint32{1, 2, 3})
		require.NoError(t, err)
		require.Equal(t, []int32{0, 1, 2}, res.Indices)
	})
	t.Run("bigram", func(t *testing.T) {
		tr := apiTree(t, Config{PageSize: 2, Bigram: true})
		// 5 tokens make 4 atoms; 2 tokens make 1 atom, less than a page.
		_, _, err := tr.Insert(InsertParams{Tokens: []uint32{1, 2, 3, 4, 5}, Slots: apiSlots(0, 4)})
		require.NoError(t, err)
		res, err := tr.Match(nil, Namespace{}, []uint32{1, 2, 3, 4, 9})
		require.NoError(t, err)
		require.Equal(t, []int32{0, 1}, res.Indices, "atom (4,9) differs from (4,5)")
		res, err = tr.Match(nil, Namespace{}, []uint32{1, 2})
		require.NoError(t, err)
		require.Zero(t, res.DeviceLen)
	})
}

func TestTree_Insert(t *testing.T) {
	tokens := []uint32{1, 2, 3, 4, 5, 6, 7, 8}
	t.Run("argument errors change nothing", func(t *testing.T) {
		tr := apiTree(t, Config{PageSize: 4})
		apiInsert(t, tr, Namespace{}, tokens[:4], 100)
		bad := []InsertParams{
			{Tokens: tokens, Slots: apiSlots(0, 7)},                       // too few slots
			{Tokens: tokens, Slots: []int32{0, 1, 2, 3, 4, -5, 6, 7}},     // negative slot
			{Tokens: tokens, Slots: apiSlots(0, 8), PrevPrefixLen: -1},    // negative prefix
			{Tokens: tokens, Slots: apiSlots(0, 8), PrevPrefixLen: 9},     // prefix past the key
			{Tokens: tokens[:7], Slots: apiSlots(0, 7), PrevPrefixLen: 5}, // only 4 aligned atoms
		}
		for _, p := range bad {
			apiUnchanged(t, tr, ErrInvalidArgument, func() error { _, _, err := tr.Insert(p); return err })
			apiUnchanged(t, tr, ErrInvalidArgument, func() error { _, err := tr.BeginInsert(p); return err })
		}
		_, ok := tr.nsLookup(&Namespace{ExtraKey: "x"})
		require.False(t, ok)
		apiUnchanged(t, tr, ErrInvalidArgument, func() error {
			_, _, err := tr.Insert(InsertParams{Namespace: Namespace{ExtraKey: "x"}, Tokens: tokens})
			return err
		})
		_, ok = tr.nsLookup(&Namespace{ExtraKey: "x"})
		require.False(t, ok, "a failed insert must not intern its namespace")
	})
	t.Run("slots past the aligned length are ignored", func(t *testing.T) {
		tr := apiTree(t, Config{PageSize: 4})
		res, acts, err := tr.Insert(InsertParams{Tokens: tokens[:7], Slots: []int32{0, 1, 2, 3, -1}})
		require.NoError(t, err)
		require.Empty(t, acts)
		require.Equal(t, 4, res.TotalLen)
	})
	t.Run("duplicates are freed, the cached prefix is not", func(t *testing.T) {
		tr := apiTree(t, Config{PageSize: 2})
		apiInsert(t, tr, Namespace{}, tokens, 0) // slots 0..7
		slots := []int32{0, 1, 12, 13, 14, 15, 16, 17}
		res, acts, err := tr.Insert(InsertParams{Tokens: append(tokens[:6:6], 9, 9), Slots: slots, PrevPrefixLen: 2, TrackAdopted: true})
		require.NoError(t, err)
		require.Equal(t, 6, res.PrefixLen)
		require.Equal(t, "FreeDeviceKV slots=[12-15]\n", FormatActions(acts))
		require.Equal(t, []Range{{6, 8}}, res.Adopted[Full])
		require.NoError(t, tr.SanityCheck())
	})
	t.Run("prefix covering everything frees nothing", func(t *testing.T) {
		tr := apiTree(t, Config{PageSize: 2})
		apiInsert(t, tr, Namespace{}, tokens, 0)
		before := tr.Evictable(Full)
		res, acts, err := tr.Insert(InsertParams{Tokens: tokens, Slots: apiSlots(0, 8), PrevPrefixLen: 8, TrackAdopted: true})
		require.NoError(t, err)
		require.Empty(t, acts)
		require.Equal(t, 8, res.PrefixLen)
		require.Empty(t, res.Adopted[Full])
		require.Equal(t, before, tr.Evictable(Full))
	})
	t.Run("empty insert touches the root only", func(t *testing.T) {
		tr := apiTree(t, Config{PageSize: 4})
		apiInsert(t, tr, Namespace{}, tokens, 0)
		root, err := tr.Inspect(tr.Root())
		require.NoError(t, err)
		before := tr.Render()
		for _, tok := range [][]uint32{nil, {1, 2, 3}} {
			res, acts, err := tr.Insert(InsertParams{Tokens: tok, Priority: 7})
			require.NoError(t, err)
			require.Empty(t, acts)
			require.Equal(t, InsertResult{LastDevice: tr.Root(), MambaExist: true}, res)
		}
		after, err := tr.Inspect(tr.Root())
		require.NoError(t, err)
		require.Greater(t, after.LastAccess, root.LastAccess)
		require.Equal(t, int64(7), after.Priority)
		require.Equal(t, before, tr.Render(), "no node below the root changes")
	})
}

func TestTree_BeginInsert(t *testing.T) {
	tr := apiTree(t, Config{PageSize: 1})
	st, err := tr.BeginInsert(InsertParams{Tokens: []uint32{1, 2}, Slots: []int32{0, 1}})
	require.NoError(t, err)
	require.True(t, st.Done, "a Full-only insert has no barrier")
	require.Equal(t, 2, st.Result.TotalLen)
	require.False(t, tr.InsertInFlight())
	// Twice in a row is fine when nothing is suspended...
	st, err = tr.BeginInsert(InsertParams{Tokens: []uint32{1, 2}, Slots: []int32{5, 6}})
	require.NoError(t, err)
	require.Equal(t, "FreeDeviceKV slots=[5 6]\n", FormatActions(st.Actions))
	// ...and refused while one is (simulated: nothing suspends with Full only).
	tr.ins.active = true
	apiUnchanged(t, tr, ErrInsertInFlight, func() error {
		_, err := tr.BeginInsert(InsertParams{Tokens: []uint32{3}, Slots: []int32{9}})
		return err
	})
	require.True(t, tr.InsertInFlight())
	require.Empty(t, tr.EndInsert())
	require.False(t, tr.InsertInFlight())
}

func TestTree_ResumeInsert(t *testing.T) {
	tr := apiTree(t, Config{PageSize: 1})
	apiUnchanged(t, tr, ErrNoInsert, func() error { _, err := tr.ResumeInsert(); return err })
	apiInsert(t, tr, Namespace{}, []uint32{1}, 0)
	apiUnchanged(t, tr, ErrNoInsert, func() error { _, err := tr.ResumeInsert(); return err })
}

func TestTree_EndInsert(t *testing.T) {
	tr := apiTree(t, Config{PageSize: 1})
	require.Nil(t, tr.EndInsert())
	require.Nil(t, tr.EndInsert(), "idempotent")
}

func TestTree_Lock(t *testing.T) {
	tr := apiTree(t, Config{PageSize: 1})
	res, _ := apiInsert(t, tr, Namespace{}, []uint32{1, 2, 3}, 0)
	mid, _ := apiInsert(t, tr, Namespace{}, []uint32{1, 2, 9}, 10) // splits: [1 2] + [3], [9]
	parent, err := tr.Inspect(mid.LastDevice)
	require.NoError(t, err)

	apiUnchanged(t, tr, ErrInvalidArgument, func() error { _, err := tr.Lock(res.LastDevice, ComponentSet(0).With(Full)); return err })
	apiUnchanged(t, tr, ErrInvalidArgument, func() error { _, err := tr.Lock(res.LastDevice, ComponentSet(0).With(SWA)); return err })
	apiUnchanged(t, tr, ErrStaleNode, func() error { _, err := tr.Lock(0, 0); return err })
	apiUnchanged(t, tr, ErrStaleNode, func() error { _, err := tr.Lock(NodeID(1<<40|99), 0); return err })

	r1, err := tr.Lock(res.LastDevice, 0)
	require.NoError(t, err)
	require.Equal(t, 3, r1.Delta, "[1 2] and [3] became protected")
	r2, err := tr.Lock(mid.LastDevice, 0)
	require.NoError(t, err)
	require.Equal(t, 1, r2.Delta, "only [9] is new")
	require.Greater(t, r2.Serial, r1.Serial)
	require.Equal(t, 4, tr.Protected(Full))
	require.Zero(t, tr.Evictable(Full))
	require.Equal(t, []uint64{r1.Serial, r2.Serial}, tr.LiveReceipts())
	require.Equal(t, 2, tr.LiveReceiptCount())
	info, err := tr.Inspect(parent.Parent)
	require.NoError(t, err)
	require.Equal(t, uint32(2), info.Lock[Full])

	// Locked leaves are not evicted.
	acts, freed, err := tr.Evict(Full, 100, nil)
	require.NoError(t, err)
	require.Zero(t, freed)
	require.Empty(t, acts)

	// Locking the root protects nothing but still pairs.
	rr, err := tr.Lock(tr.Root(), 0)
	require.NoError(t, err)
	require.Zero(t, rr.Delta)
	require.NoError(t, tr.Unlock(tr.Root(), rr, false))
	require.NoError(t, tr.SanityCheck())

	// Stale after eviction and after Reset.
	require.NoError(t, tr.Unlock(r2.Node, r2, false))
	_, freed, err = tr.Evict(Full, 1, nil)
	require.NoError(t, err)
	require.Equal(t, 1, freed)
	apiUnchanged(t, tr, ErrStaleNode, func() error { _, err := tr.Lock(mid.LastDevice, 0); return err })
	tr.Reset()
	apiUnchanged(t, tr, ErrStaleNode, func() error { _, err := tr.Lock(res.LastDevice, 0); return err })
}

func TestTree_Unlock(t *testing.T) {
	setup := func(t *testing.T) (*Tree, InsertResult, InsertResult, Receipt) {
		tr := apiTree(t, Config{PageSize: 1})
		a, _ := apiInsert(t, tr, Namespace{}, []uint32{1, 2, 3}, 0)
		b, _ := apiInsert(t, tr, Namespace{}, []uint32{5, 6}, 10)
		rc, err := tr.Lock(a.LastDevice, 0)
		require.NoError(t, err)
		return tr, a, b, rc
	}
	t.Run("wrong node", func(t *testing.T) {
		tr, _, b, rc := setup(t)
		apiUnchanged(t, tr, ErrReceipt, func() error { return tr.Unlock(b.LastDevice, rc, false) })
		forged := rc
		forged.Node = b.LastDevice
		apiUnchanged(t, tr, ErrReceipt, func() error { return tr.Unlock(b.LastDevice, forged, false) })
		require.NoError(t, tr.Unlock(rc.Node, rc, false))
	})
	t.Run("double unlock", func(t *testing.T) {
		tr, _, _, rc := setup(t)
		require.NoError(t, tr.Unlock(rc.Node, rc, false))
		apiUnchanged(t, tr, ErrReceipt, func() error { return tr.Unlock(rc.Node, rc, false) })
	})
	t.Run("tampered receipt", func(t *testing.T) {
		tr, _, _, rc := setup(t)
		for _, f := range []func(*Receipt){
			func(r *Receipt) { r.Skipped = r.Skipped.With(Full) },
			func(r *Receipt) { r.Delta++ },
			func(r *Receipt) { r.Serial += 100 },
		} {
			bad := rc
			f(&bad)
			apiUnchanged(t, tr, ErrReceipt, func() error { return tr.Unlock(rc.Node, bad, false) })
		}
		require.NoError(t, tr.Unlock(rc.Node, rc, false))
		require.Zero(t, tr.Protected(Full))
	})
	t.Run("receipt from another tree", func(t *testing.T) {
		tr, _, _, _ := setup(t)
		other := apiTree(t, Config{PageSize: 1})
		o, _ := apiInsert(t, other, Namespace{}, []uint32{7, 7, 7, 7}, 0)
		orc, err := other.Lock(o.LastDevice, 0)
		require.NoError(t, err)
		orc2, err := other.Lock(o.LastDevice, 0)
		require.NoError(t, err)
		// Same serial as a live receipt here, but another node and delta.
		apiUnchanged(t, tr, ErrReceipt, func() error { return tr.Unlock(orc.Node, orc, false) })
		// A serial this tree never issued.
		apiUnchanged(t, tr, ErrReceipt, func() error { return tr.Unlock(orc2.Node, orc2, false) })
	})
	t.Run("after reset", func(t *testing.T) {
		tr, a, _, rc := setup(t)
		tr.Reset()
		apiUnchanged(t, tr, ErrStaleNode, func() error { return tr.Unlock(rc.Node, rc, false) })
		// Rebuild the same shape: the slot is reused under a new
		// generation, and the old receipt is dead anyway.
		again, _ := apiInsert(t, tr, Namespace{}, []uint32{1, 2, 3}, 0)
		require.NotEqual(t, a.LastDevice, again.LastDevice)
		forged := rc
		forged.Node = again.LastDevice
		apiUnchanged(t, tr, ErrReceipt, func() error { return tr.Unlock(again.LastDevice, forged, false) })
	})
	t.Run("corrupted count breaks the tree until reset", func(t *testing.T) {
		tr, a, _, rc := setup(t)
		i, err := tr.resolve(a.LastDevice)
		require.NoError(t, err)
		tr.nodes[i].lock[Full] = 0
		err = tr.Unlock(rc.Node, rc, false)
		require.ErrorIs(t, err, ErrBroken)
		require.ErrorIs(t, tr.SanityCheck(), ErrSanity)
		_, err = tr.Match(nil, Namespace{}, []uint32{1})
		require.ErrorIs(t, err, ErrBroken)
		_, _, err = tr.Insert(InsertParams{Tokens: []uint32{1}, Slots: []int32{1}})
		require.ErrorIs(t, err, ErrBroken)
		_, err = tr.Lock(a.LastDevice, 0)
		require.ErrorIs(t, err, ErrBroken)
		require.ErrorIs(t, tr.EvictStart(Full, 1), ErrBroken)
		require.ErrorIs(t, tr.Unlock(rc.Node, rc, false), ErrBroken)
		tr.Reset()
		require.NoError(t, tr.SanityCheck())
		apiInsert(t, tr, Namespace{}, []uint32{1}, 0)
	})
}

func TestTree_Evict(t *testing.T) {
	tr := apiTree(t, Config{PageSize: 1})
	apiInsert(t, tr, Namespace{}, []uint32{1, 2, 3}, 0)
	b, _ := apiInsert(t, tr, Namespace{}, []uint32{1, 2, 4, 5}, 10)
	apiUnchanged(t, tr, ErrInvalidArgument, func() error { _, _, err := tr.Evict(Full, -1, nil); return err })
	apiUnchanged(t, tr, ErrInvalidArgument, func() error { _, _, err := tr.Evict(SWA, 1, nil); return err })
	apiUnchanged(t, tr, ErrInvalidArgument, func() error { _, _, err := tr.Evict(Component(7), 1, nil); return err })

	dst, freed, err := tr.Evict(Full, 0, []Action{{Kind: ActionFreeDeviceKV}})
	require.NoError(t, err)
	require.Zero(t, freed)
	require.Len(t, dst, 1, "dst is appended to")

	// LRU: [3] is older than [4 5]; one atom asked, one whole leaf freed.
	acts, freed, err := tr.Evict(Full, 1, nil)
	require.NoError(t, err)
	require.Equal(t, 1, freed)
	require.Len(t, acts, 1)
	require.Equal(t, []int32{2}, acts[0].Slots)
	require.Equal(t, ActionFreeDeviceSlots, acts[0].Kind)
	_, err = tr.Inspect(acts[0].Node)
	require.ErrorIs(t, err, ErrStaleNode)

	// The leaf takes its whole value; its parent follows when emptied.
	acts, freed, err = tr.Evict(Full, 3, nil)
	require.NoError(t, err)
	require.Equal(t, 4, freed)
	require.Equal(t, "FreeDeviceSlots full node="+b.LastDevice.String()+" slots=[12 13]\n", FormatActions(acts[:1]))
	require.Equal(t, []int32{0, 1}, acts[1].Slots)
	require.Zero(t, tr.Evictable(Full))
	require.Equal(t, []NodeID{tr.Root()}, tr.Nodes())
	require.NoError(t, tr.SanityCheck())

	// Nothing left: freed < want.
	_, freed, err = tr.Evict(Full, 5, nil)
	require.NoError(t, err)
	require.Zero(t, freed)
}

func TestTree_EvictStart(t *testing.T) {
	tr := apiTree(t, Config{PageSize: 1})
	apiInsert(t, tr, Namespace{}, []uint32{1}, 0)
	apiUnchanged(t, tr, ErrInvalidArgument, func() error { return tr.EvictStart(Full, -3) })
	apiUnchanged(t, tr, ErrInvalidArgument, func() error { return tr.EvictStart(Mamba, 1) })
	require.NoError(t, tr.EvictStart(Full, 1))
	require.True(t, tr.EvictionInFlight())
	apiUnchanged(t, tr, ErrEvictionInFlight, func() error { return tr.EvictStart(Full, 1) })
	apiUnchanged(t, tr, ErrEvictionInFlight, func() error { _, _, err := tr.Evict(Full, 1, nil); return err })
	tr.EvictEnd()
	require.False(t, tr.EvictionInFlight())
}

func TestTree_EvictNext(t *testing.T) {
	tr := apiTree(t, Config{PageSize: 1})
	apiUnchanged(t, tr, ErrNoEviction, func() error { _, err := tr.EvictNext(); return err })
	a, _ := apiInsert(t, tr, Namespace{}, []uint32{1, 2}, 0)
	b, _ := apiInsert(t, tr, Namespace{}, []uint32{1, 3}, 10)
	require.NoError(t, tr.EvictStart(Full, 2))
	st, err := tr.EvictNext()
	require.NoError(t, err)
	require.Equal(t, a.LastDevice, st.Node)
	require.Equal(t, 1, st.Freed)
	require.False(t, st.Done)
	// The parent [1] is not a leaf yet; b's leaf goes next.
	st, err = tr.EvictNext()
	require.NoError(t, err)
	require.Equal(t, b.LastDevice, st.Node)
	st, err = tr.EvictNext()
	require.NoError(t, err)
	require.Equal(t, EvictStep{Done: true}, st, "2 atoms freed: done, no work")
	st, err = tr.EvictNext()
	require.NoError(t, err)
	require.True(t, st.Done, "done stays done")
	tr.EvictEnd()
	tr.EvictEnd() // idempotent
	apiUnchanged(t, tr, ErrNoEviction, func() error { _, err := tr.EvictNext(); return err })
	require.Equal(t, 1, tr.Evictable(Full), "[1] stays cached")
	require.NoError(t, tr.SanityCheck())

	// A leaf locked after the walk started is skipped.
	c, _ := apiInsert(t, tr, Namespace{}, []uint32{1, 4}, 20)
	require.NoError(t, tr.EvictStart(Full, 10))
	_, err = tr.Lock(c.LastDevice, 0)
	require.NoError(t, err)
	st, err = tr.EvictNext()
	require.NoError(t, err)
	require.True(t, st.Done)
	require.Empty(t, st.Actions)
	tr.EvictEnd()
	require.NoError(t, tr.SanityCheck())
}

func TestTree_Inspect(t *testing.T) {
	tr := apiTree(t, Config{PageSize: 2})
	ns := Namespace{ExtraKey: "k"}
	res, _ := apiInsert(t, tr, ns, []uint32{1, 2, 3, 4, 5}, 0)
	info, err := tr.Inspect(res.LastDevice)
	require.NoError(t, err)
	require.Equal(t, res.LastDevice, info.ID)
	require.Equal(t, tr.Root(), info.Parent)
	require.Equal(t, ns, info.Namespace)
	require.Equal(t, []uint32{1, 2, 3, 4}, info.Key)
	require.Equal(t, []int32{0, 1, 2, 3}, info.Device[Full])
	require.True(t, info.DLeaf)
	// A copy: changing it changes nothing.
	info.Key[0], info.Device[Full][0] = 99, 99
	again, err := tr.Inspect(res.LastDevice)
	require.NoError(t, err)
	require.Equal(t, uint32(1), again.Key[0])
	require.Equal(t, int32(0), again.Device[Full][0])

	root, err := tr.Inspect(tr.Root())
	require.NoError(t, err)
	require.Zero(t, root.Parent)
	require.Equal(t, []NodeID{res.LastDevice}, root.Children)

	for _, id := range []NodeID{0, NodeID(1<<32 | 1000), NodeID(5<<32 | 1)} {
		_, err := tr.Inspect(id)
		require.ErrorIs(t, err, ErrStaleNode, "%v", id)
	}
	_, _, err = tr.Evict(Full, 1, nil)
	require.NoError(t, err)
	_, err = tr.Inspect(res.LastDevice)
	require.ErrorIs(t, err, ErrStaleNode)
	require.Contains(t, err.Error(), res.LastDevice.String())
	oldRoot := tr.Root()
	tr.Reset()
	_, err = tr.Inspect(oldRoot)
	require.ErrorIs(t, err, ErrStaleNode)
	require.NotEqual(t, oldRoot, tr.Root())
}

func TestTree_Reset(t *testing.T) {
	cfg := Config{PageSize: 1, Policy: "lfu"}
	tr := apiTree(t, cfg)
	fresh := apiTree(t, cfg)
	require.Equal(t, fresh.Render(), tr.Render())
	a, _ := apiInsert(t, tr, Namespace{}, []uint32{1, 2, 3}, 0)
	rc, err := tr.Lock(a.LastDevice, 0)
	require.NoError(t, err)
	require.NoError(t, tr.EvictStart(Full, 1))
	tr.Reset()
	require.Equal(t, fresh.Render(), tr.Render())
	require.Empty(t, tr.LiveReceipts())
	require.False(t, tr.EvictionInFlight())
	require.Zero(t, tr.Evictable(Full)+tr.Protected(Full))
	require.ErrorIs(t, tr.Unlock(rc.Node, rc, false), ErrStaleNode)
	require.NoError(t, tr.SanityCheck())
	// Serials are never reused, not even across Reset.
	r2, err := tr.Lock(tr.Root(), 0)
	require.NoError(t, err)
	require.Greater(t, r2.Serial, rc.Serial)
}

func TestTree_SanityCheck(t *testing.T) {
	tr := apiTree(t, Config{PageSize: 1})
	require.NoError(t, tr.SanityCheck())
	a, _ := apiInsert(t, tr, Namespace{}, []uint32{1, 2}, 0)
	i, err := tr.resolve(a.LastDevice)
	require.NoError(t, err)
	tr.nodes[i].dev[Full] = append(tr.nodes[i].dev[Full], 7)
	err = tr.SanityCheck()
	require.ErrorIs(t, err, ErrSanity)
	require.Contains(t, err.Error(), a.LastDevice.String())
}

func TestTree_Nodes(t *testing.T) {
	tr := apiTree(t, Config{PageSize: 1})
	require.Equal(t, []NodeID{tr.Root()}, tr.Nodes())
	b, _ := apiInsert(t, tr, Namespace{}, []uint32{2, 2}, 0)
	a, _ := apiInsert(t, tr, Namespace{}, []uint32{1}, 10)
	c, _ := apiInsert(t, tr, Namespace{CacheSalt: "z"}, []uint32{0}, 20)
	// Root first, then children by namespace (first use), then key.
	require.Equal(t, []NodeID{tr.Root(), a.LastDevice, b.LastDevice, c.LastDevice}, tr.Nodes())
	// Device leaves come sorted by handle.
	require.Equal(t, []NodeID{b.LastDevice, a.LastDevice, c.LastDevice}, tr.DeviceLeaves())
}

func TestTree_DFSWeightOrder(t *testing.T) {
	tr := apiTree(t, Config{PageSize: 1})
	x, _ := apiInsert(t, tr, Namespace{}, []uint32{1, 2}, 0)
	y, _ := apiInsert(t, tr, Namespace{}, []uint32{1, 3}, 10)
	z, _ := apiInsert(t, tr, Namespace{}, []uint32{5}, 20)
	order, err := tr.DFSWeightOrder([]NodeID{z.LastDevice, x.LastDevice, y.LastDevice, y.LastDevice})
	require.NoError(t, err)
	// The [1] subtree weighs 3, [5] weighs 1; under [1], y (2) before x (1).
	require.Equal(t, []int{2, 3, 1, 0}, order)
	order, err = tr.DFSWeightOrder(nil)
	require.NoError(t, err)
	require.Empty(t, order)
	_, err = tr.DFSWeightOrder([]NodeID{x.LastDevice, 0})
	require.ErrorIs(t, err, ErrStaleNode)
	assert.Contains(t, err.Error(), "entry 1")
}

func TestTree_Render(t *testing.T) {
	tr := apiTree(t, Config{PageSize: 2})
	apiInsert(t, tr, Namespace{}, []uint32{1, 2, 3, 4}, 0)
	apiInsert(t, tr, Namespace{LoRA: "a"}, []uint32{1, 2}, 10)
	want := "tree page=2 policy=lru evictable=6 protected=0\n" +
		"  n1.1 key=[1-4] full=[0-3] hits=1 t=3/3 leaf\n" +
		"  n2.1 ns=\"\"/\"\"/\"a\" key=[1 2] full=[10 11] hits=1 t=5/5 leaf\n"
	require.Equal(t, want, tr.Render())
}

func TestTree_Sizes(t *testing.T) {
	tr := apiTree(t, Config{PageSize: 1})
	a, _ := apiInsert(t, tr, Namespace{}, []uint32{1, 2, 3}, 0)
	_, err := tr.Lock(a.LastDevice, 0)
	require.NoError(t, err)
	apiInsert(t, tr, Namespace{}, []uint32{4}, 10)
	require.Equal(t, 1, tr.Evictable(Full))
	require.Equal(t, 3, tr.Protected(Full))
	full, aux := tr.TotalSize()
	require.Equal(t, 4, full)
	require.Zero(t, aux)
	require.Zero(t, tr.Evictable(Component(9)))
	require.Zero(t, tr.Protected(Component(9)))
	require.Zero(t, tr.Evictable(SWA))
}

func TestFormatActions(t *testing.T) {
	acts := []Action{
		{Kind: ActionFreeDeviceKV, Slots: []int32{1, 2, 3, 5, 7, 8}},
		{Kind: ActionFreeDeviceSlots, Component: Full, Node: NodeID(1<<32 | 4), Slots: []int32{9}},
		{Kind: ActionBackupKV, Nodes: []NodeID{NodeID(1<<32 | 1), NodeID(2<<32 | 2)}},
		{Kind: ActionKind(99)},
	}
	require.Equal(t, "FreeDeviceKV slots=[1-3 5 7 8]\n"+
		"FreeDeviceSlots full node=n3.1 slots=[9]\n"+
		"BackupKV nodes=[n0.1 n1.2]\n"+
		"ActionKind(99)\n", FormatActions(acts))
	require.Equal(t, "", FormatActions(nil))
}

// TestTree_HashCollisions forces every first page onto one edge-map
// bucket, so lookups, splits and removals walk collision chains.
func TestTree_HashCollisions(t *testing.T) {
	saved := pageHash
	pageHash = func([]uint32) uint64 { return 42 }
	t.Cleanup(func() { pageHash = saved })

	tr := apiTree(t, Config{PageSize: 2})
	var ids []NodeID
	for k := range uint32(6) {
		res, _ := apiInsert(t, tr, Namespace{}, []uint32{k, k, 7, 7}, int32(10*k))
		ids = append(ids, res.LastDevice)
	}
	for k := range uint32(6) {
		res, err := tr.Match(nil, Namespace{}, []uint32{k, k, 7, 7, 9})
		require.NoError(t, err)
		require.Equal(t, []int32{int32(10 * k), int32(10*k + 1), int32(10*k + 2), int32(10*k + 3)}, res.Indices)
	}
	// Split a node in the middle of the chain: the prefix takes its
	// place on the chain.
	_, acts := apiInsert(t, tr, Namespace{}, []uint32{3, 3, 8, 8}, 100)
	require.Equal(t, "FreeDeviceKV slots=[100 101]\n", FormatActions(acts))
	_, err := tr.Inspect(ids[3])
	require.NoError(t, err, "the split child keeps its handle")
	// Evict every chain member but two locked ones: removals at the
	// head, in the middle and at the tail of the chain.
	a, err := tr.Match(nil, Namespace{}, []uint32{1, 1, 7, 7})
	require.NoError(t, err)
	require.Equal(t, ids[1], a.LastDevice)
	b, err := tr.Match(nil, Namespace{}, []uint32{3, 3, 8, 8})
	require.NoError(t, err)
	ra, err := tr.Lock(a.LastDevice, 0)
	require.NoError(t, err)
	rb, err := tr.Lock(b.LastDevice, 0)
	require.NoError(t, err)
	_, _, err = tr.Evict(Full, 1000, nil)
	require.NoError(t, err)
	require.NoError(t, tr.SanityCheck())
	require.Equal(t, 8, tr.Protected(Full))
	require.Zero(t, tr.Evictable(Full))
	for k, want := range map[uint32]int{0: 0, 1: 4, 2: 0, 3: 2, 4: 0, 5: 0} {
		res, err := tr.Match(nil, Namespace{}, []uint32{k, k, 7, 7})
		require.NoError(t, err)
		require.Equal(t, want, res.DeviceLen, "first page %d", k)
	}
	require.NoError(t, tr.Unlock(a.LastDevice, ra, false))
	require.NoError(t, tr.Unlock(b.LastDevice, rb, false))
	_, _, err = tr.Evict(Full, 1000, nil)
	require.NoError(t, err)
	require.Equal(t, []NodeID{tr.Root()}, tr.Nodes())
	require.Zero(t, tr.edges.n)
	require.NoError(t, tr.SanityCheck())
}

// TestResumeInsert_NodeFreedMeanwhile: an insert suspended after its
// commit (at an SWARebuild / Mamba cap barrier) whose new node the host
// evicts before resuming is abandoned with an error, not a panic.
func TestResumeInsert_NodeFreedMeanwhile(t *testing.T) {
	tr, err := New(Config{PageSize: 2, Components: []Component{Full, SWA, Mamba}, SWAWindow: 8, MambaMaxPathStates: 3})
	require.NoError(t, err)
	step, err := tr.BeginInsert(InsertParams{Tokens: []uint32{1, 2, 3, 4}, Slots: []int32{0, 1, 2, 3}, MambaSlot: 7})
	require.NoError(t, err)
	require.False(t, step.Done)
	_, _, err = tr.Evict(Full, 100, nil)
	require.NoError(t, err)
	_, err = tr.ResumeInsert()
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.False(t, tr.InsertInFlight())
	require.NoError(t, tr.SanityCheck())
}
