package native

import (
	"fmt"
	"math/bits"
	"slices"

	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/internal/wordview"
)

// Pool is one slot allocator plus the storage behind it: a device pool
// (Full KV, SWA KV, Mamba states) or a host-memory pool of the host tier.
// Slots are the int32 indices the tree stores as node values; every slot
// holds SlotBytes bytes.
//
// A Pool is not safe for concurrent use; the Controller serialises every
// call under its mutex. Implementations outside this package (CUDA device
// pools, pinned host pools) satisfy the same interface.
//
// What may fail, and what the controller does about it (it survives
// every such failure with its accounting whole, so Audit keeps passing):
//   - Alloc may fail at any time (exhausted, a device out of memory); it
//     must then allocate nothing. The controller's call fails and changes
//     nothing (a backup is not made, a load-back is skipped).
//   - Free must be all-or-nothing. When it fails the controller keeps the
//     slots as its own, counted by Audit as being freed, and retries the
//     Free on later calls (Controller.Poll runs them at once).
//   - Write, Read and Copy may fail (I/O). A canary record that cannot be
//     written fails the call that filled the slot; a poison record that
//     cannot be written does not stop the slot's Free; a Read that fails
//     while the canary is checked is reported as that I/O error, never as
//     a canary mismatch.
//   - Copies between pools go through a Transport (see transfer.go),
//     which may fail or complete late; see its duties there.
type Pool interface {
	// Alloc appends n fresh slots to dst and returns the extended slice.
	// It takes all n or none: ErrPoolExhausted when fewer are free.
	Alloc(dst []int32, n int) ([]int32, error)
	// Free returns slots to the pool. It frees all of them or none:
	// ErrSlotRange or ErrSlotNotAllocated (double free, a slot listed
	// twice, a slot never allocated) leave the pool as it was.
	Free(slots []int32) error
	// Write copies data (at most SlotBytes bytes) to the start of an
	// allocated slot.
	Write(slot int32, data []byte) error
	// Read copies the first len(dst) bytes (at most SlotBytes) of an
	// allocated slot into dst.
	Read(slot int32, dst []byte) error
	// Copy copies the whole content of allocated slot src to allocated
	// slot dst.
	Copy(dst, src int32) error
	// Capacity is the number of slots the pool manages.
	Capacity() int
	// Available is the number of slots free to allocate.
	Available() int
	// SlotBytes is the size of one slot's storage.
	SlotBytes() int
	// Close releases the storage; later calls return ErrClosed. Closing
	// twice is not an error.
	Close() error
}

// Tier names where a pool's memory lives.
type Tier uint8

const (
	// Device is accelerator memory (or its CPU stand-in in tests).
	Device Tier = iota
	// Host is host memory, the backing tier of HiCache.
	Host

	numTiers = 2
)

// String returns "device" or "host".
func (t Tier) String() string {
	switch t {
	case Device:
		return "device"
	case Host:
		return "host"
	}
	return fmt.Sprintf("tier(%d)", uint8(t))
}

// Pools is the set of pools a Controller executes actions on, one per
// (component, tier). The Full device pool is required; the others are
// looked up when an action names them, so SWA, Mamba and host pools plug
// in without changing the controller's interface.
type Pools interface {
	// Pool returns the pool of component c on tier t, or nil when there
	// is none.
	Pool(c core.Component, t Tier) Pool
	// Close closes every pool in the set.
	Close() error
}

// PoolSet is the plain Pools implementation: a table of pools filled with
// Set.
type PoolSet struct {
	pools [numTiers][3]Pool
}

// NewPoolSet returns a set holding deviceFull as the Full device pool.
func NewPoolSet(deviceFull Pool) *PoolSet {
	s := &PoolSet{}
	s.pools[Device][core.Full] = deviceFull
	return s
}

// Set installs p as the pool of component c on tier t (nil removes it).
func (s *PoolSet) Set(c core.Component, t Tier, p Pool) error {
	if int(c) >= len(s.pools[0]) || t >= numTiers {
		return fmt.Errorf("%w: no pool position for %s on %s", ErrInvalidArgument, c, t)
	}
	s.pools[t][c] = p
	return nil
}

// Pool returns the pool of component c on tier t, or nil.
func (s *PoolSet) Pool(c core.Component, t Tier) Pool {
	if int(c) >= len(s.pools[0]) || t >= numTiers {
		return nil
	}
	return s.pools[t][c]
}

