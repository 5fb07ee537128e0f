package core

// ghostKey names an evicted leaf: its parent, namespace and first page
// (edge is the leaf's edge-table key, which mixes the three).
type ghostKey struct {
	parent NodeID
	ns     uint32
	edge   uint64
}

// ghostSet remembers recently evicted leaves (the lrfu and admit policies'
// ghosts) by key, each with the atoms it stood for and a policy value V,
// and forgets the oldest once more atoms are remembered than a limit. A
// FIFO ring of insertions orders them, so trimming is O(1) amortised and
// no map order is ever observed.
type ghostSet[V any] struct {
	byKey map[ghostKey]ghostEntry[V]
	ring  []ghostRef // insertions, oldest at head
	head  int
	seq   uint64
	atoms int // atoms the live ghosts stand for
	// keepDropped makes put collect the ghosts it forgets (pushed out or
	// replaced) in dropped, for a policy that learns from expiries (lhd);
	// the caller empties it.
	keepDropped bool
	dropped     []ghostEntry[V]
}

type ghostEntry[V any] struct {
	v     V
	atoms int
	seq   uint64 // matches the ring entry that owns it
}

type ghostRef struct {
	key ghostKey
	seq uint64
}

func (s *ghostSet[V]) reset() {
	clear(s.byKey)
	*s = ghostSet[V]{byKey: s.byKey, ring: s.ring[:0], keepDropped: s.keepDropped, dropped: s.dropped[:0]}
}

// put records k's ghost (replacing an older one under the same key), then
// forgets the oldest ghosts while they stand for more than limit atoms.
func (s *ghostSet[V]) put(k ghostKey, v V, atoms, limit int) {
	if s.byKey == nil {
		s.byKey = make(map[ghostKey]ghostEntry[V])
	}
	if old, ok := s.byKey[k]; ok {
		s.atoms -= old.atoms
		if s.keepDropped {
			s.dropped = append(s.dropped, old)
		}
	}
	s.seq++
	s.byKey[k] = ghostEntry[V]{v: v, atoms: atoms, seq: s.seq}
	s.atoms += atoms
	s.ring = append(s.ring, ghostRef{k, s.seq})
	for s.atoms > limit && s.head < len(s.ring) {
		r := s.ring[s.head]
		s.head++
		// A replaced ghost left its ring entry behind: skip it.
		if g, ok := s.byKey[r.key]; ok && g.seq == r.seq {
			delete(s.byKey, r.key)
			s.atoms -= g.atoms
			if s.keepDropped {
				s.dropped = append(s.dropped, g)
			}
		}
	}
	if s.head > 64 && s.head > len(s.ring)/2 {
		s.ring = s.ring[:copy(s.ring, s.ring[s.head:])]
		s.head = 0
	}
}

// take removes k's ghost and returns its value.
func (s *ghostSet[V]) take(k ghostKey) (V, bool) {
	_, v, ok := s.takeAtoms(k)
	return v, ok
}

// takeAtoms is take that also returns the atoms the ghost stood for.
func (s *ghostSet[V]) takeAtoms(k ghostKey) (int, V, bool) {
	g, ok := s.byKey[k]
	if !ok {
		var zero V
		return 0, zero, false
	}
	delete(s.byKey, k)
	s.atoms -= g.atoms
	return g.atoms, g.v, true
}
