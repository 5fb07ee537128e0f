package native

import (
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/radixkv/radixkv/core"
	"github.com/stretchr/testify/require"
)

func TestPagedPool_Basics(t *testing.T) {
	p, err := NewPagedMemPool(20, 4, 8) // two whole pages and 4 loose slots
	require.NoError(t, err)
	require.Equal(t, 20, p.Available())
	require.Equal(t, 2, p.AvailablePages())
	got, err := p.AllocPages(nil, 1)
	require.NoError(t, err)
	require.Equal(t, []int32{0, 1, 2, 3, 4, 5, 6, 7}, got)
	_, err = p.AllocPages(nil, 2)
	require.ErrorIs(t, err, ErrPoolExhausted)
	require.Equal(t, 12, p.Available(), "a failed alloc takes nothing")

	require.ErrorIs(t, p.FreePages(got[:4]), ErrInvalidArgument, "half a page")
	require.ErrorIs(t, p.FreePages(append(slices.Clone(got[1:]), got[0])), ErrInvalidArgument, "out of order")
	require.NoError(t, p.FreePages(got))
	require.ErrorIs(t, p.FreePages(got), ErrSlotNotAllocated, "double free")
	require.Equal(t, 2, p.AvailablePages())

	// Single slots: loose ones first, then a page split for the rest.
	s, err := p.Alloc(nil, 6)
	require.NoError(t, err)
	require.Equal(t, []int32{16, 17, 18, 19, 0, 1}, s)
	require.Equal(t, 1, p.AvailablePages())
	require.Equal(t, 14, p.Available())
	require.NoError(t, p.Free(s))
	require.Equal(t, 20, p.Available())
	require.Equal(t, 1, p.AvailablePages(), "a split page is not re-formed")

	_, err = NewPagedMemPool(8, 4, 0)
	require.ErrorIs(t, err, ErrInvalidArgument)
}

// TestPagedPool_Model checks a paged pool against a naive model (a set of
// allocated slots) over random allocations and frees, valid and not:
// every call either does exactly what the model does or fails and
// changes nothing.
func TestPagedPool_Model(t *testing.T) {
	for _, page := range []int{1, 2, 4, 16} {
		for seed := uint64(1); seed <= 4; seed++ {
			rng := rand.New(rand.NewPCG(seed, uint64(page)))
			capacity := 8*page + rng.IntN(page)
			p, err := NewPagedMemPool(capacity, 0, page)
			require.NoError(t, err)
			held := map[int32]bool{}
			var owned [][]int32 // what was handed out, as allocated
			snapshot := func() (int, int, []uint64) {
				return p.Available(), p.AvailablePages(), slices.Clone(p.used)
			}
			for step := range 2000 {
				a0, pg0, u0 := snapshot()
				unchanged := func(what string, err error) {
					require.Error(t, err, "step %d: %s", step, what)
					a, pg, u := snapshot()
					require.Equal(t, a0, a, "step %d: %s changed Available", step, what)
					require.Equal(t, pg0, pg, "step %d: %s changed the pages", step, what)
					require.Equal(t, u0, u, "step %d: %s changed the bitmap", step, what)
				}
				switch op := rng.IntN(6); {
				case op == 0 || op == 1 && len(owned) == 0:
					n := rng.IntN(3*page + 1)
					got, err := p.Alloc(nil, n)
					if n > a0 {
						unchanged("Alloc", err)
						continue
					}
					require.NoError(t, err)
					require.Len(t, got, n)
					for _, s := range got {
						require.False(t, held[s], "slot %d handed out twice", s)
						held[s] = true
					}
					owned = append(owned, got)
				case op == 1:
					n := rng.IntN(3)
					got, err := p.AllocPages(nil, n)
					if n > pg0 {
						unchanged("AllocPages", err)
						continue
					}
					require.NoError(t, err)
					for k := 0; k < len(got); k += page {
						require.Zero(t, int(got[k])%page)
						for i := range page {
							require.Equal(t, got[k]+int32(i), got[k+i])
						}
					}
					for _, s := range got {
						require.False(t, held[s])
						held[s] = true
					}
					owned = append(owned, got)
				case op < 5 && len(owned) > 0:
					k := rng.IntN(len(owned))
					s := owned[k]
					switch rng.IntN(4) {
					case 0: // a double free of something already freed, or a foreign slot
						bad := append(slices.Clone(s), int32(capacity+rng.IntN(3)))
						if rng.IntN(2) == 0 && len(s) > 0 {
							bad = append(slices.Clone(s), s[0])
						}
						unchanged("bad Free", p.Free(bad))
						continue
					case 1:
						err := p.FreePages(s)
						whole := len(s)%page == 0
						for j := 0; whole && j < len(s); j += page {
							whole = p.pageAt(s, j) >= 0
						}
						if !whole {
							unchanged("FreePages of not whole pages", err)
							continue
						}
						require.NoError(t, err)
					default:
						require.NoError(t, p.Free(s))
					}
					for _, x := range s {
						delete(held, x)
					}
					owned = append(owned[:k], owned[k+1:]...)
				}
				require.Equal(t, capacity-len(held), p.Available(), "step %d", step)
				for s := range int32(capacity) {
					require.Equal(t, held[s], p.isUsed(s), "step %d slot %d", step, s)
				}
			}
		}
	}
}