// Close closes every pool and returns the first error.
func (s *PoolSet) Close() error {
	var first error
	for t := range s.pools {
		for c := range s.pools[t] {
			if p := s.pools[t][c]; p != nil {
				if err := p.Close(); err != nil && first == nil {
					first = err
				}
			}
		}
	}
	return first
}

// slotPool is the allocator and storage logic shared by the CPU pools:
// an allocation bitmap, a byte region of capacity*slotBytes, and free
// lists. With page 1 there is one LIFO free list of slots. Paged (page >
// 1), whole free pages sit on a page list and Alloc/Free of whole pages
// cost one list step per page and, for a run of consecutive pages, one
// pass over its slots two at a time and a bitmap word per 64 slots (a
// freed run goes on the list so that it comes back out as the same run);
// slots of pages split by a single-slot Alloc sit on the slot list
// (loose), handed out first, and return there when freed (pages are not
// re-formed).
type slotPool struct {
	name      string
	capacity  int
	slotBytes int
	page      int      // slots per page (1: not paged)
	free      []int32  // free slots outside free pages; the top is handed out next
	pages     []int32  // free whole pages (page numbers); the top is handed out next
	used      []uint64 // allocation bitmap
	// zeroOnFree poisons the canary record of every slot freePaged
	// frees: loose slots at once, whole pages lazily (stale), when they
	// are handed out again.
	zeroOnFree bool
	stale      []uint64 // free pages whose records are still to be zeroed (bit per page)
	pgBuf      []int32  // freePaged scratch: the pages found
	looseBuf   []int32  // freePaged scratch: the other slots
	mem        []byte
	closed     bool
	unmap      func([]byte) error
}

func newSlotPool(name string, capacity, slotBytes, page int) (*slotPool, error) {
	if capacity < 0 || capacity > 1<<31-1 {
		return nil, fmt.Errorf("%w: %s capacity %d out of range [0, 2^31)", ErrInvalidArgument, name, capacity)
	}
	if slotBytes < 0 {
		return nil, fmt.Errorf("%w: %s slot size %d is negative", ErrInvalidArgument, name, slotBytes)
	}
	if page < 1 || page > 1<<20 {
		return nil, fmt.Errorf("%w: %s page size %d out of range [1, 2^20]", ErrInvalidArgument, name, page)
	}
	if slotBytes > 0 && capacity > 0 && capacity > int(^uint(0)>>1)/slotBytes {
		return nil, fmt.Errorf("%w: %s of %d slots of %d bytes overflows", ErrInvalidArgument, name, capacity, slotBytes)
	}
	p := &slotPool{
		name:      name,
		capacity:  capacity,
		slotBytes: slotBytes,
		page:      page,
		used:      make([]uint64, (capacity+63)/64),
	}
	if page > 1 {
		p.stale = make([]uint64, (capacity/page+63)/64)
	}
	// Hand out low slots (pages) first: the lists' tops are the lowest.
	whole := capacity / page
	if page > 1 {
		p.pages = make([]int32, whole)
		for k := range p.pages {
			p.pages[k] = int32(whole - 1 - k)
		}
		whole *= page
	} else {
		whole = 0
	}
	p.free = make([]int32, capacity-whole)
	for k := range p.free {
		p.free[k] = int32(capacity - 1 - k)
	}
	return p, nil
}

func (p *slotPool) isUsed(s int32) bool { return p.used[s>>6]&(1<<(uint(s)&63)) != 0 }
func (p *slotPool) setUsed(s int32)     { p.used[s>>6] |= 1 << (uint(s) & 63) }
func (p *slotPool) clearUsed(s int32)   { p.used[s>>6] &^= 1 << (uint(s) & 63) }

// oneWord returns the word and mask of slots [lo, lo+n) when they lie in
// one bitmap word (a page of up to 64 slots, aligned, always does).
func oneWord(lo int32, n int) (int, uint64, bool) {
	b := uint(lo) & 63
	if n < 1 || int(b)+n > 64 {
		return 0, 0, false
	}
	return int(lo >> 6), ^uint64(0) >> (64 - uint(n)) << b, true
}

// The range operations below cost a word per 64 slots: a run of whole
// pages (the tree's values, when pages come back in order) is a few
// words, with whole words in the middle touched without masks.

