package native

import (
	"encoding/binary"
	"unsafe"

	"github.com/radixkv/radixkv/abi"
)

// On a little-endian machine a word slice's memory is its wire encoding,
// so the host side of every wire engine (requests encoded, responses
// decoded: mostly token, slot and index arrays) copies word arrays as
// memory instead of converting them one at a time. The bytes are the
// portable codec's exactly (abi.TestSetWordCopier); big-endian hosts keep
// the portable loops.
func init() {
	if binary.NativeEndian.Uint16([]byte{1, 0}) == 1 {
		abi.SetWordCopier(memWords{})
	}
}

// memWords is an abi.WordCopier that copies memory.
type memWords struct{}

func (memWords) GetU32(dst []uint32, b []byte) { copy(wordBytes(dst), b) }
func (memWords) GetI32(dst []int32, b []byte)  { copy(wordBytes(dst), b) }
func (memWords) PutU32(out []byte, v []uint32) { copy(out, wordBytes(v)) }
func (memWords) PutI32(out []byte, v []int32)  { copy(out, wordBytes(v)) }

// wordBytes views v's memory as bytes.
func wordBytes[T uint32 | int32](v []T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), 4*len(v))
}
