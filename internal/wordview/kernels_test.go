package wordview

import "testing"

// TestKernels checks both kernels against word-by-word loops on every
// length to 160 words (past two of the widest steps) and both alignments of each slice, with the
// difference (or the negative slot) at every position.
func TestKernels(t *testing.T) {
	refMismatch := func(a, b []uint32) int {
		n := min(len(a), len(b))
		for i := range n {
			if a[i] != b[i] {
				return i
			}
		}
		return n
	}
	refNegative := func(s []int32) bool {
		for _, x := range s {
			if x < 0 {
				return true
			}
		}
		return false
	}
	var k Kernels
	ba, bb := make([]uint32, 176), make([]uint32, 176)
	bs := make([]int32, 176)
	for i := range ba {
		ba[i], bb[i], bs[i] = uint32(i)*2654435761, uint32(i)*2654435761, int32(i)
	}
	for n := range 161 {
		for _, offA := range []int{0, 1} {
			for _, offB := range []int{0, 1, 2} {
				a, b := ba[offA:offA+n], bb[offB:offB+n]
				for i := range n {
					b[i] = a[i]
				}
				if got := k.Mismatch(a, b); got != n {
					t.Fatalf("n=%d offsets %d/%d: equal slices mismatch at %d", n, offA, offB, got)
				}
				if got := k.Mismatch(a, b[:n/2]); got != n/2 {
					t.Fatalf("n=%d offsets %d/%d: prefix mismatch at %d, want %d", n, offA, offB, got, n/2)
				}
				for d := range n {
					b[d] ^= 1 << (d % 32)
					if got, want := k.Mismatch(a, b), refMismatch(a, b); got != want {
						t.Fatalf("n=%d offsets %d/%d diff at %d: got %d, want %d", n, offA, offB, d, got, want)
					}
					b[d] = a[d]
				}
			}
			s := bs[offA : offA+n]
			if k.AnyNegative(s) {
				t.Fatalf("n=%d offset %d: no slot is negative", n, offA)
			}
			for d := range n {
				for _, v := range []int32{-1, -1 << 31} {
					old := s[d]
					s[d] = v
					if got, want := k.AnyNegative(s), refNegative(s); got != want {
						t.Fatalf("n=%d offset %d: slot %d = %d: got %v", n, offA, d, v, got)
					}
					s[d] = old
				}
			}
		}
	}
}
