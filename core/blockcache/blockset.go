package blockcache

// denseLimit bounds the bitmap part of a blockSet (2 MiB of bits); larger
// ids, rare in a pool-indexed cache, go to a map.
const denseLimit = 1 << 24

// blockSet is a set of block ids: a bitmap for the dense ids a pool hands
// out, a map for the rest. Membership tests are in every insert's loop.
type blockSet struct {
	bits   []uint64
	sparse map[uint32]bool
	n      int
}

func (s *blockSet) has(b uint32) bool {
	if b < denseLimit {
		w := int(b >> 6)
		return w < len(s.bits) && s.bits[w]&(1<<(b&63)) != 0
	}
	return s.sparse[b]
}

func (s *blockSet) add(b uint32) {
	if s.has(b) {
		return
	}
	s.n++
	if b < denseLimit {
		w := int(b >> 6)
		if w >= len(s.bits) {
			s.bits = append(s.bits, make([]uint64, w+1-len(s.bits)+len(s.bits)/2)...)
		}
		s.bits[w] |= 1 << (b & 63)
		return
	}
	if s.sparse == nil {
		s.sparse = map[uint32]bool{}
	}
	s.sparse[b] = true
}

func (s *blockSet) del(b uint32) {
	if !s.has(b) {
		return
	}
	s.n--
	if b < denseLimit {
		s.bits[b>>6] &^= 1 << (b & 63)
		return
	}
	delete(s.sparse, b)
}

func (s *blockSet) len() int { return s.n }
