package native

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// TestVerifyRuns checks the page-run sweep of verifyChain against the
// slot-by-slot rule it replaces (first slot whose record is not the
// chain's, or that lies outside the memory), on scattered and contiguous
// slot lists with corrupted records.
//
// The second shape has runs of up to a few hundred slots in a pool of
// several bitmap words, so runs and freed slots cross word boundaries
// (heldPrefix's word-at-a-time scan).
func TestVerifyRuns(t *testing.T) {
	// A run that jumps away from a slot holding the right record: the
	// record of the slot the list names is the one checked.
	mem := make([]byte, 16*CanaryBytes)
	used := []uint64{^uint64(0)}
	tokens, h := []uint32{3, 1, 4, 1}, uint32(99)
	for i, tok := range tokens {
		h = canaryStep(h, tok, uint64(i))
		binary.LittleEndian.PutUint32(mem[i*CanaryBytes:], h)
	}
	if _, k := verifyRuns(mem, used, 99, tokens, []int32{0, 1, 2, 3}); k != 4 {
		t.Fatalf("the true records: %d of 4 confirmed", k)
	}
	if _, k := verifyRuns(mem, used, 99, tokens, []int32{0, 1, 9, 3}); k != 2 {
		t.Fatalf("slot 9 in place of slot 2: %d confirmed, want 2", k)
	}
	for _, shape := range []struct{ nslots, maxLen, jump int }{{64, 20, 4}, {1000, 400, 60}} {
		testVerifyRuns(t, shape.nslots, shape.maxLen, shape.jump)
	}
}

