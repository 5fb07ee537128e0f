package abi

import (
	"encoding/binary"
	"strings"
	"unicode/utf8"

	"github.com/radixkv/radixkv/core"
)

// le is the byte order of every multi-byte field.
var le = binary.LittleEndian

// reader decodes fields from a message body. The first failure sticks:
// later reads return zero values and err keeps the first error.
type reader struct {
	b   []byte
	off int
	err *Error
	s   *Scratch // reusable decode buffers, or nil
	// view reads a request's bulk arrays in place
	// (DecodeRequestViewing), or is nil.
	view WordViewer
}

func (r *reader) fail(c Code, format string, args ...any) {
	if r.err == nil {
		r.err = errorf(c, format, args...)
	}
}

// take returns the next n bytes, or nil after recording a truncation.
func (r *reader) take(field string, n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || len(r.b)-r.off < n {
		r.fail(CodeTruncated, "%s: need %d bytes at offset %d, have %d", field, n, r.off, len(r.b)-r.off)
		return nil
	}
	s := r.b[r.off : r.off+n : r.off+n]
	r.off += n
	return s
}

// The fixed-size reads check the common case (no error yet, the bytes
// there) inline and leave the failure to take: a call is several times
// dearer in the WebAssembly build than the read itself, and a request
// is mostly such reads.

func (r *reader) u8(field string) uint8 {
	if r.err == nil && r.off < len(r.b) {
		v := r.b[r.off]
		r.off++
		return v
	}
	r.take(field, 1)
	return 0
}

func (r *reader) u16(field string) uint16 {
	if r.err == nil && len(r.b)-r.off >= 2 {
		v := le.Uint16(r.b[r.off:])
		r.off += 2
		return v
	}
	r.take(field, 2)
	return 0
}

func (r *reader) u32(field string) uint32 {
	if r.err == nil && len(r.b)-r.off >= 4 {
		v := le.Uint32(r.b[r.off:])
		r.off += 4
		return v
	}
	r.take(field, 4)
	return 0
}

func (r *reader) u64(field string) uint64 {
	if r.err == nil && len(r.b)-r.off >= 8 {
		v := le.Uint64(r.b[r.off:])
		r.off += 8
		return v
	}
	r.take(field, 8)
	return 0
}

func (r *reader) i32(field string) int32 { return int32(r.u32(field)) }
func (r *reader) i64(field string) int64 { return int64(r.u64(field)) }

func (r *reader) boolean(field string) bool {
	switch v := r.u8(field); v {
	case 0:
		return false
	case 1:
		return true
	default:
		r.fail(CodeMalformed, "%s: boolean byte %d is neither 0 nor 1", field, v)
		return false
	}
}

func (r *reader) str(field string) string {
	n := r.count(field, 1)
	s := r.take(field, n)
	if len(s) == 0 {
		return ""
	}
	return string(s)
}

// strLike is str returning prev when the bytes equal it (no allocation).
func (r *reader) strLike(field, prev string) string {
	n := r.count(field, 1)
	s := r.take(field, n)
	if len(s) == 0 {
		return ""
	}
	if string(s) == prev {
		return prev
	}
	return string(s)
}

// count reads a u32 element count and checks that count elements of size
// bytes fit in what is left, so no decoder allocates more than the
// message could hold.
func (r *reader) count(field string, size int) int {
	if r.err != nil {
		return 0
	}
	if len(r.b)-r.off < 4 {
		r.fail(CodeTruncated, "%s count: need 4 bytes at offset %d, have %d", field, r.off, len(r.b)-r.off)
		return 0
	}
	n := le.Uint32(r.b[r.off:])
	r.off += 4
	if uint64(n)*uint64(size) > uint64(len(r.b)-r.off) {
		r.fail(CodeTruncated, "%s: %d elements of %d bytes at offset %d, only %d bytes left", field, n, size, r.off, len(r.b)-r.off)
		return 0
	}
	return int(n)
}

