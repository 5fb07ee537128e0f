package core

import (
	"fmt"
	"math/bits"
	"slices"
)

// Node keys, Full device values and children lists live in ranges carved
// from a few large slabs rather than in buffers of their own. A serving
// cache inserts and evicts sequences all the time, and a split cuts a
// node's buffer in two, so recycled per-node buffers end up too small for
// the next long sequence and every such insert allocated. Here a split
// keeps both halves where they were (adjacent ranges of one slab), and a
// freed range merges with the free ranges on either side, so the pieces
// become one range again once all of them are freed:
//
//	insert:  [ leaf ....................... ][ free ][ other ]
//	split:   [ prefix ][ leaf ............. ][ free ][ other ]
//	evict:   [ prefix ][ free ................... ][ other ]
//	evict:   [ free ............................. ][ other ]
//
// Slabs are allocated when nothing free fits and kept; a request larger
// than a slab gets a buffer of its own, which the garbage collector takes
// back.
//
// A range belongs to one holder until it is freed: the allocator never
// hands out an element of a live range, and the holder keeps its slice
// capped (3-index) so that no append reaches a neighbour. A free range
// stores the index of its record in its first and last elements (free
// memory is the allocator's), which is how a range being freed finds free
// neighbours in O(1). That tag is validated against the record (same
// slab, adjacent end), so whatever an allocated element holds can never
// pass for one. Free ranges are listed by size class, four classes per
// power of two, found through a bitmap of non-empty classes. Nothing is
// kept in a Go map: the order of every choice is a function of the calls.

// slabRef is where a range starts: 1 + the slab's index, and the offset
// in it. The zero value means the range is not in a slab (a caller's
// buffer, a buffer of its own, or nothing).
type slabRef struct {
	slab, off int32
}

const (
	// slabMin and slabMax bound the elements of a new slab: slabs grow
	// with what the allocator holds, so small trees (the tests, a guest
	// with a small cache) stay small and large ones need few slabs.
	slabMin = 1 << 12
	slabMax = 1 << 20

	fitSub     = 2 // log2 of the size classes per power of two
	fitLinear  = 1 << (fitSub + 1)
	fitClasses = fitLinear + (31-(fitSub+1))<<fitSub
)

// fitClass returns the size class of a free range of n elements: n itself
// below fitLinear, then 1<<fitSub classes per power of two.
func fitClass(n int) int {
	if n < fitLinear {
		return n
	}
	e := bits.Len(uint(n)) - 1 // 2^e <= n, e > fitSub
	return fitLinear + (e-fitSub-1)<<fitSub + (n>>(e-fitSub))&(1<<fitSub-1)
}

// freeRange is the record of a free range [off, off+n) of a slab (0-based
// index), on the doubly linked list of its size class. n == 0 marks an
// unused record, chained from slabAlloc.spare through next.
type freeRange struct {
	slab, off, n int32
	prev, next   int32 // record indices; 0 = none
}

// slabAlloc hands out ranges of T from slabs and takes them back. The
// zero value is ready; minSlab and maxSlab override the bounds (tests).
type slabAlloc[T uint32 | int32] struct {
	slabs [][]T
	// recs[0] is a sentinel, so a record index of 0 means none.
	recs     []freeRange
	spare    int32
	heads    [fitClasses]int32
	nonEmpty [(fitClasses + 63) / 64]uint64

	total int // elements in slabs
	used  int // elements handed out from slabs
	own   int // requests larger than a slab, served by a buffer of their own

	minSlab, maxSlab int
}

// clone returns a copy of src in a range of its own and where it lives.
func (a *slabAlloc[T]) clone(src []T) ([]T, slabRef) {
	b, at := a.alloc(len(src))
	copy(b, src)
	return b, at
}

// alloc returns a capped range of n elements (contents undefined) and
// where it lives; n == 0 gives nil.
func (a *slabAlloc[T]) alloc(n int) ([]T, slabRef) {
	if n <= 0 {
		return nil, slabRef{}
	}
	r := a.find(n)
	if r == 0 {
		if n > a.slabLimit() {
			a.own++
			return make([]T, n), slabRef{}
		}
		r = a.grow(n)
	}
	f := &a.recs[r]
	s, off := f.slab, int(f.off)
	mem := a.slabs[s]
	a.unlist(r)
	if int(f.n) == n {
		a.drop(r)
	} else {
		// The rest stays free where it is; its last element keeps the tag.
		f.off += int32(n)
		f.n -= int32(n)
		mem[f.off] = T(r)
		a.list(r)
	}
	a.used += n
	return mem[off : off+n : off+n], slabRef{s + 1, int32(off)}
}

