package core

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestIDTable_AgainstMap runs random puts, overwrites and deletes on an
// idTable and a Go map in lockstep, with keys drawn from a small range (so
// probe runs collide, wrap around and shift back on delete) and from
// multiples of a power of two (whose homes bunch up), checking every key
// and the table's own invariants after each step.
func TestIDTable_AgainstMap(t *testing.T) {
	for _, spread := range []uint64{1, 1 << 40} {
		rng := rand.New(rand.NewPCG(7, spread))
		var m idTable
		want := map[uint64]int32{}
		for step := range 20000 {
			key := uint64(rng.IntN(300)) * spread
			switch rng.IntN(3) {
			case 0, 1:
				v := int32(rng.IntN(1 << 20))
				m.put(key, v)
				want[key] = v
			default:
				m.del(key)
				delete(want, key)
			}
			if step%97 == 0 {
				require.NoError(t, m.check())
				require.Equal(t, len(want), m.n)
				for k := range uint64(300) {
					v, ok := m.get(k * spread)
					w, wok := want[k*spread]
					require.Equal(t, wok, ok, "key %d", k)
					require.Equal(t, w, v, "key %d", k)
				}
			}
			if step == 15000 {
				m.reset()
				clear(want)
			}
		}
		seen := 0
		m.each(func(key uint64, v int32) {
			require.Equal(t, want[key], v)
			seen++
		})
		require.Equal(t, len(want), seen)
	}
}

// TestIDTable_Check: a slot moved off its probe run and a wrong count are
// reported.
func TestIDTable_Check(t *testing.T) {
	var m idTable
	require.NoError(t, m.check())
	_, ok := m.get(3)
	require.False(t, ok)
	m.del(3) // empty table: no-op
	for k := range uint64(5) {
		m.put(k, int32(k))
	}
	require.NoError(t, m.check())
	m.n++
	require.ErrorContains(t, m.check(), "count says")
	m.n--
	// Move an entry one slot past an empty one on its run.
	for j, s := range m.slots {
		if s.val != 0 && m.slots[(j+1)&(len(m.slots)-1)].val == 0 && m.slots[(j+2)&(len(m.slots)-1)].val == 0 {
			m.slots[(j+2)&(len(m.slots)-1)] = s
			m.slots[j] = idSlot{}
			break
		}
	}
	require.ErrorContains(t, m.check(), "unreachable")
}

// TestSanity_EdgeTable: SanityCheck reports an edge chain member filed
// under another key and a table whose count is off.
func TestSanity_EdgeTable(t *testing.T) {
	tr := apiTree(t, Config{PageSize: 2})
	for k := range uint32(4) {
		apiInsert(t, tr, Namespace{}, []uint32{k, k, 7, 7}, int32(10*k))
	}
	require.NoError(t, tr.SanityCheck())
	child := tr.nodes[rootIdx].children[0]
	tr.nodes[child].edgeKey ^= 1
	require.ErrorContains(t, tr.SanityCheck(), "on the edge chain of")
	tr.nodes[child].edgeKey ^= 1
	tr.edges.n++
	require.ErrorContains(t, tr.SanityCheck(), "edge table: ")
	tr.edges.n--
	require.NoError(t, tr.SanityCheck())
}

// TestSanity_ReceiptTable: SanityCheck reports a receipt index that no
// longer points at its record.
func TestSanity_ReceiptTable(t *testing.T) {
	tr := apiTree(t, Config{PageSize: 2})
	var nodes []NodeID
	for k := range uint32(3) {
		res, _ := apiInsert(t, tr, Namespace{}, []uint32{k, k}, int32(10*k))
		nodes = append(nodes, res.LastDevice)
	}
	var rs []Receipt
	for _, n := range nodes {
		r, err := tr.Lock(n, 0)
		require.NoError(t, err)
		rs = append(rs, r)
	}
	// Release the first: the last record moves into its place.
	require.NoError(t, tr.Unlock(nodes[0], rs[0], false))
	require.NoError(t, tr.SanityCheck())
	require.Equal(t, []uint64{rs[1].Serial, rs[2].Serial}, tr.LiveReceipts())
	require.ErrorIs(t, tr.Unlock(nodes[0], rs[0], false), ErrReceipt)
	tr.receipts.index.put(rs[1].Serial, 0)
	tr.receipts.index.put(rs[2].Serial, 0)
	require.ErrorContains(t, tr.SanityCheck(), "is not indexed at its position")
	tr.receipts.index.put(rs[1].Serial, 1)
	require.NoError(t, tr.SanityCheck())
	require.NoError(t, tr.Unlock(nodes[2], rs[2], false))
	require.NoError(t, tr.Unlock(nodes[1], rs[1], false))
	require.Zero(t, tr.LiveReceiptCount())
	require.NoError(t, tr.SanityCheck())
}

// TestTree_EdgeKeyCollisions forces first pages of different namespaces
// onto one edge key, so one collision chain holds children of two
// namespaces: each match finds only its own.
func TestTree_EdgeKeyCollisions(t *testing.T) {
	const mix = 0xd6e8feb86659fd93 // edgeKey's multiplier: namespace 1 under the root
	saved := pageHash
	pageHash = func(p []uint32) uint64 {
		if p[0] == 1 {
			return mix
		}
		return 0
	}
	t.Cleanup(func() { pageHash = saved })
	require.Equal(t, edgeKeyOf(rootIdx, 0, mix), edgeKeyOf(rootIdx, 1, 0))

	tr := apiTree(t, Config{PageSize: 2})
	salt := Namespace{CacheSalt: "s"}
	apiInsert(t, tr, Namespace{}, []uint32{1, 1}, 10)
	apiInsert(t, tr, salt, []uint32{2, 2}, 20)
	apiInsert(t, tr, salt, []uint32{1, 1}, 30)
	apiInsert(t, tr, Namespace{}, []uint32{2, 2}, 40)
	require.NoError(t, tr.SanityCheck())
	for _, c := range []struct {
		ns   Namespace
		tok  uint32
		want []int32
	}{{Namespace{}, 1, []int32{10, 11}}, {salt, 2, []int32{20, 21}}, {salt, 1, []int32{30, 31}}, {Namespace{}, 2, []int32{40, 41}}} {
		res, err := tr.Match(nil, c.ns, []uint32{c.tok, c.tok})
		require.NoError(t, err)
		require.Equal(t, c.want, res.Indices, "%+v", c)
	}
	_, _, err := tr.Evict(Full, 100, nil)
	require.NoError(t, err)
	require.Zero(t, tr.edges.n)
	require.NoError(t, tr.SanityCheck())
}