// TestController_PagedPool: a controller on a pool of its tree's page
// size takes whole pages for a request and gives the ragged tail's page
// back whole, so no page is ever split.
func TestController_PagedPool(t *testing.T) {
	c, kv := newCtl(t, 160, core.Config{PageSize: 16}, canaryOn)
	require.NotNil(t, c.paged)
	r, err := c.Arrive(core.Namespace{}, seq(0, 40))
	require.NoError(t, err)
	require.NoError(t, c.Prefill(r, 20))
	require.Equal(t, 8, kv.AvailablePages(), "two pages for 20 tokens")
	require.NoError(t, c.Prefill(r, 20))
	require.Equal(t, 7, kv.AvailablePages())
	require.NoError(t, c.Extend(r, 1, 2, 3))
	require.Equal(t, 7, kv.AvailablePages(), "decoding fills the last page")
	require.NoError(t, c.Audit())
	tail := r.Slots()[32]
	tokens, slots := slices.Clone(r.Tokens()[:33]), slices.Clone(r.Slots()[:33])
	require.NoError(t, c.Finish(r))
	require.Equal(t, 8, kv.AvailablePages(), "the tail's page went back whole")
	// The freed page keeps its records until it is handed out again, but
	// a stale reference to it is caught all the same: nobody holds it.
	require.Equal(t, tail, slots[32])
	err = c.VerifyMatch(core.Namespace{}, tokens, slots)
	require.ErrorIs(t, err, ErrCanaryMismatch)
	require.ErrorContains(t, err, "slot 32 is free")
	require.Equal(t, 128, kv.Available())
	require.Empty(t, kv.free, "no page was split")
	require.NoError(t, c.Audit())

	// A request that hits shares the cached pages and aborts its own.
	r, err = c.Arrive(core.Namespace{}, cat(seq(0, 32), seq(100, 10)))
	require.NoError(t, err)
	require.Equal(t, 32, r.CachedLen())
	require.NoError(t, c.Prefill(r, r.Pending()))
	require.Equal(t, 7, kv.AvailablePages())
	require.NoError(t, c.Abort(r))
	require.Equal(t, 8, kv.AvailablePages())
	require.Empty(t, kv.free)
	require.NoError(t, c.Audit())
}

// TestController_ArriveReusing: a done request's struct serves the next
// arrival; a running one, or another controller's, is refused.
func TestController_ArriveReusing(t *testing.T) {
	c, _ := newCtl(t, 160, core.Config{PageSize: 16}, canaryOn)
	other, _ := newCtl(t, 160, core.Config{PageSize: 16}, canaryOn)
	r, err := c.Arrive(core.Namespace{}, seq(0, 40))
	require.NoError(t, err)
	_, err = c.ArriveReusing(r, core.Namespace{}, seq(0, 40))
	require.ErrorIs(t, err, ErrInvalidArgument, "still running")
	require.NoError(t, c.Prefill(r, r.Pending()))
	require.NoError(t, c.Finish(r))
	_, err = other.ArriveReusing(r, core.Namespace{}, seq(0, 40))
	require.ErrorIs(t, err, ErrInvalidArgument, "another controller's")
	r2, err := c.ArriveReusing(r, core.Namespace{}, seq(0, 40))
	require.NoError(t, err)
	require.Same(t, r, r2)
	require.False(t, r2.Done())
	require.Equal(t, 32, r2.CachedLen())
	require.NoError(t, c.Abort(r2))
	require.NoError(t, c.Audit())
}

func TestPagedMmapPool(t *testing.T) {
	p, err := NewPagedMmapPool(64, 16, 16)
	if err != nil {
		require.ErrorIs(t, err, ErrMmapUnavailable)
		t.Skipf("mmap unavailable here: %v", err)
	}
	defer p.Close()
	s, err := p.AllocPages(nil, 2)
	require.NoError(t, err)
	require.Equal(t, 2, p.AvailablePages())
	require.NoError(t, p.Write(s[17], []byte("x")))
	require.NoError(t, p.FreePages(s[16:]))
	require.ErrorIs(t, p.FreePages(s[16:]), ErrSlotNotAllocated)
	require.NoError(t, p.Free(s[:16]))
	require.Equal(t, 4, p.AvailablePages())
}