// free returns the n elements at at (as handed out, or a piece of them
// after a split) and merges them with free neighbours. A zero ref is a
// buffer not from a slab: nothing to do.
func (a *slabAlloc[T]) free(at slabRef, n int) {
	if at.slab == 0 || n <= 0 {
		return
	}
	s := at.slab - 1
	mem := a.slabs[s]
	start, end := int(at.off), int(at.off)+n
	a.used -= n
	// The merged range takes over a neighbour's record (the right one's
	// when both merge, the other going spare): the record a drop and a
	// fresh record() would pick, without the round trip.
	keep := int32(0)
	if start > 0 {
		if r := a.tagAt(s, mem[start-1]); r != 0 && int(a.recs[r].off+a.recs[r].n) == start {
			start = int(a.recs[r].off)
			a.unlist(r)
			keep = r
		}
	}
	if end < len(mem) {
		if r := a.tagAt(s, mem[end]); r != 0 && int(a.recs[r].off) == end {
			end += int(a.recs[r].n)
			a.unlist(r)
			if keep != 0 {
				a.drop(keep)
			}
			keep = r
		}
	}
	if keep == 0 {
		keep = a.record()
	}
	a.fileRange(keep, s, start, end)
}

// reset frees everything: each slab becomes one free range again.
func (a *slabAlloc[T]) reset() {
	a.recs = a.recs[:0]
	a.spare = 0
	clear(a.heads[:])
	clear(a.nonEmpty[:])
	a.used = 0
	for s := range a.slabs {
		a.freeRange(int32(s), 0, len(a.slabs[s]))
	}
}

// tagAt returns the record a free range's boundary element v names, if v
// names a live record of slab s (callers check adjacency), else 0.
func (a *slabAlloc[T]) tagAt(s int32, v T) int32 {
	r := int64(v)
	if r <= 0 || r >= int64(len(a.recs)) {
		return 0
	}
	if f := &a.recs[r]; f.n == 0 || f.slab != s {
		return 0
	}
	return int32(r)
}

// freeRange records [start, end) of slab s as one free range.
func (a *slabAlloc[T]) freeRange(s int32, start, end int) int32 {
	r := a.record()
	a.fileRange(r, s, start, end)
	return r
}

// fileRange makes record r the free range [start, end) of slab s: the
// record, the boundary tags at both ends and its free list.
func (a *slabAlloc[T]) fileRange(r, s int32, start, end int) {
	a.recs[r] = freeRange{slab: s, off: int32(start), n: int32(end - start)}
	mem := a.slabs[s]
	mem[start], mem[end-1] = T(r), T(r)
	a.list(r)
}

// find returns a free range of at least n elements, or 0 when none is
// that long. Ranges of n's own class may be shorter than n: a few of them
// are tried first (a close fit keeps the longer ranges whole), then any
// range of a higher class fits, and only then is the rest of n's class
// searched, so a slab is added only when no free range fits.
func (a *slabAlloc[T]) find(n int) int32 {
	c := fitClass(n)
	r, tries := a.heads[c], 8
	for ; r != 0 && tries > 0; r, tries = a.recs[r].next, tries-1 {
		if int(a.recs[r].n) >= n {
			return r
		}
	}
	for w := (c + 1) / 64; w < len(a.nonEmpty); w++ {
		m := a.nonEmpty[w]
		if w == (c+1)/64 {
			m &= ^uint64(0) << ((c + 1) % 64)
		}
		if m != 0 {
			return a.heads[w*64+bits.TrailingZeros64(m)]
		}
	}
	for ; r != 0; r = a.recs[r].next {
		if int(a.recs[r].n) >= n {
			return r
		}
	}
	return 0
}

// grow adds a slab that can hold n elements and returns its free range.
func (a *slabAlloc[T]) grow(n int) int32 {
	lo, hi := a.minSlab, a.slabLimit()
	if lo == 0 {
		lo = slabMin
	}
	size := min(max(a.total, lo, 1<<bits.Len(uint(n-1))), hi)
	size = max(size, n)
	a.slabs = append(a.slabs, make([]T, size))
	a.total += size
	return a.freeRange(int32(len(a.slabs)-1), 0, size)
}

func (a *slabAlloc[T]) slabLimit() int {
	if a.maxSlab != 0 {
		return a.maxSlab
	}
	return slabMax
}

// record returns an unused record index.
func (a *slabAlloc[T]) record() int32 {
	if len(a.recs) == 0 {
		a.recs = append(a.recs, freeRange{}) // the sentinel
	}
	if r := a.spare; r != 0 {
		a.spare = a.recs[r].next
		return r
	}
	a.recs = append(a.recs, freeRange{})
	return int32(len(a.recs) - 1)
}

// drop returns record r (already unlisted) to the spare chain.
func (a *slabAlloc[T]) drop(r int32) {
	a.recs[r] = freeRange{next: a.spare}
	a.spare = r
}

// list pushes record r on the front of its class list.
func (a *slabAlloc[T]) list(r int32) {
	f := &a.recs[r]
	c := fitClass(int(f.n))
	f.prev, f.next = 0, a.heads[c]
	if h := a.heads[c]; h != 0 {
		a.recs[h].prev = r
	}
	a.heads[c] = r
	a.nonEmpty[c/64] |= 1 << (c % 64)
}