func (p *slotPool) setRange(lo int32, n int) {
	if w, m, ok := oneWord(lo, n); ok {
		p.used[w] |= m
		return
	}
	w0, w1, m0, m1 := wordSpan(lo, n)
	p.used[w0] |= m0
	for w := w0 + 1; w < w1; w++ {
		p.used[w] = ^uint64(0)
	}
	p.used[w1] |= m1
}

func (p *slotPool) clearRange(lo int32, n int) {
	if w, m, ok := oneWord(lo, n); ok {
		p.used[w] &^= m
		return
	}
	w0, w1, m0, m1 := wordSpan(lo, n)
	p.used[w0] &^= m0
	clear(p.used[w0+1 : w1])
	p.used[w1] &^= m1
}

func (p *slotPool) allUsed(lo int32, n int) bool {
	if w, m, ok := oneWord(lo, n); ok {
		return p.used[w]&m == m
	}
	w0, w1, m0, m1 := wordSpan(lo, n)
	all := (p.used[w0]&m0 ^ m0) | (p.used[w1]&m1 ^ m1)
	for _, u := range p.used[w0+1 : w1] {
		all |= ^u
	}
	return all == 0
}

// anyBit reports whether any of bits [lo, lo+n) of bm is set.
func anyBit(bm []uint64, lo int32, n int) bool {
	if w, m, ok := oneWord(lo, n); ok {
		return bm[w]&m != 0
	}
	w0, w1, m0, m1 := wordSpan(lo, n)
	any := bm[w0]&m0 | bm[w1]&m1
	for _, u := range bm[w0+1 : w1] {
		any |= u
	}
	return any != 0
}

// wordSpan returns the first and last bitmap words of slots [lo, lo+n)
// (n ≥ 1, in more than one word) and the masks of the slots' bits in
// those two; every word between is all theirs.
func wordSpan(lo int32, n int) (w0, w1 int, m0, m1 uint64) {
	end := int(lo) + n - 1
	w0, w1 = int(lo>>6), end>>6
	return w0, w1, ^uint64(0) << (uint(lo) & 63), ^uint64(0) >> (63 - uint(end)&63)
}

func (p *slotPool) Alloc(dst []int32, n int) ([]int32, error) {
	if p.closed {
		return dst, fmt.Errorf("%w: %s", ErrClosed, p.name)
	}
	if n < 0 {
		return dst, fmt.Errorf("%w: %s: cannot allocate %d slots", ErrInvalidArgument, p.name, n)
	}
	if avail := p.Available(); n > avail {
		return dst, fmt.Errorf("%w: %s: %d slots asked, %d of %d free", ErrPoolExhausted, p.name, n, avail, p.capacity)
	}
	// Loose slots first, then whole pages, then one page split for the rest.
	m := min(n, len(p.free))
	dst = p.popSlots(dst, m)
	if n -= m; n == 0 {
		return dst, nil
	}
	dst = p.popPages(dst, n/p.page, true)
	if r := n % p.page; r > 0 {
		k := len(dst)
		dst = p.popPages(dst, 1, true)
		// The page's last slots become loose, lowest on top.
		for i := len(dst) - 1; i >= k+r; i-- {
			p.clearUsed(dst[i])
			p.free = append(p.free, dst[i])
		}
		dst = dst[:k+r]
	}
	return dst, nil
}

// popSlots moves n slots from the top of the slot list to dst.
func (p *slotPool) popSlots(dst []int32, n int) []int32 {
	top := len(p.free)
	k := len(dst)
	dst = slices.Grow(dst, n)[:k+n]
	out, src := dst[k:], p.free[top-n:top]
	for i := range out {
		s := src[len(src)-1-i] // top of the free stack first
		p.used[s>>6] |= 1 << (uint(s) & 63)
		out[i] = s
	}
	p.free = p.free[:top-n]
	return dst
}