// TestPagedPool_StalePages: with zeroOnFree (the controller's canary), a
// freed whole page keeps its records (nobody may read them: the slots are
// not allocated) until it is handed out again: AllocPages and Alloc zero
// it first, allocPagesToWrite (whose caller writes every slot) does not;
// loose slots are zeroed as they are freed; a Free that fails part-way
// zeroes the pages it had given up.
func TestPagedPool_StalePages(t *testing.T) {
	fill := func(p *MemPool, slots []int32, b byte) {
		for _, s := range slots {
			rec := make([]byte, CanaryBytes)
			for i := range rec {
				rec[i] = b
			}
			require.NoError(t, p.Write(s, rec))
		}
	}
	zero := make([]byte, CanaryBytes)
	isZero := func(p *MemPool, slots []int32) bool {
		for _, s := range slots {
			if !slices.Equal(p.mem[int(s)*CanaryBytes:int(s+1)*CanaryBytes], zero) {
				return false
			}
		}
		return true
	}
	for _, alloc := range []string{"AllocPages", "Alloc", "allocPagesToWrite", "Alloc split"} {
		t.Run(alloc, func(t *testing.T) {
			p, err := NewPagedMemPool(64, CanaryBytes, 16)
			require.NoError(t, err)
			p.zeroOnFree = true
			a, err := p.AllocPages(nil, 4)
			require.NoError(t, err)
			fill(p, a, 7)
			require.NoError(t, p.Free(a[:16]))
			require.False(t, isZero(p, a[:16]), "a freed page is poisoned lazily")
			err = p.Read(a[0], make([]byte, CanaryBytes))
			require.ErrorIs(t, err, ErrSlotNotAllocated, "its records cannot be read")
			var got []int32
			switch alloc {
			case "AllocPages":
				got, err = p.AllocPages(nil, 1)
			case "Alloc":
				got, err = p.Alloc(nil, 16)
			case "allocPagesToWrite":
				got, err = p.allocPagesToWrite(nil, 1)
			case "Alloc split":
				got, err = p.Alloc(nil, 5)
			}
			require.NoError(t, err)
			require.Equal(t, a[0], got[0], "the freed page is handed out next")
			if alloc == "allocPagesToWrite" {
				require.False(t, isZero(p, got), "the caller writes it")
			} else {
				require.True(t, isZero(p, a[:16]), "zeroed as it is handed out again")
			}
		})
	}

	p, err := NewPagedMemPool(64, CanaryBytes, 16)
	require.NoError(t, err)
	p.zeroOnFree = true
	a, err := p.AllocPages(nil, 4)
	require.NoError(t, err)
	fill(p, a, 9)
	require.NoError(t, p.Free(a[16:19]), "loose slots")
	require.True(t, isZero(p, a[16:19]), "loose slots are zeroed as they are freed")
	// A Free that fails on its last slot keeps every slot and zeroes the
	// page it had given up.
	err = p.Free(append(slices.Clone(a[32:48]), a[17]))
	require.ErrorIs(t, err, ErrSlotNotAllocated)
	require.True(t, isZero(p, a[32:48]))
	for _, s := range a[32:48] {
		require.True(t, p.isUsed(s))
	}
	// Once written whole again and freed, the page is stale again.
	fill(p, a[32:48], 3)
	require.NoError(t, p.Free(a[32:48]))
	require.False(t, isZero(p, a[32:48]))
}

// TestSlotRuns: fillSeq and seqLen (64-bit views with a scalar head and
// tail) against the obvious loops, at every alignment of the slice's
// memory, every length up to a few views, and a break at every position.
func TestSlotRuns(t *testing.T) {
	buf := make([]int32, 80)
	for off := range 3 {
		for n := range 41 {
			out := buf[off : off+n]
			fillSeq(out, 1001)
			for i := range out {
				require.Equal(t, 1001+int32(i), out[i], "fill: offset %d, length %d", off, n)
			}
			require.Equal(t, n, seqLen(out), "offset %d, length %d", off, n)
			for bad := 1; bad < n; bad++ {
				for _, v := range []int32{out[bad] + 1, out[bad] - 1, -1, out[bad] ^ 1<<20} {
					was := out[bad]
					out[bad] = v
					require.Equal(t, bad, seqLen(out), "offset %d, length %d, break at %d (%d)", off, n, bad, v)
					out[bad] = was
				}
			}
		}
	}
}

