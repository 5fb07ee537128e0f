package native

import (
	"testing"

	"github.com/radixkv/radixkv/core"
	"github.com/stretchr/testify/require"
)

// record is the KV canary record of position pos of tokens in ns.
func record(ns core.Namespace, tokens []uint32, pos int) [CanaryBytes]byte {
	var rec [CanaryBytes]byte
	putCanary(&rec, canaryChain(canarySeed(ns), tokens[:pos+1], 0))
	return rec
}

// TestCanaryRecord: what the record tells apart. A token's term is a
// bijection of the token for one position, so one step from one chain
// value never maps two tokens to one digest; two prefixes that differ in
// one position only differ in every digest from there on (the chain adds
// the same terms to both); the position, the namespace and the whole
// prefix reach the digest; a state record is never its prefix's KV record.
func TestCanaryRecord(t *testing.T) {
	ns := core.Namespace{}
	for _, pos := range []uint64{0, 1, 7, 1 << 20} {
		seen := make(map[uint32]uint32, 1<<16)
		for tok := range uint32(1 << 16) {
			d := canaryStep(12345, tok*0x9e3779b1, pos) // spread over the 32 bits
			if prev, dup := seen[d]; dup {
				t.Fatalf("position %d: tokens %d and %d step to one digest", pos, prev, tok)
			}
			seen[d] = tok
		}
	}
	a := []uint32{5, 6, 5, 6, 5, 6, 5, 6}
	b := []uint32{9, 6, 5, 6, 5, 6, 5, 6} // a with another first token
	for i := range a {
		require.NotEqual(t, record(ns, a, i), record(ns, b, i), "position %d of a prefix that differs at 0", i)
		require.NotEqual(t, record(ns, a, i), record(core.Namespace{CacheSalt: "x"}, a, i), "another tenant")
		require.NotEqual(t, record(ns, a, i), record(core.Namespace{LoRA: "x"}, a, i), "another adapter")
		require.NotEqual(t, record(ns, a, i), [CanaryBytes]byte{}, "a poisoned slot")
		for j := range a {
			if j != i {
				require.NotEqual(t, record(ns, a, i), record(ns, a, j), "positions %d and %d", i, j)
			}
		}
		var st [CanaryBytes]byte
		putState(&st, canaryChain(canarySeed(ns), a[:i+1], 0))
		require.NotEqual(t, record(ns, a, i), st, "the state after %d atoms", i+1)
	}
	// Same tokens, same count, another order: the position is in the terms.
	require.NotEqual(t, record(ns, []uint32{1, 2}, 1), record(ns, []uint32{2, 1}, 1))
}

// TestController_CanaryCatchesMovedSlots: a slot holding the record of
// the same token at another position of the same prefix (two slots
// swapped), and a slot holding the record of the same position of another
// prefix (one that differs at its first token only), are both caught on
// the next arrival, at the position of the bad slot.
func TestController_CanaryCatchesMovedSlots(t *testing.T) {
	a := []uint32{5, 6, 5, 6, 5, 6, 5, 6} // token 5 at 0, 2, 4, 6; 6 before each but the first
	b := []uint32{9, 6, 5, 6, 5, 6, 5, 6}
	ns := core.Namespace{}
	setup := func(t *testing.T, newEngine engineCtor) (*Controller, *MemPool, []int32, []int32) {
		c, kv := newCtlOn(t, newEngine, 32, core.Config{PageSize: 4}, canaryOn)
		run(t, c, ns, a)
		run(t, c, ns, b)
		sa, err := c.Match(nil, ns, a)
		require.NoError(t, err)
		sb, err := c.Match(nil, ns, b)
		require.NoError(t, err)
		require.Len(t, sa, len(a))
		require.Len(t, sb, len(b))
		require.NoError(t, c.VerifyMatch(ns, a, sa))
		require.NoError(t, c.VerifyMatch(ns, b, sb))
		return c, kv, sa, sb
	}
	forEachEngine(t, func(t *testing.T, newEngine engineCtor) {
		t.Run("same token, other position", func(t *testing.T) {
			c, kv, sa, _ := setup(t, newEngine)
			var r2, r4 [CanaryBytes]byte
			require.NoError(t, kv.Read(sa[2], r2[:]))
			require.NoError(t, kv.Read(sa[4], r4[:]))
			require.NoError(t, kv.Write(sa[2], r4[:]))
			require.NoError(t, kv.Write(sa[4], r2[:]))
			_, err := c.Arrive(ns, a)
			require.ErrorIs(t, err, ErrCanaryMismatch)
			require.Contains(t, err.Error(), "position 2 ")
			require.EqualValues(t, 2, c.Stats().CanaryMismatches, "both swapped slots")
			require.NoError(t, c.Audit(), "a rejected arrival holds nothing")
		})
		t.Run("same position, other prefix", func(t *testing.T) {
			c, kv, sa, sb := setup(t, newEngine)
			var rb [CanaryBytes]byte
			require.NoError(t, kv.Read(sb[3], rb[:]))
			require.NoError(t, kv.Write(sa[3], rb[:]))
			_, err := c.Arrive(ns, a)
			require.ErrorIs(t, err, ErrCanaryMismatch)
			require.Contains(t, err.Error(), "position 3 ")
			require.EqualValues(t, 1, c.Stats().CanaryMismatches)
			require.NoError(t, c.VerifyMatch(ns, b, sb), "b is intact")
		})
	})
}
