package wordview

import (
	"encoding/binary"
	"testing"
	"unsafe"
)

// TestViewer checks that a view gives encoding/binary's little-endian
// words over the very bytes, at every alignment and length to 9 words,
// and that misaligned bytes, ragged lengths and a big-endian machine are
// refused.
func TestViewer(t *testing.T) {
	if !LittleEndian() {
		t.Skip("views are for little-endian machines")
	}
	buf := make([]byte, 64) // 8-byte aligned
	for i := range buf {
		buf[i] = byte(i*37 + 1)
	}
	for off := range 8 {
		for n := range 10 {
			b := buf[off : off+4*n]
			vi, oki := Viewer{}.ViewI32(b)
			vu, oku := Viewer{}.ViewU32(b)
			aligned := (uintptr(unsafe.Pointer(&buf[0]))+uintptr(off))%4 == 0
			if n == 0 {
				if !oki || !oku || vi != nil || vu != nil {
					t.Fatalf("off %d: empty bytes: %v %v %v %v", off, vi, oki, vu, oku)
				}
				continue
			}
			if oki != aligned || oku != aligned {
				t.Fatalf("off %d n %d: ok %v/%v, aligned %v", off, n, oki, oku, aligned)
			}
			if !aligned {
				continue
			}
			if len(vi) != n || cap(vi) != n || len(vu) != n || cap(vu) != n {
				t.Fatalf("off %d n %d: lengths %d/%d caps %d/%d", off, n, len(vi), len(vu), cap(vi), cap(vu))
			}
			for k := range n {
				w := binary.LittleEndian.Uint32(b[4*k:])
				if vu[k] != w || vi[k] != int32(w) {
					t.Fatalf("off %d n %d word %d: %#x/%#x, want %#x", off, n, k, vu[k], vi[k], w)
				}
			}
			if unsafe.Pointer(&vi[0]) != unsafe.Pointer(&b[0]) {
				t.Fatalf("off %d n %d: not a view of the bytes", off, n)
			}
		}
	}
	if _, ok := (Viewer{}).ViewI32(buf[:6]); ok {
		t.Fatal("6 bytes viewed as words")
	}
	little = false
	defer func() { little = true }()
	if _, ok := (Viewer{}).ViewI32(buf[:8]); ok {
		t.Fatal("viewed on a big-endian machine")
	}
	if _, ok := (Viewer{}).ViewU32(buf[:8]); ok {
		t.Fatal("viewed on a big-endian machine")
	}
}
