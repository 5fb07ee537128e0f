package wordview_test

import (
	"testing"
	"unsafe"

	"github.com/radixkv/radixkv/abi"
	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/internal/wordview"
)

// TestViewerDecode decodes an eviction response at every offset of a
// buffer with the viewer: the values are those of a plain decode, the
// slot lists of an aligned response are views of its bytes, and those of
// a misaligned one are copies.
func TestViewerDecode(t *testing.T) {
	if !wordview.LittleEndian() {
		t.Skip("views are for little-endian machines")
	}
	slots := make([]int32, 300)
	for i := range slots {
		slots[i] = int32(i*7 - 5)
	}
	resp := abi.Response{Op: abi.OpEvict, Freed: 300, Actions: []core.Action{
		{Kind: core.ActionFreeDeviceKV, Node: 3, Nodes: []core.NodeID{1, 2}, Slots: slots[:100]},
		{Kind: core.ActionRecoverSWAWithLockedFull, Slots: slots[100:103], Incoming: slots[103:106]},
		{Kind: core.ActionMambaEvictExcessPathStates, Node: 6},
		{Kind: core.ActionFreeDeviceSlots, Slots: slots[106:]},
	}}
	wire := abi.AppendResponse(nil, &resp)
	var want abi.Response
	if err := abi.DecodeResponse(&want, wire); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, len(wire)+8)
	var s abi.Scratch
	s.SetWordViewer(wordview.Viewer{})
	for off := range 8 {
		b := buf[off : off+len(wire)]
		copy(b, wire)
		var got abi.Response
		if err := abi.DecodeResponseWith(&got, b, &s); err != nil {
			t.Fatalf("off %d: %v", off, err)
		}
		if len(got.Actions) != len(want.Actions) || got.Freed != want.Freed {
			t.Fatalf("off %d: %+v", off, got)
		}
		lo, hi := uintptr(unsafe.Pointer(&b[0])), uintptr(unsafe.Pointer(&b[0]))+uintptr(len(b))
		aligned := lo%4 == 0
		for k, a := range got.Actions {
			w := want.Actions[k]
			if a.Kind != w.Kind || a.Node != w.Node || !equal(a.Slots, w.Slots) || !equal(a.Incoming, w.Incoming) || len(a.Nodes) != len(w.Nodes) {
				t.Fatalf("off %d action %d: %+v, want %+v", off, k, a, w)
			}
			for _, v := range [][]int32{a.Slots, a.Incoming} {
				if len(v) == 0 {
					continue
				}
				p := uintptr(unsafe.Pointer(&v[0]))
				if in := p >= lo && p < hi; in != aligned {
					t.Fatalf("off %d action %d: a view %v, aligned %v", off, k, in, aligned)
				}
				if cap(v) != len(v) {
					t.Fatalf("off %d action %d: capacity %d past the %d slots", off, k, cap(v), len(v))
				}
			}
		}
	}
}

func equal(a, b []int32) bool {
	if len(a) != len(b) || (a == nil) != (b == nil) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
