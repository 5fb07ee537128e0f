package native

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// TestVerifyRuns checks the page-run sweep of verifyChain against the
// slot-by-slot rule it replaces (first slot whose record is not the
// chain's, or that lies outside the memory), on scattered and contiguous
// slot lists with corrupted records.
func TestVerifyRuns(t *testing.T) {
	const nslots = 64
	rng := rand.New(rand.NewPCG(11, 12))
	for trial := 0; trial < 2000; trial++ {
		mem := make([]byte, nslots*CanaryBytes)
		n := rng.IntN(20)
		tokens := make([]uint32, n)
		slots := make([]int32, n)
		next := int32(rng.IntN(nslots))
		for i := range slots {
			if rng.IntN(4) == 0 {
				next = int32(rng.IntN(nslots + 2)) // sometimes past the end
			}
			slots[i], tokens[i] = next, uint32(rng.IntN(5))
			next++
		}
		// Write the true records of the in-range slots, then corrupt some.
		h0 := rng.Uint64()
		h := h0
		for i, s := range slots {
			h = canaryStep(h, tokens[i])
			if int(s) < nslots {
				off := int(s) * CanaryBytes
				binary.LittleEndian.PutUint64(mem[off:], h)
				binary.LittleEndian.PutUint64(mem[off+8:], uint64(i))
			}
		}
		for c := rng.IntN(3); c > 0 && n > 0; c-- {
			mem[int(slots[rng.IntN(n)])%nslots*CanaryBytes+rng.IntN(CanaryBytes)] ^= 1
		}
		// Reference: slot by slot.
		wantH, wantK := h0, 0
		m := slotMem{mem, CanaryBytes}
		for ; wantK < n; wantK++ {
			s := slots[wantK]
			if int(s) >= nslots {
				break
			}
			g := canaryStep(wantH, tokens[wantK])
			rec := m.slot(s)
			if binary.LittleEndian.Uint64(rec[0:8]) != g || binary.LittleEndian.Uint64(rec[8:16]) != uint64(wantK) {
				break
			}
			wantH = g
		}
		gotH, gotK := verifyRuns(mem, h0, tokens, slots)
		if gotH != wantH || gotK != wantK {
			t.Fatalf("trial %d: slots %v: verifyRuns = (%x, %d), want (%x, %d)", trial, slots, gotH, gotK, wantH, wantK)
		}
	}
}
