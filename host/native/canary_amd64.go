//go:build amd64 && !purego && !race

package native

import "golang.org/x/sys/cpu"

// The canary's word-view loops (writeWords, checkWords) as AVX2 kernels,
// 8 records a step. On the trace nearly all the canary's added time was
// these two loops, and with the pool in cache they waited on the mixer's
// arithmetic, not on memory (RATIONALE.md, "What the canary costs"): the
// Go loops run ~20 instructions a record, one vector step about as many
// for 8. (AVX-512, 16 records a step, measured no faster on the trace:
// there the write loop then waits on the records' cache lines.)
//
// The kernels return exactly what the Go loops (writeWordsGo,
// checkWordsGo) return and write the same records: they stop at the same
// slot out of the run and at the same bad record, and take runs of any
// length, down to one record, with no Go loop left over (a page of 16 is
// a common run). TestCanaryKernels and FuzzCanaryKernels compare them.
//
// Under the race detector the Go loops run instead (canary_other.go): it
// does not see memory that assembly touches, and the canary's records are
// where a slot used after it was given up would show as a race.

// Kernel levels: canaryVector is the best this CPU and OS support.
const (
	vecNone = iota
	vecAVX2
)

var canaryVector = func() int { l := canaryLevels(); return l[len(l)-1] }()

// canaryLevels lists the kernel levels this machine runs, vecNone first
// (the tests compare each with it).
func canaryLevels() []int {
	if cpu.X86.HasAVX2 {
		return []int{vecNone, vecAVX2}
	}
	return []int{vecNone}
}

// writeWordsAVX2 is writeWordsGo on n records from the first slot s0
// (canary_amd64.s): it writes records j = 0, 1, ... while j < n and
// sl[j] == s0+j, chaining from h with position words from p, and returns
// how many it wrote.
//
//go:noescape
func writeWordsAVX2(rec *uint32, sl *int32, tk *uint32, n int, s0 int32, h, p, k1, k2 uint32) int

// checkWordsAVX2 is checkWordsGo on n records from the first slot s0: it
// confirms records j = 0, 1, ... while j < n, sl[j] == s0+j and rec[j]
// minus rec[j-1] (h for j = 0) is the term of tk[j] at position word p +
// j*canaryPosMul, and returns how many.
//
//go:noescape
func checkWordsAVX2(rec *uint32, sl *int32, tk *uint32, n int, s0 int32, h, p, k1, k2 uint32) int

// writeWordsVec is writeWords on kernel level v.
func writeWordsVec(v int, rec []uint32, sl []int32, tk []uint32, h, p, k1, k2 uint32) (uint32, int) {
	n := min(len(rec), len(sl), len(tk))
	if v == vecNone || n == 0 {
		return writeWordsGo(rec, sl, tk, h, p, k1, k2)
	}
	j := writeWordsAVX2(&rec[0], &sl[0], &tk[0], n, sl[0], h, p, k1, k2)
	return rec[j-1], j // j >= 1: slot 0 starts the run
}

// checkWordsVec is checkWords on kernel level v.
func checkWordsVec(v int, r []uint32, sl []int32, tk []uint32, h, p, k1 uint32) (uint32, uint32, int) {
	n := min(len(r), len(sl), len(tk))
	if v == vecNone || n == 0 {
		return checkWordsGo(r, sl, tk, h, p, k1)
	}
	j := checkWordsAVX2(&r[0], &sl[0], &tk[0], n, sl[0], h, p, k1, canaryK2)
	if j > 0 {
		h = r[j-1]
	}
	return h, p + uint32(j)*canaryPosMul, j
}
