package native

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// kernelCase is one input of the word-view loops: n tokens and slots
// (the slots consecutive from s0 but broken at cut when cut < n), records
// of that chain from h at position word p, one record corrupted at bad
// when bad < n, and the record slice rec records long.
type kernelCase struct {
	tk, rec []uint32
	sl      []int32
	h, p    uint32
	k1, k2  uint32
}

func newKernelCase(rng *rand.Rand, n, recLen, cut, bad int, h, p uint32, s0 int32, keys bool) kernelCase {
	c := kernelCase{tk: make([]uint32, n), sl: make([]int32, n), rec: make([]uint32, recLen), h: h, p: p,
		k1: canaryKeys[0], k2: canaryKeys[1]}
	if keys {
		c.k1, c.k2 = rng.Uint32()|1, rng.Uint32()|1
	}
	for i := range c.tk {
		c.tk[i] = rng.Uint32() >> (rng.IntN(4) * 10) // small tokens too
		c.sl[i] = s0 + int32(i)
	}
	// The true records (checkWords uses canaryK2 whatever the case's k2).
	ch, pw := h, p
	for i := range c.rec {
		if i < n {
			ch += mixKeyed(c.tk[i], pw, c.k1, canaryK2)
			pw += canaryPosMul
			c.rec[i] = ch
		} else {
			c.rec[i] = rng.Uint32()
		}
	}
	if cut < n {
		switch rng.IntN(3) {
		case 0:
			c.sl[cut]++
		case 1:
			c.sl[cut] = int32(rng.Uint32())
		default: // the run goes on from another slot: every later slot off
			for i := cut; i < n; i++ {
				c.sl[i] += 1 + int32(rng.IntN(100))
			}
		}
	}
	if bad < len(c.rec) {
		c.rec[bad] ^= 1 << rng.IntN(32)
	}
	return c
}

// compareKernels runs writeWords and checkWords on every kernel level
// this machine has and checks that each agrees with the Go loops: the
// same return values and the same records written.
func compareKernels(t *testing.T, c kernelCase) {
	t.Helper()
	want := slices.Clone(c.rec)
	wh, wn := writeWordsGo(want, c.sl, c.tk, c.h, c.p, c.k1, c.k2)
	ch, cp, cn := checkWordsGo(c.rec, c.sl, c.tk, c.h, c.p, c.k1)
	for _, v := range canaryLevels()[1:] {
		got := slices.Clone(c.rec)
		gh, gn := writeWordsVec(v, got, c.sl, c.tk, c.h, c.p, c.k1, c.k2)
		if gh != wh || gn != wn || !slices.Equal(got, want) {
			t.Fatalf("level %d: writeWords = (%x, %d), want (%x, %d); records equal %v (n %d, rec %d)",
				v, gh, gn, wh, wn, slices.Equal(got, want), len(c.tk), len(c.rec))
		}
		h, p, k := checkWordsVec(v, c.rec, c.sl, c.tk, c.h, c.p, c.k1)
		if h != ch || p != cp || k != cn {
			t.Fatalf("level %d: checkWords = (%x, %x, %d), want (%x, %x, %d) (n %d, rec %d)",
				v, h, p, k, ch, cp, cn, len(c.tk), len(c.rec))
		}
	}
}

