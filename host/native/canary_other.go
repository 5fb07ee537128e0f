//go:build !amd64 || purego || race

package native

// Elsewhere, with the purego tag and under the race detector, the
// canary's word-view loops are the Go ones; canary_amd64.go has the
// vector kernels and says why not under -race.

const vecNone = 0

var canaryVector = vecNone

// canaryLevels lists the kernel levels this machine runs: the Go loops.
func canaryLevels() []int { return []int{vecNone} }

// writeWordsVec is writeWords on kernel level v (only vecNone here).
func writeWordsVec(_ int, rec []uint32, sl []int32, tk []uint32, h, p, k1, k2 uint32) (uint32, int) {
	return writeWordsGo(rec, sl, tk, h, p, k1, k2)
}

// checkWordsVec is checkWords on kernel level v (only vecNone here).
func checkWordsVec(_ int, r []uint32, sl []int32, tk []uint32, h, p, k1 uint32) (uint32, uint32, int) {
	return checkWordsGo(r, sl, tk, h, p, k1)
}
