package native

import (
	"testing"

	"github.com/radixkv/radixkv/abi/dispatch"
	"github.com/radixkv/radixkv/core"
	"github.com/stretchr/testify/require"
)

// engineCtor builds an engine of one kind.
type engineCtor func(core.Config) (Engine, error)

// engineKinds lists every engine; controller tests run on each.
var engineKinds = []struct {
	name string
	new  engineCtor
}{
	{"direct", NewDirectEngine},
	{"inprocess", NewInProcessEngine},
	{"wasm", NewWasmEngine},
}

// forEachEngine runs fn as a subtest per engine kind.
func forEachEngine(t *testing.T, fn func(t *testing.T, newEngine engineCtor)) {
	t.Helper()
	for _, k := range engineKinds {
		t.Run(k.name, func(t *testing.T) { fn(t, k.new) })
	}
}

func newEngine(t testing.TB, ctor engineCtor, cfg core.Config) Engine {
	t.Helper()
	e, err := ctor(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// coreID returns id in the core form the tree itself uses (what Render
// and the core transcripts print): the identity for the direct engine;
// for a wire engine it removes the engine's mask and the guest's
// per-instance tag (the Go guest's private scheme, known to tests only).
func coreID(e Engine, id core.NodeID) core.NodeID {
	w, ok := e.(*wireEngine)
	if !ok || id == 0 {
		return id
	}
	return id ^ core.NodeID(w.mask) ^ core.NodeID(uint64(dispatch.Tag(w.handle))<<32)
}

// engineID is coreID's inverse.
func engineID(e Engine, id core.NodeID) core.NodeID { return coreID(e, id) }
