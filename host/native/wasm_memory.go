package native

import "github.com/tetratelabs/wazero/experimental"

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
	if mem, err := reserveAnon(max); err == nil {
		return &mappedMemory{mem: mem}
	}
	return &doublingMemory{max: max, buf: make([]byte, 0, capacity)}
}

// mappedMemory is a reserved mapping of the maximum size.
type mappedMemory struct{ mem []byte }

func (m *mappedMemory) Reallocate(size uint64) []byte {
	if size > uint64(len(m.mem)) {
		return nil
	}
	return m.mem[:size]
}

func (m *mappedMemory) Free() {
	if m.mem != nil {
		_ = unmapAnon(m.mem)
		m.mem = nil
	}
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
