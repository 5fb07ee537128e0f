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
