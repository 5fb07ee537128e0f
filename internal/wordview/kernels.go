package wordview

import "unsafe"

// Kernels is a core.WordKernels that reads word slices as 64-bit words:
// in the WebAssembly build each load costs a bounds check and each loop
// step a dispatch, so halving the loads halves the loops (15k slots
// checked in ~4 µs against ~10 µs through core's 32-bit array views,
// under wazero). It views only 8-byte-aligned memory, so the conversions
// stay valid for the checkptr instrumentation of -race builds.
type Kernels struct{}

// Words64 views the words of v from its first 8-byte-aligned one as
// 64-bit words: head is the number of words before (0 or 1), mid the
// 64-bit words after it (an odd last word is left out). Only aligned
// memory is viewed, so the conversion is valid for checkptr (-race).
func Words64[T uint32 | int32](v []T) (head int, mid []uint64) {
	if len(v) == 0 {
		return 0, nil
	}
	if uintptr(unsafe.Pointer(unsafe.SliceData(v)))%8 != 0 {
		head = 1
	}
	n := (len(v) - head) / 2
	if n == 0 {
		return head, nil
	}
	return head, unsafe.Slice((*uint64)(unsafe.Pointer(&v[head])), n)
}

// AnyNegative reports whether any of s is negative: the sign bits of
// both halves of the OR of all 64-bit words.
func (Kernels) AnyNegative(s []int32) bool {
	head, u := Words64(s)
	var or uint64
	for len(u) >= 32 {
		x := (*[32]uint64)(u)
		or |= x[0] | x[1] | x[2] | x[3] | x[4] | x[5] | x[6] | x[7] |
			x[8] | x[9] | x[10] | x[11] | x[12] | x[13] | x[14] | x[15] |
			x[16] | x[17] | x[18] | x[19] | x[20] | x[21] | x[22] | x[23] |
			x[24] | x[25] | x[26] | x[27] | x[28] | x[29] | x[30] | x[31]
		u = u[32:]
	}
	for len(u) >= 8 {
		x := (*[8]uint64)(u)
		or |= x[0] | x[1] | x[2] | x[3] | x[4] | x[5] | x[6] | x[7]
		u = u[8:]
	}
	for _, x := range u {
		or |= x
	}
	if or&0x8000_0000_8000_0000 != 0 {
		return true
	}
	// The words outside the view: the unaligned head, the odd tail.
	if head == 1 && s[0] < 0 {
		return true
	}
	return (len(s)-head)%2 == 1 && s[len(s)-1] < 0
}

// Mismatch returns the index of the first differing word of a and b, or
// the shorter length when one is a prefix of the other. Slices whose
// alignments differ by a word are compared word by word.
func (Kernels) Mismatch(a, b []uint32) int {
	n := min(len(a), len(b))
	a, b = a[:n], b[:n]
	i := 0
	if pa, pb := uintptr(unsafe.Pointer(unsafe.SliceData(a))), uintptr(unsafe.Pointer(unsafe.SliceData(b))); n > 0 && pa%8 == pb%8 {
		head, u := Words64(a)
		_, v := Words64(b)
		if head == 1 {
			if a[0] != b[0] {
				return 0
			}
			i = 1
		}
		v = v[:len(u)]
		// Long runs go 64 words a step: the tree's side of a match's
		// compare is rarely in cache, and a wider step keeps more of its
		// loads in flight (a 3M trace replay's match: 25 -> 20 µs a call
		// in the guest at 64 words a step against 16; 128 gained nothing).
		for len(u) >= 32 {
			x, y := (*[32]uint64)(u), (*[32]uint64)(v)
			if (x[0]^y[0])|(x[1]^y[1])|(x[2]^y[2])|(x[3]^y[3])|(x[4]^y[4])|(x[5]^y[5])|(x[6]^y[6])|(x[7]^y[7])|
				(x[8]^y[8])|(x[9]^y[9])|(x[10]^y[10])|(x[11]^y[11])|(x[12]^y[12])|(x[13]^y[13])|(x[14]^y[14])|(x[15]^y[15])|
				(x[16]^y[16])|(x[17]^y[17])|(x[18]^y[18])|(x[19]^y[19])|(x[20]^y[20])|(x[21]^y[21])|(x[22]^y[22])|(x[23]^y[23])|
				(x[24]^y[24])|(x[25]^y[25])|(x[26]^y[26])|(x[27]^y[27])|(x[28]^y[28])|(x[29]^y[29])|(x[30]^y[30])|(x[31]^y[31]) != 0 {
				break
			}
			u, v = u[32:], v[32:]
			i += 64
		}
		for len(u) >= 8 {
			x, y := (*[8]uint64)(u), (*[8]uint64)(v)
			if (x[0]^y[0])|(x[1]^y[1])|(x[2]^y[2])|(x[3]^y[3])|(x[4]^y[4])|(x[5]^y[5])|(x[6]^y[6])|(x[7]^y[7]) != 0 {
				break
			}
			u, v = u[8:], v[8:]
			i += 16
		}
	}
	a, b = a[i:], b[i:len(a)]
	for j := range a {
		if a[j] != b[j] {
			return i + j
		}
	}
	return n
}