// peekCount returns the u32 count at the read position without
// consuming it (0 when there is none).
func (r *reader) peekCount() uint64 {
	if r.err != nil || len(r.b)-r.off < 4 {
		return 0
	}
	return uint64(le.Uint32(r.b[r.off:]))
}

// u32s decodes a u32 array into dst[:0], growing it only when needed.
func (r *reader) u32s(field string, dst []uint32) []uint32 { return readWords(r, field, dst) }

// i32s decodes an i32 array into dst[:0], growing it only when needed.
func (r *reader) i32s(field string, dst []int32) []int32 { return readWords(r, field, dst) }

// readWords decodes a 32-bit word array into dst[:0]; an empty array
// decodes to nil.
func readWords[T uint32 | int32](r *reader, field string, dst []T) []T {
	var n int
	var b []byte
	if k := len(r.b) - r.off - 4; r.err == nil && k >= 0 && uint64(le.Uint32(r.b[r.off:]))*4 <= uint64(k) {
		// The count and the words are there: take both in place (count
		// and take would say nothing else, at two calls' cost).
		n = int(le.Uint32(r.b[r.off:]))
		b = r.b[r.off+4 : r.off+4+4*n]
		r.off += 4 + 4*n
	} else {
		n = r.count(field, 4)
		b = r.take(field, 4*n)
	}
	if n == 0 {
		return nil
	}
	if cap(dst) < n {
		// Grow geometrically: a host's requests grow a few tokens at a
		// time, and an exact fit would be reallocated for each.
		dst = make([]T, n, max(n, 2*cap(dst)))
	}
	dst = dst[:n]
	if len(b) == 4*n {
		getWords(dst, b)
	}
	return dst
}

// WordCopier moves 32-bit word arrays (tokens, slots, indices: the bulk
// of every message) between Go slices and their little-endian wire bytes.
// Each method is given exactly 4*len(words) bytes and must leave the same
// values or bytes the portable word-by-word loops would. The portable
// loops cost about 2 ns a word in the WebAssembly build, where a bulk
// memory copy costs a few hundredths of that; a guest whose memory is
// little-endian and that may view a slice's memory as bytes (the module,
// package wasm) installs a copier that copies instead.
type WordCopier interface {
	GetU32(dst []uint32, b []byte)
	GetI32(dst []int32, b []byte)
	PutU32(out []byte, v []uint32)
	PutI32(out []byte, v []int32)
}

// wordCopier is the installed WordCopier, or nil for the portable loops.
var wordCopier WordCopier

// SetWordCopier installs c for every later encode and decode in the
// process; nil restores the portable loops. Install it once, before the
// codec is in use: the codec does not synchronise with this call.
func SetWordCopier(c WordCopier) { wordCopier = c }