// popPages moves n whole pages from the top of the page list to dst,
// zeroing the records of stale ones when poison is set; without, the
// caller writes every slot of the pages before anyone can read them.
// Consecutive pages on the list (freePaged pushes a run of them lowest
// on top) are handed out as one run: one fill and one bitmap range.
func (p *slotPool) popPages(dst []int32, n int, poison bool) []int32 {
	if n == 0 {
		return dst
	}
	size := p.page
	k := len(dst)
	dst = slices.Grow(dst, n*size)[:k+n*size]
	top := len(p.pages)
	list := p.pages[top-n : top] // handed out from its end
	for j := 0; j < n; {
		pg := list[n-1-j]
		r := 1
		for j+r < n && list[n-1-j-r] == pg+int32(r) {
			r++
		}
		base := pg * int32(size)
		fillSeq(dst[k+j*size:k+(j+r)*size], base)
		p.setRange(base, r*size)
		if anyBit(p.stale, pg, r) { // a word per 64 pages tells there are none
			for q := pg; q < pg+int32(r); q++ {
				if w, bit := q>>6, uint64(1)<<(uint(q)&63); p.stale[w]&bit != 0 {
					p.stale[w] &^= bit
					if poison {
						p.zeroRecords(q*int32(size), size)
					}
				}
			}
		}
		j += r
	}
	p.pages = p.pages[:top-n]
	return dst
}

// PageSize is the number of slots of one page (1: not paged).
func (p *slotPool) PageSize() int { return p.page }

// AvailablePages is the number of whole pages free to allocate.
func (p *slotPool) AvailablePages() int {
	if p.closed {
		return 0
	}
	if p.page == 1 {
		return len(p.free)
	}
	return len(p.pages)
}

// AllocPages appends the slots of n fresh whole pages to dst, all or
// none.
func (p *slotPool) AllocPages(dst []int32, n int) ([]int32, error) {
	if p.closed {
		return dst, fmt.Errorf("%w: %s", ErrClosed, p.name)
	}
	if n < 0 {
		return dst, fmt.Errorf("%w: %s: cannot allocate %d pages", ErrInvalidArgument, p.name, n)
	}
	if avail := p.AvailablePages(); n > avail {
		return dst, fmt.Errorf("%w: %s: %d pages asked, %d whole pages free", ErrPoolExhausted, p.name, n, avail)
	}
	if p.page == 1 {
		return p.popSlots(dst, n), nil
	}
	return p.popPages(dst, n, true), nil
}

// allocPagesToWrite is AllocPages for a caller that writes the canary
// record of every slot of the pages before anyone can read them (the
// controller's Prefill): a stale page is not zeroed first. Only whole
// pages of a paged pool; all or none.
func (p *slotPool) allocPagesToWrite(dst []int32, n int) ([]int32, error) {
	if p.closed || p.page == 1 || n < 0 || n > len(p.pages) {
		return p.AllocPages(dst, n)
	}
	return p.popPages(dst, n, false), nil
}

// FreePages frees whole pages, all or none.
func (p *slotPool) FreePages(slots []int32) error {
	if p.closed {
		return fmt.Errorf("%w: %s", ErrClosed, p.name)
	}
	if len(slots)%p.page != 0 {
		return fmt.Errorf("%w: %s: %d slots are not whole pages of %d", ErrInvalidArgument, p.name, len(slots), p.page)
	}
	for k := 0; k < len(slots); k += p.page {
		if p.pageAt(slots, k) < 0 {
			return fmt.Errorf("%w: %s: slots %d.. (from slot %d) are not one whole page of %d", ErrInvalidArgument, p.name, k, slots[k], p.page)
		}
	}
	return p.Free(slots)
}

// pageAt returns the page whose slots slots[k:k+page] are, in order, or
// -1 when they are not one whole page.
func (p *slotPool) pageAt(slots []int32, k int) int32 {
	size := p.page
	if k+size > len(slots) {
		return -1
	}
	base := slots[k]
	if base < 0 || int(base)%size != 0 || int(base)+size > p.capacity {
		return -1
	}
	if seqLen(slots[k:k+size]) < size {
		return -1
	}
	return base / int32(size)
}

// pagesAt returns the first page and the number of whole pages that
// slots[k:] start with as one consecutive run (slots[k+i] ==
// slots[k]+i, slots[k] a page's first slot), or 0 pages.
func (p *slotPool) pagesAt(slots []int32, k int) (int32, int) {
	size := p.page
	base := slots[k]
	if base < 0 || int(base)%size != 0 || k+size > len(slots) {
		return 0, 0
	}
	// Only whole pages inside the pool: the run may go on past its end
	// (those slots are reported as out of range one by one).
	most := min(len(slots)-k, p.capacity-int(base)) / size * size
	if most == 0 {
		return 0, 0
	}
	return base / int32(size), seqLen(slots[k:k+most]) / size
}

