package native

import (
	"sync"

	"github.com/tetratelabs/wazero/experimental"
)

// guestMemory backs each module instance's linear memory. Go's wasm
// runtime grows its heap a few pages at a time, and wazero's default
// allocator copies the whole memory on every growth: in a trace replay
// that copying took more time than the cache itself. This allocator
// reserves the maximum up front where it can (an anonymous mapping whose
// pages cost nothing until touched), so growing is a re-slice; elsewhere
// it doubles the capacity, so the copies add up to at most twice the
// final size.
type guestMemory struct{}

func (guestMemory) Allocate(capacity, max uint64) experimental.LinearMemory {
	if m := warmMemories.take(max); m != nil {
		return m
	}
	if mem, err := reserveAnon(max); err == nil {
		return &mappedMemory{mem: mem}
	}
	return &doublingMemory{max: max, buf: make([]byte, 0, capacity)}
}

// mappedMemory is a reserved mapping of the maximum size; used is how
// much of it an instance ever had (the pages that may have been touched).
type mappedMemory struct {
	mem  []byte
	used uint64
}

func (m *mappedMemory) Reallocate(size uint64) []byte {
	if size > uint64(len(m.mem)) {
		return nil
	}
	m.used = max(m.used, size)
	return m.mem[:size]
}

func (m *mappedMemory) Free() {
	if m.mem == nil {
		return
	}
	if !warmMemories.keep(m) {
		_ = unmapAnon(m.mem)
	}
	m.mem = nil
}

// warmMemories keeps the mappings of a few closed instances for the next
// ones. A fresh mapping costs a page fault (and the kernel's zeroing) for
// every page the guest first touches: ~10k faults, ~35 ms of system time
// for an engine that replays the shared trace, paid again by every new
// engine. Zeroing a kept mapping's used bytes in place costs a few ms and
// no faults. The pool is small and bounded in bytes, so closing many
// engines does not pin their memory.
var warmMemories = warmPool{maxMaps: 2, maxBytes: 512 << 20}

type warmPool struct {
	mu                sync.Mutex
	maps              []*mappedMemory
	maxMaps           int
	maxBytes, holding uint64
}

// keep takes m's mapping into the pool, unless the pool is full.
func (p *warmPool) keep(m *mappedMemory) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.maps) >= p.maxMaps || p.holding+m.used > p.maxBytes {
		return false
	}
	p.maps = append(p.maps, &mappedMemory{mem: m.mem, used: m.used})
	p.holding += m.used
	return true
}

// take returns a kept mapping of size max, its used bytes zeroed (a new
// linear memory reads as zero), or nil.
func (p *warmPool) take(size uint64) *mappedMemory {
	p.mu.Lock()
	var m *mappedMemory
	for k, c := range p.maps {
		if uint64(len(c.mem)) == size {
			m = c
			p.maps = append(p.maps[:k], p.maps[k+1:]...)
			p.holding -= c.used
			break
		}
	}
	p.mu.Unlock()
	if m == nil {
		return nil
	}
	clear(m.mem[:m.used])
	m.used = 0
	return m
}

// doublingMemory grows a Go slice by doubling its capacity.
type doublingMemory struct {
	max uint64
	buf []byte
}

func (m *doublingMemory) Reallocate(size uint64) []byte {
	if size > m.max {
		return nil
	}
	if size <= uint64(cap(m.buf)) {
		// Memory never shrinks, so bytes past the old length were never
		// exposed and are still zero.
		m.buf = m.buf[:size]
		return m.buf
	}
	next := min(max(2*uint64(cap(m.buf)), size), m.max)
	nb := make([]byte, size, next)
	copy(nb, m.buf)
	m.buf = nb
	return m.buf
}

func (m *doublingMemory) Free() { m.buf = nil }