// getWords decodes len(dst) little-endian 32-bit words from b (which holds
// exactly that many). Token and slot arrays are the bulk of every message,
// so the loop takes thirty-two words per step through sixteen 64-bit
// loads into array views of both slices, and advances the slices instead
// of indexing them: the bounds of a step are then proven by its loop
// condition, which matters most to the WebAssembly build, where each
// remaining check is a compare and a branch. The compiler merges each
// pair of 32-bit stores into one 64-bit store, so a step is sixteen
// load-store pairs and the loop's own bookkeeping (a dozen instructions)
// is spread over 32 words (measured in the guest: eight words per step
// ran 3x faster than four words per indexed step). The loads are spelled
// out byte by byte, which the compiler merges into one 64-bit load: an
// inlined binary.LittleEndian call would leave a marker instruction (a
// NOP) per load in the loop.
func getWords[T uint32 | int32](dst []T, b []byte) {
	b = b[:4*len(dst)]
	if c := wordCopier; c != nil {
		switch d := any(dst).(type) {
		case []uint32:
			c.GetU32(d, b)
			return
		case []int32:
			c.GetI32(d, b)
			return
		}
	}
	for len(b) >= 128 && len(dst) >= 32 {
		p, d := (*[128]byte)(b), (*[32]T)(dst)
		x0 := uint64(p[0]) | uint64(p[1])<<8 | uint64(p[2])<<16 | uint64(p[3])<<24 |
			uint64(p[4])<<32 | uint64(p[5])<<40 | uint64(p[6])<<48 | uint64(p[7])<<56
		d[0], d[1] = T(uint32(x0)), T(uint32(x0>>32))
		x1 := uint64(p[8]) | uint64(p[9])<<8 | uint64(p[10])<<16 | uint64(p[11])<<24 |
			uint64(p[12])<<32 | uint64(p[13])<<40 | uint64(p[14])<<48 | uint64(p[15])<<56
		d[2], d[3] = T(uint32(x1)), T(uint32(x1>>32))
		x2 := uint64(p[16]) | uint64(p[17])<<8 | uint64(p[18])<<16 | uint64(p[19])<<24 |
			uint64(p[20])<<32 | uint64(p[21])<<40 | uint64(p[22])<<48 | uint64(p[23])<<56
		d[4], d[5] = T(uint32(x2)), T(uint32(x2>>32))
		x3 := uint64(p[24]) | uint64(p[25])<<8 | uint64(p[26])<<16 | uint64(p[27])<<24 |
			uint64(p[28])<<32 | uint64(p[29])<<40 | uint64(p[30])<<48 | uint64(p[31])<<56
		d[6], d[7] = T(uint32(x3)), T(uint32(x3>>32))
		x4 := uint64(p[32]) | uint64(p[33])<<8 | uint64(p[34])<<16 | uint64(p[35])<<24 |
			uint64(p[36])<<32 | uint64(p[37])<<40 | uint64(p[38])<<48 | uint64(p[39])<<56
		d[8], d[9] = T(uint32(x4)), T(uint32(x4>>32))
		x5 := uint64(p[40]) | uint64(p[41])<<8 | uint64(p[42])<<16 | uint64(p[43])<<24 |
			uint64(p[44])<<32 | uint64(p[45])<<40 | uint64(p[46])<<48 | uint64(p[47])<<56
		d[10], d[11] = T(uint32(x5)), T(uint32(x5>>32))
		x6 := uint64(p[48]) | uint64(p[49])<<8 | uint64(p[50])<<16 | uint64(p[51])<<24 |
			uint64(p[52])<<32 | uint64(p[53])<<40 | uint64(p[54])<<48 | uint64(p[55])<<56
		d[12], d[13] = T(uint32(x6)), T(uint32(x6>>32))
		x7 := uint64(p[56]) | uint64(p[57])<<8 | uint64(p[58])<<16 | uint64(p[59])<<24 |
			uint64(p[60])<<32 | uint64(p[61])<<40 | uint64(p[62])<<48 | uint64(p[63])<<56
		d[14], d[15] = T(uint32(x7)), T(uint32(x7>>32))
		x8 := uint64(p[64]) | uint64(p[65])<<8 | uint64(p[66])<<16 | uint64(p[67])<<24 |
			uint64(p[68])<<32 | uint64(p[69])<<40 | uint64(p[70])<<48 | uint64(p[71])<<56
		d[16], d[17] = T(uint32(x8)), T(uint32(x8>>32))
		x9 := uint64(p[72]) | uint64(p[73])<<8 | uint64(p[74])<<16 | uint64(p[75])<<24 |
			uint64(p[76])<<32 | uint64(p[77])<<40 | uint64(p[78])<<48 | uint64(p[79])<<56
		d[18], d[19] = T(uint32(x9)), T(uint32(x9>>32))
		x10 := uint64(p[80]) | uint64(p[81])<<8 | uint64(p[82])<<16 | uint64(p[83])<<24 |
			uint64(p[84])<<32 | uint64(p[85])<<40 | uint64(p[86])<<48 | uint64(p[87])<<56
		d[20], d[21] = T(uint32(x10)), T(uint32(x10>>32))
		x11 := uint64(p[88]) | uint64(p[89])<<8 | uint64(p[90])<<16 | uint64(p[91])<<24 |
			uint64(p[92])<<32 | uint64(p[93])<<40 | uint64(p[94])<<48 | uint64(p[95])<<56
		d[22], d[23] = T(uint32(x11)), T(uint32(x11>>32))
		x12 := uint64(p[96]) | uint64(p[97])<<8 | uint64(p[98])<<16 | uint64(p[99])<<24 |
			uint64(p[100])<<32 | uint64(p[101])<<40 | uint64(p[102])<<48 | uint64(p[103])<<56
		d[24], d[25] = T(uint32(x12)), T(uint32(x12>>32))
		x13 := uint64(p[104]) | uint64(p[105])<<8 | uint64(p[106])<<16 | uint64(p[107])<<24 |
			uint64(p[108])<<32 | uint64(p[109])<<40 | uint64(p[110])<<48 | uint64(p[111])<<56
		d[26], d[27] = T(uint32(x13)), T(uint32(x13>>32))
		x14 := uint64(p[112]) | uint64(p[113])<<8 | uint64(p[114])<<16 | uint64(p[115])<<24 |
			uint64(p[116])<<32 | uint64(p[117])<<40 | uint64(p[118])<<48 | uint64(p[119])<<56
		d[28], d[29] = T(uint32(x14)), T(uint32(x14>>32))
		x15 := uint64(p[120]) | uint64(p[121])<<8 | uint64(p[122])<<16 | uint64(p[123])<<24 |
			uint64(p[124])<<32 | uint64(p[125])<<40 | uint64(p[126])<<48 | uint64(p[127])<<56
		d[30], d[31] = T(uint32(x15)), T(uint32(x15>>32))
		b, dst = b[128:], dst[32:]
	}
	for i := range dst {
		dst[i] = T(le.Uint32(b[4*i:]))
	}
}

