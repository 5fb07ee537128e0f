//go:build wasm

package core

// mismatch returns the index of the first differing word of a and b, or
// the shorter length when one is a prefix of the other.
//
// In WebAssembly the runtime's memequal is a byte loop, so comparing
// fixed-size array views (the native version) is the slowest choice there;
// a plain word loop is about twice as fast (see ARCHITECTURE.md).
func mismatch(a, b []uint32) int {
	n := min(len(a), len(b))
	a, b = a[:n], b[:n]
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
