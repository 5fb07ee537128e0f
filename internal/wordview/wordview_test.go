package wordview

import (
	"encoding/binary"
	"testing"
)

// TestCopier checks the copier against encoding/binary's little-endian
// words.
func TestCopier(t *testing.T) {
	if !LittleEndian() {
		t.Skip("views are for little-endian machines")
	}
	u := []uint32{0, 1, 0xdeadbeef, 1 << 31}
	i := []int32{-1, 0, 1 << 30, -1 << 31}
	ub, ib := make([]byte, 16), make([]byte, 16)
	Copier{}.PutU32(ub, u)
	Copier{}.PutI32(ib, i)
	for k := range 4 {
		if binary.LittleEndian.Uint32(ub[4*k:]) != u[k] || int32(binary.LittleEndian.Uint32(ib[4*k:])) != i[k] {
			t.Fatalf("word %d encoded wrongly: % x / % x", k, ub, ib)
		}
	}
	u2, i2 := make([]uint32, 4), make([]int32, 4)
	Copier{}.GetU32(u2, ub)
	Copier{}.GetI32(i2, ib)
	for k := range 4 {
		if u2[k] != u[k] || i2[k] != i[k] {
			t.Fatalf("word %d decoded wrongly: %v / %v", k, u2, i2)
		}
	}
}
