package core_test

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/radixkv/radixkv/core"
)

// refDigests recomputes a page-hash chain from its definition: each page's
// digest is SHA-256 over the previous raw digest (if any) and the page's
// words as little-endian u32.
func refDigests(prior []byte, words []uint32, pageWords int) [][32]byte {
	var out [][32]byte
	for off := 0; off+pageWords <= len(words); off += pageWords {
		buf := append([]byte(nil), prior...)
		for _, w := range words[off : off+pageWords] {
			buf = binary.LittleEndian.AppendUint32(buf, w)
		}
		d := sha256.Sum256(buf)
		out = append(out, d)
		prior = d[:]
	}
	return out
}

func sglangID(d [32]byte) int64 { return int64(binary.BigEndian.Uint64(d[:8])) }
func vllmID(d [32]byte) uint64  { return binary.BigEndian.Uint64(d[24:]) }

func storedIDs(t *testing.T, tree *core.Tree) []int64 {
	var ids []int64
	for _, e := range tree.TakeEvents(nil) {
		if e.Kind == core.EventBlockStored {
			ids = append(ids, e.BlockHashes...)
		}
	}
	return ids
}

func TestPageHashes_MatchDefinition(t *testing.T) {
	tokens := []uint32{7, 1 << 31, 3, 4, 5, 6, 0xffffffff, 8}
	for _, page := range []int{1, 2, 4} {
		tree, err := core.New(core.Config{PageSize: page, KVEvents: true})
		require.NoError(t, err)
		res, _, err := tree.Insert(core.InsertParams{Tokens: tokens, Slots: make([]int32, len(tokens))})
		require.NoError(t, err)
		want := refDigests(nil, tokens, page)
		got, err := tree.PageHashes(res.LastDevice)
		require.NoError(t, err)
		require.Len(t, got, len(want))
		for k := range want {
			require.Equal(t, hex.EncodeToString(want[k][:]), got[k], "page %d", k)
		}
		ids := storedIDs(t, tree)
		require.Len(t, ids, len(want))
		for k := range want {
			require.Equal(t, sglangID(want[k]), ids[k])
		}
	}
}

func TestPageHashes_VLLMConvention(t *testing.T) {
	tokens := []uint32{1, 2, 3, 4}
	tree, err := core.New(core.Config{PageSize: 2, KVEvents: true, HashConvention: core.HashVLLM})
	require.NoError(t, err)
	_, _, err = tree.Insert(core.InsertParams{Tokens: tokens, Slots: make([]int32, 4)})
	require.NoError(t, err)
	want := refDigests(nil, tokens, 2)
	ids := storedIDs(t, tree)
	require.Equal(t, []uint64{vllmID(want[0]), vllmID(want[1])}, []uint64{uint64(ids[0]), uint64(ids[1])})
}

func TestPageHashes_NamespaceSeed(t *testing.T) {
	tokens := []uint32{1, 2, 3, 4}
	ns := core.Namespace{ExtraKey: "e", CacheSalt: "salty"}
	tree, err := core.New(core.Config{PageSize: 2, KVEvents: true})
	require.NoError(t, err)
	res, _, err := tree.Insert(core.InsertParams{Namespace: ns, Tokens: tokens, Slots: make([]int32, 4)})
	require.NoError(t, err)

	// Storage chain: seeded by the namespace (extra key and salt fields).
	seedIn := []byte("sglang-cache-namespace-v1")
	for _, f := range []string{ns.ExtraKey, ns.CacheSalt} {
		seedIn = append(seedIn, 1)
		seedIn = binary.LittleEndian.AppendUint64(seedIn, uint64(len(f)))
		seedIn = append(seedIn, f...)
	}
	seed := sha256.Sum256(seedIn)
	want := refDigests(seed[:], tokens, 2)
	got, err := tree.PageHashes(res.LastDevice)
	require.NoError(t, err)
	require.Equal(t, []string{hex.EncodeToString(want[0][:]), hex.EncodeToString(want[1][:])}, got)

	// Event ids: a chain seeded by the cache salt alone.
	saltSeed := sha256.Sum256(append([]byte("sglang-cache-salt-v1\x00"), ns.CacheSalt...))
	ev := refDigests(saltSeed[:], tokens, 2)
	ids := storedIDs(t, tree)
	require.Equal(t, []int64{sglangID(ev[0]), sglangID(ev[1])}, ids)
}

func TestPageHashes_SplitKeepsChain(t *testing.T) {
	tokens := []uint32{1, 2, 3, 4, 5, 6}
	tree, err := core.New(core.Config{PageSize: 2, KVEvents: true})
	require.NoError(t, err)
	res, _, err := tree.Insert(core.InsertParams{Tokens: tokens, Slots: make([]int32, 6)})
	require.NoError(t, err)
	before, err := tree.PageHashes(res.LastDevice)
	require.NoError(t, err)
	m, err := tree.Match(nil, core.Namespace{}, []uint32{1, 2, 9, 9})
	require.NoError(t, err)
	head, err := tree.PageHashes(m.LastDevice)
	require.NoError(t, err)
	tail, err := tree.PageHashes(res.LastDevice)
	require.NoError(t, err)
	require.Equal(t, before, append(head, tail...))
}

func BenchmarkEventsInsert(b *testing.B) {
	tokens := make([]uint32, 4096)
	slots := make([]int32, 4096)
	for i := range tokens {
		tokens[i] = uint32(i)
	}
	for _, ev := range []bool{false, true} {
		for _, page := range []int{1, 16} {
			name := "events=off/page=" + itoa(page)
			if ev {
				name = "events=on/page=" + itoa(page)
			}
			b.Run(name, func(b *testing.B) { benchEventsInsert(b, page, ev, tokens, slots) })
		}
	}
}

// benchEventsInsert inserts and evicts 4096 tokens per op, with or
// without KV events (whose page hashes dominate the difference).
func benchEventsInsert(b *testing.B, page int, events bool, tokens []uint32, slots []int32) {
	tree, _ := core.New(core.Config{PageSize: page, KVEvents: events})
	var evs []core.Event
	b.ReportAllocs()
	for b.Loop() {
		_, _, _ = tree.Insert(core.InsertParams{Tokens: tokens, Slots: slots})
		_, _, _ = tree.Evict(core.Full, 4096, nil)
		evs = tree.TakeEvents(evs[:0])
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/4096, "ns/token")
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}