// putWords encodes v as little-endian 32-bit words into out (exactly
// 4*len(v) bytes), thirty-two words per step as getWords.
func putWords[T uint32 | int32](out []byte, v []T) {
	out = out[:4*len(v)]
	if c := wordCopier; c != nil {
		switch w := any(v).(type) {
		case []uint32:
			c.PutU32(out, w)
			return
		case []int32:
			c.PutI32(out, w)
			return
		}
	}
	for len(out) >= 128 && len(v) >= 32 {
		p, w := (*[128]byte)(out), (*[32]T)(v)
		le.PutUint64(p[0:8], uint64(uint32(w[0]))|uint64(uint32(w[1]))<<32)
		le.PutUint64(p[8:16], uint64(uint32(w[2]))|uint64(uint32(w[3]))<<32)
		le.PutUint64(p[16:24], uint64(uint32(w[4]))|uint64(uint32(w[5]))<<32)
		le.PutUint64(p[24:32], uint64(uint32(w[6]))|uint64(uint32(w[7]))<<32)
		le.PutUint64(p[32:40], uint64(uint32(w[8]))|uint64(uint32(w[9]))<<32)
		le.PutUint64(p[40:48], uint64(uint32(w[10]))|uint64(uint32(w[11]))<<32)
		le.PutUint64(p[48:56], uint64(uint32(w[12]))|uint64(uint32(w[13]))<<32)
		le.PutUint64(p[56:64], uint64(uint32(w[14]))|uint64(uint32(w[15]))<<32)
		le.PutUint64(p[64:72], uint64(uint32(w[16]))|uint64(uint32(w[17]))<<32)
		le.PutUint64(p[72:80], uint64(uint32(w[18]))|uint64(uint32(w[19]))<<32)
		le.PutUint64(p[80:88], uint64(uint32(w[20]))|uint64(uint32(w[21]))<<32)
		le.PutUint64(p[88:96], uint64(uint32(w[22]))|uint64(uint32(w[23]))<<32)
		le.PutUint64(p[96:104], uint64(uint32(w[24]))|uint64(uint32(w[25]))<<32)
		le.PutUint64(p[104:112], uint64(uint32(w[26]))|uint64(uint32(w[27]))<<32)
		le.PutUint64(p[112:120], uint64(uint32(w[28]))|uint64(uint32(w[29]))<<32)
		le.PutUint64(p[120:128], uint64(uint32(w[30]))|uint64(uint32(w[31]))<<32)
		out, v = out[128:], v[32:]
	}
	for i, x := range v {
		le.PutUint32(out[4*i:], uint32(x))
	}
}

