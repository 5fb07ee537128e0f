package core

import "testing"

// The victim scan reuses the tree's buffers: once they have grown, a scan
// allocates nothing.
func TestMarconi_VictimScanAllocatesNothing(t *testing.T) {
	tree, err := New(Config{PageSize: 1, Components: []Component{Full, Mamba}, MambaPolicy: "marconi", MambaAlpha: 1})
	if err != nil {
		t.Fatal(err)
	}
	for k := range 32 {
		toks := []uint32{1, 2, uint32(100 + k), uint32(200 + k)}
		slots := []int32{int32(4 * k), int32(4*k + 1), int32(4*k + 2), int32(4*k + 3)}
		if _, _, err := tree.Insert(InsertParams{Tokens: toks, Slots: slots, MambaSlot: int32(k)}); err != nil {
			t.Fatal(err)
		}
	}
	if tree.marconiVictim() == nilIdx {
		t.Fatal("no victim among 32 states")
	}
	if n := testing.AllocsPerRun(50, func() { tree.marconiVictim() }); n != 0 {
		t.Fatalf("a victim scan allocated %v times", n)
	}
}
