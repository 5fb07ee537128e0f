package core_test

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/radixkv/radixkv/core"
)

// detNamespaces are many, so that any output ordered by Go map iteration
// would show up as a difference between two runs.
var detNamespaces = []core.Namespace{
	{}, {ExtraKey: "a"}, {ExtraKey: "b"}, {CacheSalt: "s1"}, {CacheSalt: "s2"},
	{LoRA: "l1"}, {LoRA: "l2", CacheSalt: "s1"}, {ExtraKey: "a", LoRA: "l1"},
}

// detRunner issues a pseudo-random op stream and logs every result. Its
// choices depend only on its seed and on what the tree answered, so two
// runners with the same seed on deterministic trees log the same text.
type detRunner struct {
	t        *testing.T
	rng      *rand.Rand
	tree     *core.Tree
	streams  [][]uint32
	receipts []core.Receipt
	slot     int32
	last     core.NodeID
	walking  bool
	seen     []core.NodeID
}

func newDetRunner(t *testing.T, tree *core.Tree, seed uint64) *detRunner {
	rng := rand.New(rand.NewPCG(seed, 0xd37))
	return &detRunner{t: t, rng: rng, tree: tree, streams: genStreams(rng, 5, 9, 60)}
}

func (d *detRunner) fresh(n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = d.slot
		d.slot++
	}
	return out
}

func (d *detRunner) step(i int) string {
	var b strings.Builder
	tree, rng := d.tree, d.rng
	ns := detNamespaces[rng.IntN(len(detNamespaces))]
	if full, _ := tree.TotalSize(); full > 400 && !d.walking {
		acts, freed, err := tree.Evict(core.Full, full-200, nil)
		fmt.Fprintf(&b, "evict(pressure) -> %d %v\n%s", freed, err, core.FormatActions(acts))
	}
	switch r := rng.IntN(100); {
	case r < 30:
		tok := randomTokens(rng, d.streams)
		res, err := tree.Match(nil, ns, tok)
		require.NoError(d.t, err)
		slots := append(res.Indices, d.fresh(len(tok))...)
		ir, acts, err := tree.Insert(core.InsertParams{
			Namespace: ns, Tokens: tok, Slots: slots, PrevPrefixLen: res.DeviceLen,
			Priority: int64(rng.IntN(4)), TrackAdopted: rng.IntN(2) == 0,
		})
		require.NoError(d.t, err)
		d.last = ir.LastDevice
		fmt.Fprintf(&b, "insert %+v %v -> %+v\n%s", ns, tok, ir, core.FormatActions(acts))
	case r < 55:
		tok := randomTokens(rng, d.streams)
		res, err := tree.Match(make([]int32, 0, 8), ns, tok)
		require.NoError(d.t, err)
		d.last = res.LastDevice
		fmt.Fprintf(&b, "match %+v %v -> %+v\n", ns, tok, res)
	case r < 65:
		rc, err := tree.Lock(d.last, 0)
		// Serials are compared separately: they are never reused, so
		// a reset tree's differ from a fresh one's.
		fmt.Fprintf(&b, "lock %v -> %v delta=%d skipped=%v %v\n", d.last, rc.Node, rc.Delta, rc.Skipped, err)
		if err == nil {
			d.receipts = append(d.receipts, rc)
		}
	case r < 73:
		if len(d.receipts) > 0 {
			k := rng.IntN(len(d.receipts))
			rc := d.receipts[k]
			d.receipts = append(d.receipts[:k], d.receipts[k+1:]...)
			fmt.Fprintf(&b, "unlock %v -> %v\n", rc.Node, tree.Unlock(rc.Node, rc, false))
		}
	case r < 83:
		if d.walking {
			st, err := tree.EvictNext()
			fmt.Fprintf(&b, "evict-next -> %v %d %v %v\n%s", st.Node, st.Freed, st.Done, err, core.FormatActions(st.Actions))
			if st.Done {
				tree.EvictEnd()
				d.walking = false
			}
		} else {
			acts, freed, err := tree.Evict(core.Full, rng.IntN(30), nil)
			fmt.Fprintf(&b, "evict -> %d %v\n%s", freed, err, core.FormatActions(acts))
		}
	case r < 88:
		err := tree.EvictStart(core.Full, rng.IntN(40))
		fmt.Fprintf(&b, "evict-start -> %v\n", err)
		d.walking = d.walking || err == nil
	case r < 99:
		nodes := tree.Nodes()
		ids := []core.NodeID{nodes[rng.IntN(len(nodes))], nodes[rng.IntN(len(nodes))], d.last}
		order, err := tree.DFSWeightOrder(ids)
		// Leaves come sorted by handle, generation first; list them by
		// slot too, so that the reset comparison (which ignores
		// generations) sees a stable order.
		leaves := tree.DeviceLeaves()
		require.True(d.t, slices.IsSorted(leaves))
		slices.SortFunc(leaves, func(x, y core.NodeID) int { return cmp.Compare(uint32(x), uint32(y)) })
		fmt.Fprintf(&b, "nodes %v leaves %v receipts %d order %v %v\n", nodes, leaves, tree.LiveReceiptCount(), order, err)
		for _, id := range ids {
			info, err := tree.Inspect(id)
			fmt.Fprintf(&b, "  %+v %v\n", info, err)
		}
		if len(d.seen) > 0 {
			// A handle from earlier: stale or alive, the answer is stable.
			_, err := tree.Inspect(d.seen[rng.IntN(len(d.seen))])
			fmt.Fprintf(&b, "  old handle: %v\n", err)
		}
		d.seen = append(d.seen, nodes...)
	default:
		tree.Reset()
		d.receipts, d.walking = nil, false
		b.WriteString("reset\n")
	}
	b.WriteString(tree.Render())
	if i%50 == 0 {
		require.NoError(d.t, tree.SanityCheck())
	}
	return b.String()
}

