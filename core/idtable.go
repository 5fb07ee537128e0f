package core

import "fmt"

// idTable maps 64-bit keys to non-negative int32 values (arena or record
// indices) by open addressing with linear probing. It replaces Go maps on
// the per-request paths (edges, receipts): a Go map hashes through the
// runtime's generic hash in the WebAssembly build, several times slower
// than this one multiply, and its operations are calls into the runtime.
// Nothing iterates the table for an output, so its layout never leaks.
type idTable struct {
	slots []idSlot // power-of-two length, or nil
	n     int      // occupied slots
	shift uint     // 64 - log2(len(slots))
}

// idSlot is one table slot; val holds the value plus one, so the zero
// slot is empty and clearing the slice empties the table.
type idSlot struct {
	key uint64
	val int32
}

// home is key's preferred slot (Fibonacci hashing: the top bits of the
// product, which depend on every bit of the key).
func (m *idTable) home(key uint64) int {
	return int((key * 0x9e3779b97f4a7c15) >> m.shift)
}

// get returns key's value.
func (m *idTable) get(key uint64) (int32, bool) {
	if m.n == 0 {
		return 0, false
	}
	mask := len(m.slots) - 1
	for j := m.home(key); ; j = (j + 1) & mask {
		s := &m.slots[j]
		if s.val == 0 {
			return 0, false
		}
		if s.key == key {
			return s.val - 1, true
		}
	}
}

// put sets key's value (v >= 0), adding the key if absent.
func (m *idTable) put(key uint64, v int32) {
	if 2*(m.n+1) > len(m.slots) {
		m.grow()
	}
	mask := len(m.slots) - 1
	for j := m.home(key); ; j = (j + 1) & mask {
		s := &m.slots[j]
		if s.val == 0 {
			s.key, s.val = key, v+1
			m.n++
			return
		}
		if s.key == key {
			s.val = v + 1
			return
		}
	}
}

// del removes key, if present. The entries after it on its probe run
// move back into the hole when their home allows, so the table needs no
// tombstones and a lookup stops at the first empty slot.
func (m *idTable) del(key uint64) {
	if m.n == 0 {
		return
	}
	mask := len(m.slots) - 1
	hole := m.home(key)
	for ; m.slots[hole].key != key || m.slots[hole].val == 0; hole = (hole + 1) & mask {
		if m.slots[hole].val == 0 {
			return
		}
	}
	for k := (hole + 1) & mask; m.slots[k].val != 0; k = (k + 1) & mask {
		// The entry at k may fill the hole if the hole lies on its probe
		// path: between its home and k, cyclically.
		if h := m.home(m.slots[k].key); (k-h)&mask >= (k-hole)&mask {
			m.slots[hole] = m.slots[k]
			hole = k
		}
	}
	m.slots[hole] = idSlot{}
	m.n--
}

// grow doubles the table (16 slots at first) and reinserts every entry.
func (m *idTable) grow() {
	old := m.slots
	size := max(16, 2*len(old))
	m.slots = make([]idSlot, size)
	m.shift = 64
	for s := size; s > 1; s >>= 1 {
		m.shift--
	}
	m.n = 0
	for _, s := range old {
		if s.val != 0 {
			m.put(s.key, s.val-1)
		}
	}
}

// reset empties the table, keeping its slots.
func (m *idTable) reset() {
	clear(m.slots)
	m.n = 0
}

// each calls f on every entry, in slot order (for checks and counts
// only: the order must not reach an output).
func (m *idTable) each(f func(key uint64, v int32)) {
	for _, s := range m.slots {
		if s.val != 0 {
			f(s.key, s.val-1)
		}
	}
}

// check reports a broken table: a count that disagrees with the slots, or
// an entry a lookup would not find (an empty slot between its home and
// its place).
func (m *idTable) check() error {
	n := 0
	var bad error
	mask := len(m.slots) - 1
	for j, s := range m.slots {
		if s.val == 0 {
			continue
		}
		n++
		if s.val < 0 && bad == nil {
			bad = fmt.Errorf("slot %d holds value %d", j, s.val-1)
		}
		for k := m.home(s.key); k != j; k = (k + 1) & mask {
			if m.slots[k].val == 0 && bad == nil {
				bad = fmt.Errorf("key %#x at slot %d is unreachable from its home slot %d", s.key, j, m.home(s.key))
				break
			}
		}
	}
	if n != m.n && bad == nil {
		bad = fmt.Errorf("%d occupied slots, count says %d", n, m.n)
	}
	return bad
}