// ids decodes a u64 node-id array into dst[:0].
func (r *reader) ids(field string, dst []core.NodeID) []core.NodeID {
	n := r.count(field, 8)
	b := r.take(field, 8*n)
	if n == 0 {
		return nil
	}
	if cap(dst) < n {
		dst = make([]core.NodeID, n)
	}
	dst = dst[:n]
	for i := range dst {
		dst[i] = core.NodeID(le.Uint64(b[8*i:]))
	}
	return dst
}

// end reports trailing bytes as malformed.
func (r *reader) end() {
	if r.err == nil && r.off != len(r.b) {
		r.fail(CodeMalformed, "%d trailing bytes after the body", len(r.b)-r.off)
	}
}

// Append helpers: each appends one field in wire form.

func putU8(b []byte, v uint8) []byte   { return append(b, v) }
func putU16(b []byte, v uint16) []byte { return le.AppendUint16(b, v) }
func putU32(b []byte, v uint32) []byte { return le.AppendUint32(b, v) }
func putU64(b []byte, v uint64) []byte { return le.AppendUint64(b, v) }
func putI32(b []byte, v int32) []byte  { return le.AppendUint32(b, uint32(v)) }
func putI64(b []byte, v int64) []byte  { return le.AppendUint64(b, uint64(v)) }

func putBool(b []byte, v bool) []byte { return append(b, boolByte(v)) }

// boolByte is v's wire byte.
func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

func putStr(b []byte, s string) []byte {
	b = putU32(b, uint32(len(s)))
	return append(b, s...)
}

// putText appends s as a string, replacing invalid UTF-8 (messages and
// renderings are promised to be valid UTF-8).
func putText(b []byte, s string) []byte {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return putStr(b, s)
}

// extend lengthens b by n bytes (growing it in one step when needed) and
// returns the lengthened slice and the new n-byte tail to fill.
func extend(b []byte, n int) ([]byte, []byte) {
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), 2*cap(b)+n)
		copy(nb, b)
		b = nb
	}
	k := len(b)
	b = b[:k+n]
	return b, b[k:]
}

func putU32s(b []byte, v []uint32) []byte {
	b = putU32(b, uint32(len(v)))
	b, out := extend(b, 4*len(v))
	putWords(out, v)
	return b
}

func putI32s(b []byte, v []int32) []byte {
	b = putU32(b, uint32(len(v)))
	b, out := extend(b, 4*len(v))
	putWords(out, v)
	return b
}

// tagID converts a core node id to its wire form (and back: XOR).
func tagID(id core.NodeID, tag uint32) core.NodeID {
	if id == 0 {
		return 0
	}
	return id ^ core.NodeID(uint64(tag)<<32)
}

// TagID converts a node id between core form and wire form for an
// instance whose tag is tag. It is its own inverse and keeps 0 as 0.
func TagID(id core.NodeID, tag uint32) core.NodeID { return tagID(id, tag) }

func putID(b []byte, id core.NodeID, tag uint32) []byte {
	return putU64(b, uint64(tagID(id, tag)))
}