// check validates that s is in range and allocated.
func (p *slotPool) check(s int32) error {
	if s < 0 || int(s) >= p.capacity {
		return fmt.Errorf("%w: %s: slot %d, capacity %d", ErrSlotRange, p.name, s, p.capacity)
	}
	if !p.isUsed(s) {
		return fmt.Errorf("%w: %s: slot %d is free (double free, or never allocated)", ErrSlotNotAllocated, p.name, s)
	}
	return nil
}

func (p *slotPool) Free(slots []int32) error {
	if p.closed {
		return fmt.Errorf("%w: %s", ErrClosed, p.name)
	}
	if p.page > 1 {
		return p.freePaged(slots)
	}
	used, capacity := p.used, uint32(p.capacity)
	for k, s := range slots {
		// The fast path inlines check: in range and allocated.
		if uint32(s) >= capacity || used[s>>6]&(1<<(uint(s)&63)) == 0 {
			err := p.check(s)
			// Undo: every slot before k passed the check and was cleared
			// exactly once (a repeat fails at its second occurrence).
			for _, u := range slots[:k] {
				p.setUsed(u)
			}
			return err
		}
		used[s>>6] &^= 1 << (uint(s) & 63)
	}
	p.free = append(p.free, slots...)
	return nil
}

// freePaged is Free of a paged pool: runs of whole pages go back to the
// page list (a bitmap word per 64 slots), other slots to the slot list.
// All or nothing, like Free; one pass over slots. The pages go on the
// list in reverse, so that they come back out in the order they were
// freed: runs the tree held as consecutive slots are handed out again as
// consecutive slots, and the next free finds them as long runs.
func (p *slotPool) freePaged(slots []int32) error {
	used, capacity := p.used, uint32(p.capacity)
	pages, loose := p.pgBuf[:0], p.looseBuf[:0]
	fail := func(k int, s int32) error {
		err := p.check(s)
		for _, u := range slots[:k] {
			p.setUsed(u)
		}
		// The pages this call gave up were being given up: their
		// records are poisoned now, as the loose slots' were.
		for _, pg := range pages {
			if p.stale[pg>>6]&(1<<(uint(pg)&63)) != 0 {
				p.stale[pg>>6] &^= 1 << (uint(pg) & 63)
				p.zeroRecords(pg*int32(p.page), p.page)
			}
		}
		p.pgBuf, p.looseBuf = pages[:0], loose[:0]
		return err
	}
	for k := 0; k < len(slots); {
		if pg, np := p.pagesAt(slots, k); np > 0 {
			base, n := pg*int32(p.page), np*p.page
			if !p.allUsed(base, n) {
				// A slot of the run is free: find it for the error.
				for i := k; i < k+n; i++ {
					if !p.isUsed(slots[i]) {
						return fail(i, slots[i])
					}
					p.clearUsed(slots[i])
				}
			}
			p.clearRange(base, n)
			for q := pg; q < pg+int32(np); q++ {
				if p.zeroOnFree {
					// Poisoned when handed out again (popPages): nothing
					// reads a free slot's record, and a page the next
					// Prefill takes is written whole anyway.
					p.stale[q>>6] |= 1 << (uint(q) & 63)
				}
				pages = append(pages, q)
			}
			k += n
			continue
		}
		s := slots[k]
		if uint32(s) >= capacity || used[s>>6]&(1<<(uint(s)&63)) == 0 {
			return fail(k, s)
		}
		used[s>>6] &^= 1 << (uint(s) & 63)
		if p.zeroOnFree {
			p.zeroRecords(s, 1)
		}
		loose = append(loose, s)
		k++
	}
	top := len(p.pages)
	p.pages = append(p.pages, pages...)
	slices.Reverse(p.pages[top:])
	p.free = append(p.free, loose...)
	p.pgBuf, p.looseBuf = pages[:0], loose[:0]
	return nil
}

// zeroRecords zeroes the canary records of slots [lo, lo+n) (the whole
// slots when a record is all a slot holds). A Free that then fails on a
// later slot has still poisoned these: they were being given up.
func (p *slotPool) zeroRecords(lo int32, n int) {
	sz := p.slotBytes
	off := int(lo) * sz
	if sz == CanaryBytes {
		clear(p.mem[off : off+n*sz])
		return
	}
	for i := range n {
		clear(p.mem[off+i*sz : off+i*sz+CanaryBytes])
	}
}