// TestSlotPool_RangeOps: setRange, clearRange, allUsed and anyBit against
// per-slot bits, over ranges inside one word, across two, and spanning
// whole words.
func TestSlotPool_RangeOps(t *testing.T) {
	p, err := newSlotPool("ranges", 512, 0, 1)
	require.NoError(t, err)
	for lo := 0; lo < 260; lo += 7 {
		for n := 1; lo+n <= 512 && n < 250; n += 5 {
			clear(p.used)
			p.setRange(int32(lo), n)
			for s := range 512 {
				require.Equal(t, s >= lo && s < lo+n, p.isUsed(int32(s)), "set [%d,+%d) slot %d", lo, n, s)
			}
			require.True(t, p.allUsed(int32(lo), n))
			require.True(t, anyBit(p.used, int32(lo), n))
			if lo+n+3 <= 512 {
				require.False(t, anyBit(p.used, int32(lo+n), 3), "past [%d,+%d)", lo, n)
			}
			if lo >= 3 {
				require.False(t, anyBit(p.used, int32(lo-3), 3), "before [%d,+%d)", lo, n)
			}
			for _, hole := range []int{lo, lo + n/2, lo + n - 1} {
				p.clearUsed(int32(hole))
				require.False(t, p.allUsed(int32(lo), n), "[%d,+%d) with %d free", lo, n, hole)
				p.setUsed(int32(hole))
			}
			p.clearRange(int32(lo), n)
			require.Equal(t, make([]uint64, len(p.used)), p.used, "clear [%d,+%d)", lo, n)
			p.setUsed(int32(lo + n - 1))
			require.True(t, anyBit(p.used, int32(lo), n), "[%d,+%d) with its last set", lo, n)
			p.clearUsed(int32(lo + n - 1))
		}
	}
}

// TestPagedPool_Runs: whole pages freed as one consecutive run go back
// as a run and come out again in the same ascending order, so a
// multi-page allocation after a free is one run again; bad runs (a
// duplicated slot, a foreign or free slot inside, past the capacity, a
// start inside a page, slices at odd memory alignment) fail and change
// nothing.
func TestPagedPool_Runs(t *testing.T) {
	const page, pages = 16, 12
	p, err := NewPagedMemPool(pages*page+5, 0, page)
	require.NoError(t, err)
	snapshot := func() (int, []int32, []int32, []uint64) {
		return p.Available(), slices.Clone(p.pages), slices.Clone(p.free), slices.Clone(p.used)
	}
	unchanged := func(what string, err error, a0 int, pg0, f0 []int32, u0 []uint64) {
		t.Helper()
		require.Error(t, err, what)
		a, pg, f, u := snapshot()
		require.Equal(t, a0, a, what)
		require.Equal(t, pg0, pg, what)
		require.Equal(t, f0, f, what)
		require.Equal(t, u0, u, what)
	}

	all, err := p.AllocPages(nil, pages)
	require.NoError(t, err)
	require.Equal(t, pages*page, seqLen(all), "a fresh pool hands out ascending pages")
	// Free pages 3..8 as one run, then 10..11 as another.
	require.NoError(t, p.Free(all[3*page:9*page]))
	require.NoError(t, p.Free(all[10*page:]))
	require.Equal(t, 8, p.AvailablePages())
	require.Len(t, p.free, 5, "only the pool's own loose tail")
	// Last freed first, each run in ascending order: 10, 11, 3, 4, ... 8.
	got, err := p.AllocPages(nil, 8)
	require.NoError(t, err)
	want := slices.Concat(seqSlots(10*page, 2*page), seqSlots(3*page, 6*page))
	require.Equal(t, want, got)

	// Bad frees, with the slice at both memory alignments.
	for _, off := range []int{0, 1} {
		bufOf := func(s []int32) []int32 {
			b := make([]int32, off+len(s))
			copy(b[off:], s)
			return b[off:]
		}
		a0, pg0, f0, u0 := snapshot()
		dup := slices.Clone(all[:3*page])
		dup[2*page+5] = dup[page+5] // a slot listed twice, inside a run of pages
		unchanged("duplicate in a run", p.Free(bufOf(dup)), a0, pg0, f0, u0)
		unchanged("a run then the same page again", p.Free(bufOf(slices.Concat(all[:2*page], all[page:2*page]))), a0, pg0, f0, u0)
		require.NoError(t, p.Free(all[9*page:10*page]))
		a0, pg0, f0, u0 = snapshot()
		unchanged("a free page inside a run", p.Free(bufOf(all[8*page:11*page])), a0, pg0, f0, u0)
		foreign := slices.Clone(all[:3*page])
		foreign[3*page-1] = int32(pages*page + 7) // past the capacity
		unchanged("a foreign slot ending a run", p.Free(bufOf(foreign)), a0, pg0, f0, u0)
		past := seqSlots((pages-1)*page, page+8) // the last page, then slots past the end
		unchanged("a run past the capacity", p.Free(bufOf(past)), a0, pg0, f0, u0)
		fresh, err := p.AllocPages(nil, 1)
		require.NoError(t, err)
		require.Equal(t, all[9*page:10*page], fresh, "the one free page")
	}

	// A run that starts inside a page frees its slots loose up to the
	// next page start, then whole pages; the rest of the split page
	// stays allocated.
	require.NoError(t, p.Free(all[5:3*page]))
	require.Equal(t, 2, p.AvailablePages())
	require.Len(t, p.free, 5+page-5) // the pool's 5 loose slots and 11 of page 0
	for s := range int32(5) {
		require.True(t, p.isUsed(s))
	}
	require.NoError(t, p.Free(all[:5]))
	require.Equal(t, pages*page+5-len(all)+3*page, p.Available())
}