func putIDs(b []byte, ids []core.NodeID, tag uint32) []byte {
	b = putU32(b, uint32(len(ids)))
	b, out := extend(b, 8*len(ids))
	for _, id := range ids {
		le.PutUint64(out, uint64(tagID(id, tag)))
		out = out[8:]
	}
	return b
}

// putOptI32s appends a slot array that may be absent: a bool that tells
// whether it is present, then the array (empty when absent). It keeps
// the difference between an absent array and an empty one, which core
// checks for a backup's Full slots.
func putOptI32s(b []byte, v []int32) []byte {
	b = putBool(b, v != nil)
	return putI32s(b, v)
}

// optI32s decodes what putOptI32s encodes: nil when absent, a non-nil
// (possibly empty) slice when present.
func (r *reader) optI32s(field string) []int32 {
	present := r.boolean(field + "_present")
	v := r.i32s(field, nil)
	if present && v == nil && r.err == nil {
		return []int32{}
	}
	if !present {
		if len(v) != 0 && r.err == nil {
			r.fail(CodeMalformed, "%s: %d slots after present = 0", field, len(v))
		}
		return nil
	}
	return v
}

// putOptIDs is putOptI32s for a node-id list.
func putOptIDs(b []byte, ids []core.NodeID, tag uint32) []byte {
	b = putBool(b, ids != nil)
	return putIDs(b, ids, tag)
}

// optIDs decodes what putOptIDs encodes.
func (r *reader) optIDs(field string) []core.NodeID {
	present := r.boolean(field + "_present")
	v := r.ids(field, nil)
	if present && v == nil && r.err == nil {
		return []core.NodeID{}
	}
	if !present {
		if len(v) != 0 && r.err == nil {
			r.fail(CodeMalformed, "%s: %d ids after present = 0", field, len(v))
		}
		return nil
	}
	return v
}

// putSlotLists appends a list of slot arrays: a u32 count, then each
// array.
func putSlotLists(b []byte, v [][]int32) []byte {
	b = putU32(b, uint32(len(v)))
	for _, s := range v {
		b = putI32s(b, s)
	}
	return b
}

// slotLists decodes what putSlotLists encodes (nil when empty; empty
// arrays decode as nil).
func (r *reader) slotLists(field string) [][]int32 {
	n := r.count(field, 4)
	if n == 0 {
		return nil
	}
	out := make([][]int32, 0, n)
	for range n {
		out = append(out, r.i32s(field, nil))
	}
	if r.err != nil {
		return nil
	}
	return out
}

// putNodeSlots appends a list of (node, slots) pairs: a u32 count, then
// per entry an id and a slot array.
func putNodeSlots(b []byte, v []core.NodeSlots, tag uint32) []byte {
	b = putU32(b, uint32(len(v)))
	for _, e := range v {
		b = putID(b, e.Node, tag)
		b = putI32s(b, e.Slots)
	}
	return b
}

// nodeSlots decodes what putNodeSlots encodes (nil when empty).
func (r *reader) nodeSlots(field string) []core.NodeSlots {
	n := r.count(field, 12)
	if n == 0 {
		return nil
	}
	out := make([]core.NodeSlots, 0, n)
	for range n {
		id := core.NodeID(r.u64(field + ".node"))
		out = append(out, core.NodeSlots{Node: id, Slots: r.i32s(field+".slots", nil)})
	}
	if r.err != nil {
		return nil
	}
	return out
}

// putStrs appends a string array: a u32 count, then each string.
func putStrs(b []byte, v []string) []byte {
	b = putU32(b, uint32(len(v)))
	for _, s := range v {
		b = putStr(b, s)
	}
	return b
}

// strs decodes what putStrs encodes (nil when empty).
func (r *reader) strs(field string) []string {
	n := r.count(field, 4)
	if n == 0 {
		return nil
	}
	out := make([]string, 0, n)
	for range n {
		out = append(out, r.str(field))
	}
	if r.err != nil {
		return nil
	}
	return out
}