func (p *slotPool) span(s int32) []byte {
	off := int(s) * p.slotBytes
	return p.mem[off : off+p.slotBytes : off+p.slotBytes]
}

func (p *slotPool) Write(slot int32, data []byte) error {
	if p.closed {
		return fmt.Errorf("%w: %s", ErrClosed, p.name)
	}
	if err := p.check(slot); err != nil {
		return err
	}
	if len(data) > p.slotBytes {
		return fmt.Errorf("%w: %s: writing %d bytes into a slot of %d", ErrInvalidArgument, p.name, len(data), p.slotBytes)
	}
	copy(p.span(slot), data)
	return nil
}

func (p *slotPool) Read(slot int32, dst []byte) error {
	if p.closed {
		return fmt.Errorf("%w: %s", ErrClosed, p.name)
	}
	if err := p.check(slot); err != nil {
		return err
	}
	if len(dst) > p.slotBytes {
		return fmt.Errorf("%w: %s: reading %d bytes from a slot of %d", ErrInvalidArgument, p.name, len(dst), p.slotBytes)
	}
	copy(dst, p.span(slot))
	return nil
}

func (p *slotPool) Copy(dst, src int32) error {
	if p.closed {
		return fmt.Errorf("%w: %s", ErrClosed, p.name)
	}
	if err := p.check(dst); err != nil {
		return err
	}
	if err := p.check(src); err != nil {
		return err
	}
	copy(p.span(dst), p.span(src))
	return nil
}

// slotSpan is implemented by this package's pools: the bytes of an
// allocated slot, for copies between pools without a staging buffer.
type slotSpan interface {
	slotSpan(s int32) ([]byte, error)
}

func (p *slotPool) slotSpan(s int32) ([]byte, error) {
	if p.closed {
		return nil, fmt.Errorf("%w: %s", ErrClosed, p.name)
	}
	if err := p.check(s); err != nil {
		return nil, err
	}
	return p.span(s), nil
}

func (p *slotPool) Capacity() int  { return p.capacity }
func (p *slotPool) SlotBytes() int { return p.slotBytes }

func (p *slotPool) Available() int {
	if p.closed {
		return 0
	}
	return len(p.free) + len(p.pages)*p.page
}

func (p *slotPool) Close() error {
	if p.closed {
		return nil
	}
	p.closed = true
	mem := p.mem
	p.mem = nil
	if p.unmap != nil && mem != nil {
		if err := p.unmap(mem); err != nil {
			return fmt.Errorf("native: %s: unmapping %d bytes: %w", p.name, len(mem), err)
		}
	}
	return nil
}

// MemPool is a Pool whose storage is ordinary Go memory: the mock device
// pool of tests and CPU-only runs.
type MemPool struct{ slotPool }

// NewMemPool returns a pool of capacity slots of slotBytes bytes each
// (slotBytes may be 0 for an allocator without storage).
// Errors: ErrInvalidArgument.
func NewMemPool(capacity, slotBytes int) (*MemPool, error) {
	return NewPagedMemPool(capacity, slotBytes, 1)
}

// NewPagedMemPool returns a MemPool that allocates by pages of pageSize
// slots (see PagedPool); pageSize 1 is NewMemPool. A controller whose
// tree has the same page size allocates and frees its Full device slots
// a page at a time in such a pool.
// Errors: ErrInvalidArgument.
func NewPagedMemPool(capacity, slotBytes, pageSize int) (*MemPool, error) {
	sp, err := newSlotPool("mem pool", capacity, slotBytes, pageSize)
	if err != nil {
		return nil, err
	}
	sp.mem = make([]byte, capacity*slotBytes)
	return &MemPool{*sp}, nil
}

// MmapPool is a Pool whose storage is an anonymous private mapping of
// host memory, released by Close.
type MmapPool struct{ slotPool }

// NewMmapPool maps capacity*slotBytes bytes of host memory (slotBytes ≥
// 1) and returns a pool over it (NewPagedMmapPool with pages of 1).
// Errors: ErrInvalidArgument, ErrMmapUnavailable (the platform has no
// mmap or the call failed; fall back to NewMemPool).
func NewMmapPool(capacity, slotBytes int) (*MmapPool, error) {
	return NewPagedMmapPool(capacity, slotBytes, 1)
}