// stripGenerations turns every handle "n<slot>.<gen>" into "n<slot>".
func stripGenerations(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	isDigit := func(c byte) bool { return '0' <= c && c <= '9' }
	for i := 0; i < len(s); {
		// A handle starts with n, not preceded by a letter or digit.
		if s[i] == 'n' && (i == 0 || !isDigit(s[i-1]) && !('a' <= s[i-1] && s[i-1] <= 'z')) {
			j := i + 1
			for j < len(s) && isDigit(s[j]) {
				j++
			}
			if j > i+1 && j+1 < len(s) && s[j] == '.' && isDigit(s[j+1]) {
				b.WriteString(s[i:j])
				i = j + 1
				for i < len(s) && isDigit(s[i]) {
					i++
				}
				continue
			}
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

func TestTree_Determinism(t *testing.T) {
	steps := 600
	if testing.Short() {
		steps = 200
	}
	cfgs := []core.Config{
		{PageSize: 1},
		{PageSize: 2, Policy: "lfu"},
		{PageSize: 4, Policy: "gdsf", Bigram: true},
		{PageSize: 1, Policy: "priority"},
		{PageSize: 2, Policy: "lhd"},
	}
	for k, cfg := range cfgs {
		seed := uint64(k)*7919 + 1
		t.Run(fmt.Sprintf("page=%d/%s/bigram=%v", cfg.PageSize, cfg.Policy, cfg.Bigram), func(t *testing.T) {
			a, err := core.New(cfg)
			require.NoError(t, err)
			b, err := core.New(cfg)
			require.NoError(t, err)
			lockstep := func(ra, rb *detRunner) {
				for i := range steps {
					x, y := ra.step(i), rb.step(i)
					if x != y {
						require.Equal(t, x, y, "step %d diverged", i)
					}
					sameSlice(t, ra.tree.LiveReceipts(), rb.tree.LiveReceipts(), "step %d", i)
				}
			}
			// Two fresh trees, the same stream.
			lockstep(newDetRunner(t, a, seed), newDetRunner(t, b, seed))
			// Both reset, then another stream: still identical.
			a.Reset()
			b.Reset()
			lockstep(newDetRunner(t, a, seed+1), newDetRunner(t, b, seed+1))

			// A reset tree behaves like a fresh one, up to handle
			// generations.
			// Namespaces stay interned across Reset and order siblings, so
			// the used tree first sees a prefix of the same stream: its
			// namespaces then get their ids in the fresh tree's order.
			used, err := core.New(cfg)
			require.NoError(t, err)
			u := newDetRunner(t, used, seed+2)
			for i := range steps / 4 {
				u.step(i)
			}
			used.Reset()
			c, err := core.New(cfg)
			require.NoError(t, err)
			ra, rc := newDetRunner(t, used, seed+2), newDetRunner(t, c, seed+2)
			for i := range steps {
				x, y := ra.step(i), rc.step(i)
				x, y = stripGenerations(x), stripGenerations(y)
				if x != y {
					require.Equal(t, y, x, "step %d: reset tree differs from a fresh one", i)
				}
			}
		})
	}
}

func TestStripGenerations(t *testing.T) {
	require.Equal(t, "n3 [n0 n12] n4x node=n7 slots=[1 2.5] x=1.2",
		stripGenerations("n3.1 [n0.2 n12.40] n4x node=n7.3 slots=[1 2.5] x=1.2"))
}
