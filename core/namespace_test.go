package core

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNamespace_Memo: the memo of the namespace found last never answers
// for another one, interned or not.
func TestNamespace_Memo(t *testing.T) {
	tr := apiTree(t, Config{PageSize: 1})
	a, b := Namespace{CacheSalt: "a"}, Namespace{CacheSalt: "a", LoRA: "x"}
	ia, ib := tr.nsIntern(&a), tr.nsIntern(&b)
	require.Equal(t, []uint32{1, 2}, []uint32{ia, ib})
	for _, c := range []struct {
		ns Namespace
		id uint32
		ok bool
	}{{a, 1, true}, {a, 1, true}, {b, 2, true}, {Namespace{CacheSalt: "b"}, 0, false}, {b, 2, true}, {Namespace{}, 0, true}, {a, 1, true}} {
		id, ok := tr.nsLookup(&c.ns)
		require.Equal(t, c.ok, ok, "%+v", c.ns)
		require.Equal(t, c.id, id, "%+v", c.ns)
	}
	require.Equal(t, uint32(1), tr.nsIntern(&a))
	require.True(t, Namespace{}.IsDefault())
	require.False(t, Namespace{ExtraKey: "k"}.IsDefault())
	require.False(t, b.IsDefault())
}