// TestCanaryKernels: the vector kernels agree with the Go loops on
// random inputs: lengths from 0 to a few hundred, the records slice
// shorter or longer than the slots, runs broken and records corrupted
// anywhere (in the first block, on block edges, in the tail the Go loop
// finishes), position words and chain values that wrap, slot numbers
// that wrap int32, and other multipliers.
func TestCanaryKernels(t *testing.T) {
	if len(canaryLevels()) == 1 {
		t.Log("no vector kernels on this machine: the Go loops only")
	}
	rng := rand.New(rand.NewPCG(21, 22))
	for trial := 0; trial < 20000; trial++ {
		n := rng.IntN(110)
		if trial%10 == 0 {
			n = rng.IntN(400)
		}
		recLen := n
		if rng.IntN(4) == 0 {
			recLen = max(0, n+rng.IntN(40)-20)
		}
		cut, bad := n, recLen
		if rng.IntN(2) == 0 {
			cut = rng.IntN(n + 1)
		}
		if rng.IntN(2) == 0 {
			bad = rng.IntN(recLen + 1)
		}
		s0 := int32(rng.IntN(1 << 20))
		if rng.IntN(8) == 0 {
			s0 = math.MaxInt32 - int32(rng.IntN(64))
		}
		h, p := rng.Uint32(), rng.Uint32()
		if rng.IntN(8) == 0 {
			p = -uint32(rng.IntN(8)) * canaryPosMul // wraps through zero
		}
		compareKernels(t, newKernelCase(rng, n, recLen, cut, bad, h, p, s0, rng.IntN(8) == 0))
	}
	// Every cut and corruption position of a few lengths around the blocks.
	for _, n := range []int{8, 9, 15, 16, 17, 24, 31, 32, 33, 47, 48, 49} {
		for pos := 0; pos <= n; pos++ {
			compareKernels(t, newKernelCase(rng, n, n, pos, n, 7, 9, 100, false))
			compareKernels(t, newKernelCase(rng, n, n, n, pos, 7, 9, 100, false))
		}
	}
}

// FuzzCanaryKernels compares the vector kernels with the Go loops on
// inputs drawn from the fuzzer's values.
func FuzzCanaryKernels(f *testing.F) {
	f.Add(uint64(1), uint16(40), uint16(40), uint16(40), uint32(0), uint32(0), int32(0), false)
	f.Add(uint64(2), uint16(33), uint16(17), uint16(33), uint32(1), uint32(0xffffffff), int32(5), false)
	f.Add(uint64(3), uint16(64), uint16(64), uint16(16), uint32(9), uint32(0x9e3779b9), int32(math.MaxInt32-20), true)
	f.Fuzz(func(t *testing.T, seed uint64, n, cut, bad uint16, h, p uint32, s0 int32, keys bool) {
		rng := rand.New(rand.NewPCG(seed, uint64(n)))
		size := int(n % 600)
		compareKernels(t, newKernelCase(rng, size, size, int(cut), int(bad), h, p, s0, keys))
	})
}

// BenchmarkCanaryKernels times writeWords and checkWords on each kernel
// level this machine has (0: the Go loops), on runs of 16 slots (a page)
// and of 1024, in 4096 slots that stay in cache: the loops' own cost a
// record, a call a run.
//
//	go test ./host/native -run '^$' -bench CanaryKernels
func BenchmarkCanaryKernels(b *testing.B) {
	const n = 4096
	rec := make([]uint32, n)
	sl := make([]int32, n)
	tk := make([]uint32, n)
	for i := range sl {
		sl[i], tk[i] = int32(i), uint32(i*7)
	}
	for _, v := range canaryLevels() {
		for _, run := range []int{16, 1024} {
			name := fmt.Sprintf("level%d/run%d", v, run)
			b.Run(name+"/write", func(b *testing.B) {
				for b.Loop() {
					for j := 0; j < n; j += run {
						writeWordsVec(v, rec[j:j+run], sl[j:j+run], tk[j:j+run], uint32(j), uint32(j)*canaryPosMul, canaryKeys[0], canaryKeys[1])
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
			})
			b.Run(name+"/check", func(b *testing.B) {
				for b.Loop() {
					for j := 0; j < n; j += run {
						h := uint32(j)
						if _, _, k := checkWordsVec(v, rec[j:j+run], sl[j:j+run], tk[j:j+run], h, uint32(j)*canaryPosMul, canaryKeys[0]); k != run {
							b.Fatalf("%d of %d confirmed", k, run)
						}
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
			})
		}
	}
}