// TestController_ArriveBorrowing: a borrowing arrival reads the caller's
// buffer in place and gives the same results as a copying one; nothing
// writes into the buffer or its spare capacity (Extend moves the tokens
// to a buffer of the controller's), and the buffer never becomes a spare
// of the controller, whether the request finishes, aborts, or its
// arrival fails.
func TestController_ArriveBorrowing(t *testing.T) {
	forEachEngine(t, func(t *testing.T, newEngine engineCtor) {
		c, _ := newCtlOn(t, newEngine, 160, core.Config{PageSize: 16}, canaryOn)
		const sentinel = 0xdead
		lend := func(tokens []uint32) []uint32 {
			b := make([]uint32, len(tokens), len(tokens)+8)
			copy(b, tokens)
			for i := len(b); i < cap(b); i++ {
				b[:cap(b)][i] = sentinel
			}
			return b
		}
		intact := func(b, want []uint32) {
			t.Helper()
			require.Equal(t, want, b)
			for _, x := range b[len(b):cap(b)] {
				require.Equal(t, uint32(sentinel), x, "the spare capacity was written")
			}
		}
		notSpare := func(b []uint32) {
			t.Helper()
			for _, s := range c.spareTokens {
				require.NotSame(t, unsafe.SliceData(b), unsafe.SliceData(s[:1]), "the caller's buffer became a spare")
			}
		}

		b1 := lend(seq(0, 40))
		r, err := c.ArriveBorrowing(nil, core.Namespace{}, b1)
		require.NoError(t, err)
		require.Same(t, unsafe.SliceData(b1), unsafe.SliceData(r.Tokens()), "read in place")
		require.NoError(t, c.Prefill(r, r.Pending()))
		require.NoError(t, c.Extend(r, 7, 8, 9))
		require.Equal(t, cat(seq(0, 40), []uint32{7, 8, 9}), r.Tokens())
		intact(b1, seq(0, 40))
		require.NoError(t, c.Finish(r))
		intact(b1, seq(0, 40))
		notSpare(b1)
		require.NoError(t, c.Audit())

		// The same hit as a copying arrival; reused and aborted.
		b2 := lend(cat(seq(0, 32), seq(500, 20)))
		r2, err := c.ArriveBorrowing(r, core.Namespace{}, b2)
		require.NoError(t, err)
		require.Same(t, r, r2)
		require.Equal(t, 32, r2.CachedLen())
		require.NoError(t, c.Prefill(r2, 10))
		require.NoError(t, c.Abort(r2))
		intact(b2, cat(seq(0, 32), seq(500, 20)))
		notSpare(b2)
		require.NoError(t, c.Audit())

		r3, err := c.Arrive(core.Namespace{}, cat(seq(0, 32), seq(500, 20)))
		require.NoError(t, err)
		require.Equal(t, 32, r3.CachedLen())
		require.NoError(t, c.Finish(r3))

		// A request the pool cannot hold (its Prefill fails) drops the
		// buffer too.
		b3 := lend(seq(1000, 400))
		r4, err := c.ArriveBorrowing(nil, core.Namespace{}, b3)
		if err == nil {
			err = c.Prefill(r4, r4.Pending())
			require.Error(t, err)
			require.NoError(t, c.Abort(r4))
		}
		intact(b3, seq(1000, 400))
		notSpare(b3)
		require.NoError(t, c.Audit())
	})
}
