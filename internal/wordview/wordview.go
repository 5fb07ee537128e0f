package wordview

import (
	"encoding/binary"
	"unsafe"
)

// LittleEndian reports whether this machine stores words little-endian,
// the only order the views here are correct for.
func LittleEndian() bool { return binary.NativeEndian.Uint16([]byte{1, 0}) == 1 }

// Bytes views v's memory as its 4*len(v) bytes.
func Bytes[T uint32 | int32](v []T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), 4*len(v))
}

// Copier is an abi.WordCopier that copies memory: on a little-endian
// machine a word slice's bytes are its wire encoding.
type Copier struct{}

func (Copier) GetU32(dst []uint32, b []byte) { copy(Bytes(dst), b) }
func (Copier) GetI32(dst []int32, b []byte)  { copy(Bytes(dst), b) }
func (Copier) PutU32(out []byte, v []uint32) { copy(out, Bytes(v)) }
func (Copier) PutI32(out []byte, v []int32)  { copy(out, Bytes(v)) }

// Viewer is an abi.WordViewer: on a little-endian machine the wire bytes
// of a word array are its memory, so a 4-byte-aligned array is read in
// place. It refuses (and the codec copies) misaligned bytes, whose view
// would be a misaligned word pointer, and any array on a big-endian
// machine.
type Viewer struct{}

func (Viewer) ViewI32(b []byte) ([]int32, bool)  { return view[int32](b) }
func (Viewer) ViewU32(b []byte) ([]uint32, bool) { return view[uint32](b) }

// little is LittleEndian, fixed at start (a variable so that tests can
// take the big-endian path).
var little = LittleEndian()

func view[T uint32 | int32](b []byte) ([]T, bool) {
	if !little || len(b)%4 != 0 {
		return nil, false
	}
	if len(b) == 0 {
		return nil, true
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	if uintptr(p)%4 != 0 {
		return nil, false
	}
	return unsafe.Slice((*T)(p), len(b)/4), true
}