func testVerifyRuns(t *testing.T, nslots, maxLen, jump int) {
	rng := rand.New(rand.NewPCG(11, uint64(nslots)))
	for trial := 0; trial < 2000; trial++ {
		mem := make([]byte, nslots*CanaryBytes)
		n := rng.IntN(maxLen)
		tokens := make([]uint32, n)
		slots := make([]int32, n)
		next := int32(rng.IntN(nslots))
		for i := range slots {
			if rng.IntN(jump) == 0 {
				next = int32(rng.IntN(nslots + 2)) // sometimes past the end
			}
			slots[i], tokens[i] = next, uint32(rng.IntN(5))
			next++
		}
		// Write the true records of the in-range slots, then corrupt some.
		h0 := rng.Uint32()
		h := h0
		for i, s := range slots {
			h = canaryStep(h, tokens[i], uint64(i))
			if int(s) < nslots {
				off := int(s) * CanaryBytes
				binary.LittleEndian.PutUint32(mem[off:], h)
			}
		}
		for c := rng.IntN(3); c > 0 && n > 0; c-- {
			mem[int(slots[rng.IntN(n)])%nslots*CanaryBytes+rng.IntN(CanaryBytes)] ^= 1
		}
		// Every slot allocated, but now and then one freed (its record
		// intact, as a freed page keeps it until handed out again).
		used := make([]uint64, (nslots+63)/64)
		for s := range nslots {
			if rng.IntN(30*jump) > 0 {
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
			if binary.LittleEndian.Uint32(rec) != g {
				break
			}
			wantH = g
		}
		gotH, gotK := verifyRuns(mem, used, h0, tokens, slots)
		if gotH != wantH || gotK != wantK {
			t.Fatalf("trial %d: slots %v: verifyRuns = (%x, %d), want (%x, %d)", trial, slots, gotH, gotK, wantH, wantK)
		}
		// The same from a misaligned copy: the portable loop, not the word view.
		odd := append(make([]byte, 1, len(mem)+1), mem...)[1:]
		if h, k := verifyRuns(odd, used, h0, tokens, slots); h != wantH || k != wantK {
			t.Fatalf("trial %d: slots %v: misaligned verifyRuns = (%x, %d), want (%x, %d)", trial, slots, h, k, wantH, wantK)
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
		h0, pos := rng.Uint32(), uint64(rng.IntN(1000))
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
			if d := binary.LittleEndian.Uint32(run[i*CanaryBytes:]); d != h {
				t.Fatalf("trial %d: record %d digest %x, want %x", trial, i, d, h)
			}
		}
		if got != h {
			t.Fatalf("trial %d: chain %x, want %x", trial, got, h)
		}
		if _, k := checkRun(run, tokens, h0, pos); k != n {
			t.Fatalf("trial %d: checkRun confirms %d of %d records", trial, k, n)
		}
		// A misaligned run takes the portable loops: the same bytes.
		odd := make([]byte, n*CanaryBytes+1)[1:]
		if n > 0 {
			if g, _ := writeRun(odd, slots, tokens, h0, pos); g != got {
				t.Fatalf("trial %d: misaligned chain %x, want %x", trial, g, got)
			}
		}
		if !bytes.Equal(odd, run) {
			t.Fatalf("trial %d: misaligned records differ", trial)
		}
		if _, k := checkRun(odd, tokens, h0, pos); k != n {
			t.Fatalf("trial %d: misaligned checkRun confirms %d of %d records", trial, k, n)
		}
		if n > 0 {
			odd[rng.IntN(len(odd))] ^= 4
			if _, k := checkRun(odd, tokens, h0, pos); k == n {
				t.Fatalf("trial %d: misaligned checkRun misses a flipped bit", trial)
			}
		}
	}
}

// BenchmarkCanaryRecords writes and checks the records of a list of
// slots, whole pages of 16 in a shuffled order (as Prefill and a match's
// verification see them), through writeRun and verifyRuns: in a pool of
// 4096 slots that fits the cache (the loops' own cost, a call a page),
// and in one of 3M slots, 12 MB of records, swept whole each time (with
// the memory's). The -runs1k cases shuffle runs of 64 pages instead: on
// the shared trace a write or check covers ~1400 consecutive slots on
// average, so these are the kernels' cost a record with little per-call
// work.
func BenchmarkCanaryRecords(b *testing.B) {
	for _, sz := range []struct {
		n, run int
		name   string
	}{{4096, 16, "4k"}, {3_000_000, 16, "3000k"}, {4096, 1024, "4k-runs1k"}, {3_000_000, 1024, "3000k-runs1k"}} {
		n := sz.n / sz.run * sz.run
		mem := make([]byte, n*CanaryBytes)
		used := make([]uint64, (n+63)/64)
		for i := range used {
			used[i] = ^uint64(0)
		}
		tokens := make([]uint32, n)
		slots := make([]int32, n)
		for i, pg := range rand.New(rand.NewPCG(15, 16)).Perm(n / sz.run) {
			for j := range sz.run {
				slots[i*sz.run+j] = int32(pg*sz.run + j)
			}
		}
		for i := range tokens {
			tokens[i] = uint32(i * 7)
		}
		name := sz.name
		b.Run(name+"/write", func(b *testing.B) {
			for b.Loop() {
				h := uint32(1)
				for p := 0; p < n; {
					var k int
					h, k = writeRun(mem[int(slots[p])*CanaryBytes:], slots[p:], tokens[p:], h, uint64(p))
					p += k
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
		})
		b.Run(name+"/verify", func(b *testing.B) {
			for b.Loop() {
				if _, k := verifyRuns(mem, used, 1, tokens, slots); k != n {
					b.Fatal(k)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
		})
	}
}

// TestHeldPrefix: the word-at-a-time count of held slots agrees with a
// slot-by-slot count, for ranges that start anywhere in a word, span
// several words, or run past the bitmap.
func TestHeldPrefix(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	for trial := 0; trial < 5000; trial++ {
		used := make([]uint64, 1+rng.IntN(5))
		for i := range used {
			used[i] = ^uint64(0)
		}
		for c := rng.IntN(3); c > 0; c-- {
			b := rng.IntN(len(used) * 64)
			used[b>>6] &^= 1 << (b & 63)
		}
		s, n := int32(rng.IntN(len(used)*64)), rng.IntN(300)
		want := 0
		for ; want < n; want++ {
			x := int(s) + want
			if x>>6 >= len(used) || used[x>>6]&(1<<(x&63)) == 0 {
				break
			}
		}
		if got := heldPrefix(used, s, n); got != want {
			t.Fatalf("trial %d: heldPrefix(%x, %d, %d) = %d, want %d", trial, used, s, n, got, want)
		}
	}
}
