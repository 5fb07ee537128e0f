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
			h = canaryStep(h, tokens[i], uint64(i))
			if int(s) < nslots {
				off := int(s) * CanaryBytes
				binary.LittleEndian.PutUint64(mem[off:], h)
			}
		}
		for c := rng.IntN(3); c > 0 && n > 0; c-- {
			mem[int(slots[rng.IntN(n)])%nslots*CanaryBytes+rng.IntN(CanaryBytes)] ^= 1
		}
		// Every slot allocated, but now and then one freed (its record
		// intact, as a freed page keeps it until handed out again).
		used := make([]uint64, (nslots+63)/64)
		for s := range nslots {
			if rng.IntN(30) > 0 {
				used[s>>6] |= 1 << (s & 63)
			}
		}
		// Reference: slot by slot.
		wantH, wantK := h0, 0
		m := slotMem{mem, CanaryBytes, used}
		for ; wantK < n; wantK++ {
			s := slots[wantK]
			if int(s) >= nslots || used[s>>6]&(1<<(s&63)) == 0 {
				break
			}
			g := canaryStep(wantH, tokens[wantK], uint64(wantK))
			rec := m.slot(s)
			if binary.LittleEndian.Uint64(rec) != g {
				break
			}
			wantH = g
		}
		gotH, gotK := verifyRuns(mem, used, h0, tokens, slots)
		if gotH != wantH || gotK != wantK {
			t.Fatalf("trial %d: slots %v: verifyRuns = (%x, %d), want (%x, %d)", trial, slots, gotH, gotK, wantH, wantK)
		}
	}
}

// TestWriteRun: the run writer's records are canaryStep's chain, position
// by position, and it returns the chain's last value.
func TestWriteRun(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for trial := 0; trial < 500; trial++ {
		n := rng.IntN(40)
		tokens := make([]uint32, n)
		for i := range tokens {
			tokens[i] = rng.Uint32()
		}
		h0, pos := rng.Uint64(), uint64(rng.IntN(1000))
		run := make([]byte, n*CanaryBytes)
		slots := make([]int32, n)
		for i := range slots {
			slots[i] = int32(i)
		}
		got, wrote := h0, 0
		if n > 0 {
			got, wrote = writeRun(run, slots, tokens, h0, pos)
		}
		if wrote != n {
			t.Fatalf("trial %d: wrote %d of %d consecutive slots", trial, wrote, n)
		}
		if n > 2 {
			// A gap ends the run.
			gap := append([]int32(nil), slots...)
			cut := 1 + rng.IntN(n-1)
			gap[cut] += 5
			if _, w := writeRun(make([]byte, n*CanaryBytes), gap, tokens, h0, pos); w != cut {
				t.Fatalf("trial %d: a gap at %d ends the run at %d", trial, cut, w)
			}
		}
		h := h0
		for i, tok := range tokens {
			h = canaryStep(h, tok, pos+uint64(i))
			if d := binary.LittleEndian.Uint64(run[i*CanaryBytes:]); d != h {
				t.Fatalf("trial %d: record %d digest %x, want %x", trial, i, d, h)
			}
		}
		if got != h {
			t.Fatalf("trial %d: chain %x, want %x", trial, got, h)
		}
		if _, k := checkRun(run, tokens, h0, pos); k != n {
			t.Fatalf("trial %d: checkRun confirms %d of %d records", trial, k, n)
		}
	}
}

// BenchmarkCanaryRecords writes and checks the records of 4096 slots, a
// page of 16 at a time (as Prefill and a match's verification do), in a
// pool that fits the cache: the per-record cost of the canary's loops.
func BenchmarkCanaryRecords(b *testing.B) {
	const n = 4096
	mem := make([]byte, n*CanaryBytes)
	used := make([]uint64, n/64)
	for i := range used {
		used[i] = ^uint64(0)
	}
	tokens := make([]uint32, n)
	slots := make([]int32, n)
	for i := range tokens {
		tokens[i], slots[i] = uint32(i*7), int32(i)
	}
	b.Run("write", func(b *testing.B) {
		for b.Loop() {
			h := uint64(1)
			for p := 0; p < n; p += 16 {
				h, _ = writeRun(mem[p*CanaryBytes:], slots[p:p+16], tokens[p:], h, uint64(p))
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
	})
	b.Run("verify", func(b *testing.B) {
		for b.Loop() {
			if _, k := verifyRuns(mem, used, 1, tokens, slots); k != n {
				b.Fatal(k)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
	})
}
