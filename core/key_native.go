//go:build !wasm

package core

// mismatch returns the index of the first differing word of a and b, or
// the shorter length when one is a prefix of the other. This is the native
// version; key_wasm.go has the WebAssembly one.
func mismatch(a, b []uint32) int {
	n := min(len(a), len(b))
	a, b = a[:n], b[:n]
	// Compare fixed-size array views: the compiler turns a large array
	// comparison into one call of the runtime's vectorised memequal, and
	// drops the bounds checks. 256 words (1 KiB) amortise the call; the
	// 8-word pass narrows a differing block down before the word loop.
	i := 0
	for ; i+256 <= n; i += 256 {
		if *(*[256]uint32)(a[i : i+256]) != *(*[256]uint32)(b[i : i+256]) {
			break
		}
	}
	for ; i+8 <= n; i += 8 {
		if *(*[8]uint32)(a[i : i+8]) != *(*[8]uint32)(b[i : i+8]) {
			break
		}
	}
	for ; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// anyNegative reports whether any of s is negative, in one branch-free
// pass. This is the native version; key_wasm.go has the WebAssembly one.
func anyNegative(s []int32) bool {
	var or int32
	for _, x := range s {
		or |= x
	}
	return or < 0
}
