package core

import "testing"

// TestMismatch checks mismatch (the native or the WebAssembly version,
// whichever this build has) on every length up to a few steps of its
// widest loop, with the difference at every position, both ways round and
// with the second slice longer.
func TestMismatch(t *testing.T) {
	for n := 0; n < 100; n++ {
		for d := 0; d <= n; d++ {
			a := make([]uint32, n)
			b := make([]uint32, n+d%3)
			if d < n {
				b[d] = 1
			}
			if got := mismatch(a, b); got != d {
				t.Fatalf("len %d, first difference at %d: mismatch(a, b) = %d", n, d, got)
			}
			if got := mismatch(b, a); got != d {
				t.Fatalf("len %d, first difference at %d: mismatch(b, a) = %d", n, d, got)
			}
		}
	}
}

// TestAnyNegative checks anyNegative (native or WebAssembly) on every
// length up to a few of its steps, with one negative word at every
// position and with none.
func TestAnyNegative(t *testing.T) {
	for n := 0; n < 100; n++ {
		s := make([]int32, n)
		for i := range s {
			s[i] = int32(i) * 0x01000001 & 0x7fffffff
		}
		if anyNegative(s) {
			t.Fatalf("len %d without a negative word: anyNegative = true", n)
		}
		for d := range n {
			old := s[d]
			s[d] = -1 - int32(d)
			if !anyNegative(s) {
				t.Fatalf("len %d, negative word at %d: anyNegative = false", n, d)
			}
			s[d] = old
		}
	}
}