// NewPagedMmapPool is NewMmapPool with pages of pageSize slots (see
// PagedPool and NewPagedMemPool).
// Errors: ErrInvalidArgument, ErrMmapUnavailable.
func NewPagedMmapPool(capacity, slotBytes, pageSize int) (*MmapPool, error) {
	if slotBytes < 1 || capacity < 1 {
		return nil, fmt.Errorf("%w: mmap pool needs at least one slot of at least one byte (got %d slots of %d bytes)", ErrInvalidArgument, capacity, slotBytes)
	}
	sp, err := newSlotPool("mmap pool", capacity, slotBytes, pageSize)
	if err != nil {
		return nil, err
	}
	mem, err := mapAnon(capacity * slotBytes)
	if err != nil {
		return nil, err
	}
	sp.mem = mem
	sp.unmap = unmapAnon
	return &MmapPool{*sp}, nil
}

var (
	_ PagedPool = (*MemPool)(nil)
	_ PagedPool = (*MmapPool)(nil)
	_ Pools     = (*PoolSet)(nil)
)

// SlotLister is a Pool that can list its allocated slots. A Controller
// needs it to recover from a failed engine (Controller.ReplaceEngine):
// the slots the lost tree held are known only as the allocated ones no
// running request owns. This package's pools, pooltest's and host/cuda's
// implement it.
type SlotLister interface {
	// Allocated appends every allocated slot to dst, in ascending order.
	// A wrapper whose pool cannot list returns an error.
	Allocated(dst []int32) ([]int32, error)
}

// Allocated implements SlotLister.
func (p *slotPool) Allocated(dst []int32) ([]int32, error) {
	if p.closed {
		return dst, fmt.Errorf("%w: %s", ErrClosed, p.name)
	}
	for w, word := range p.used {
		for word != 0 {
			b := word & -word
			word ^= b
			dst = append(dst, int32(w*64+bits.TrailingZeros64(b)))
		}
	}
	return dst, nil
}

// Slot runs: the pools write and check runs of consecutive slots (a
// page's, a run of pages') two at a time through a 64-bit view of the
// int32 slice's memory, on little-endian machines (where the pair s, s+1
// is the word s | (s+1)<<32); elsewhere, and at an unaligned head or an
// odd tail, one at a time.

// pairStep advances a pair word by two slots in each half.
const pairStep = 2 | 2<<32

func slotPair(s int32) uint64 { return uint64(uint32(s)) | uint64(uint32(s+1))<<32 }

// fillSeq sets out[i] = base+i. base+len(out) must not pass 2^31 (the
// slots of a pool do not).
func fillSeq(out []int32, base int32) {
	i := 0
	if littleEndian && len(out) >= 8 {
		head, u := wordview.Words64(out)
		if head == 1 {
			out[0] = base
		}
		v := slotPair(base + int32(head))
		j := 0
		for ; j+4 <= len(u); j += 4 {
			x := (*[4]uint64)(u[j:])
			x[0], x[1], x[2], x[3] = v, v+pairStep, v+2*pairStep, v+3*pairStep
			v += 4 * pairStep
		}
		for ; j < len(u); j++ {
			u[j] = v
			v += pairStep
		}
		i = head + 2*len(u)
	}
	for ; i < len(out); i++ {
		out[i] = base + int32(i)
	}
}

// seqLen returns how many of s, from the first, are consecutive:
// s[i] == s[0]+i. s[0]+len(s) must not pass 2^31 (a caller bounds s by
// the pool's capacity, so no expected value wraps to a negative one).
func seqLen(s []int32) int {
	if len(s) == 0 {
		return 0
	}
	base, i := s[0], 0
	if littleEndian && len(s) >= 8 {
		head, u := wordview.Words64(s)
		v := slotPair(base + int32(head))
		j := 0
		for ; j+4 <= len(u); j += 4 {
			x := (*[4]uint64)(u[j:])
			if (x[0]^v)|(x[1]^(v+pairStep))|(x[2]^(v+2*pairStep))|(x[3]^(v+3*pairStep)) != 0 {
				break
			}
			v += 4 * pairStep
		}
		for ; j < len(u) && u[j] == v; j++ {
			v += pairStep
		}
		// s[0] is base by definition; the scalar loop goes on from the
		// first pair that differs (or the tail).
		i = head + 2*j
	}
	for i < len(s) && s[i] == base+int32(i) {
		i++
	}
	return i
}