// unlist takes record r off its class list.
func (a *slabAlloc[T]) unlist(r int32) {
	f := &a.recs[r]
	c := fitClass(int(f.n))
	if f.prev != 0 {
		a.recs[f.prev].next = f.next
	} else {
		a.heads[c] = f.next
		if f.next == 0 {
			a.nonEmpty[c/64] &^= 1 << (c % 64)
		}
	}
	if f.next != 0 {
		a.recs[f.next].prev = f.prev
	}
	f.prev, f.next = 0, 0
}

// check verifies the allocator's bookkeeping: every free record lies in
// its slab, is tagged at both ends and listed in its class; free ranges
// neither overlap nor touch (freeing coalesces); free and used elements
// add up to the slabs.
func (a *slabAlloc[T]) check() error {
	var free []freeRange
	for r := 1; r < len(a.recs); r++ {
		f := a.recs[r]
		if f.n == 0 {
			continue
		}
		if f.slab < 0 || int(f.slab) >= len(a.slabs) || f.off < 0 || int(f.off+f.n) > len(a.slabs[f.slab]) {
			return fmt.Errorf("free range %d (%d@%d+%d) is outside its slab", r, f.slab, f.off, f.n)
		}
		mem := a.slabs[f.slab]
		if mem[f.off] != T(r) || mem[f.off+f.n-1] != T(r) {
			return fmt.Errorf("free range %d (%d@%d+%d) is not tagged at both ends", r, f.slab, f.off, f.n)
		}
		free = append(free, f)
	}
	listed := 0
	for c, h := range a.heads {
		if (h != 0) != (a.nonEmpty[c/64]&(1<<(c%64)) != 0) {
			return fmt.Errorf("size class %d: non-empty bit disagrees with its list", c)
		}
		prev := int32(0)
		for r := h; r != 0; r = a.recs[r].next {
			if f := a.recs[r]; f.n == 0 || fitClass(int(f.n)) != c || f.prev != prev {
				return fmt.Errorf("size class %d: record %d misfiled or mislinked", c, r)
			}
			prev = r
			if listed++; listed > len(free) {
				return fmt.Errorf("size class %d: the lists hold more records than there are free ranges", c)
			}
		}
	}
	if listed != len(free) {
		return fmt.Errorf("%d free ranges, %d listed", len(free), listed)
	}
	slices.SortFunc(free, func(x, y freeRange) int {
		if x.slab != y.slab {
			return int(x.slab - y.slab)
		}
		return int(x.off - y.off)
	})
	sum := 0
	for k, f := range free {
		sum += int(f.n)
		if k > 0 && free[k-1].slab == f.slab && free[k-1].off+free[k-1].n >= f.off {
			return fmt.Errorf("free ranges %d@%d+%d and %d@%d+%d overlap or touch", f.slab, free[k-1].off, free[k-1].n, f.slab, f.off, f.n)
		}
	}
	total := 0
	for _, m := range a.slabs {
		total += len(m)
	}
	if total != a.total || sum+a.used != total {
		return fmt.Errorf("slabs hold %d elements (counted %d): %d free + %d used", total, a.total, sum, a.used)
	}
	return nil
}

// checkStorage checks that every node's key, Full device value and
// children are where its refs say, and that the slabs hand out exactly
// what the nodes hold: a range lost or freed twice shows here.
func (t *Tree) checkStorage(add func(string, ...any)) {
	var keys, vals, kids int
	for idx := range t.nodes {
		n := &t.nodes[idx]
		if !n.live {
			if n.children != nil || n.kidsAt.slab != 0 {
				add("node slot %d: freed but holds children storage", idx)
			}
			continue
		}
		if n.kidsAt.slab != 0 {
			kids += cap(n.children)
			if !inSlab(&t.kids, n.kidsAt, n.children[:1]) {
				add("%v: children are not where their ref says", t.handle(int32(idx)))
			}
		}
		if n.keyAt.slab != 0 {
			keys += len(n.key)
			if !inSlab(&t.keys, n.keyAt, n.key) {
				add("%v: key is not where its ref says", t.handle(int32(idx)))
			}
		}
		if n.fullAt.slab != 0 {
			vals += len(n.dev[Full])
			if !inSlab(&t.vals, n.fullAt, n.dev[Full]) {
				add("%v: full device value is not where its ref says", t.handle(int32(idx)))
			}
		}
	}
	for _, c := range [...]struct {
		what       string
		used, want int
		err        error
	}{
		{"key", t.keys.used, keys, t.keys.check()},
		{"value", t.vals.used, vals, t.vals.check()},
		{"children", t.kids.used, kids, t.kids.check()},
	} {
		if c.err != nil {
			add("tree: %s storage: %v", c.what, c.err)
		}
		if c.used != c.want {
			add("tree: %s storage hands out %d elements, nodes hold %d", c.what, c.used, c.want)
		}
	}
}

// inSlab reports whether b (non-empty) starts where at says.
func inSlab[T uint32 | int32](a *slabAlloc[T], at slabRef, b []T) bool {
	s := int(at.slab) - 1
	if len(b) == 0 || s >= len(a.slabs) || int(at.off)+len(b) > len(a.slabs[s]) {
		return false
	}
	return &a.slabs[s][at.off] == &b[0]
}
