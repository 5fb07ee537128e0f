package core

import (
	"math"
	"math/bits"
)

// The lhd policy ranks leaves by learned hit density (LHD, Beckmann et al.,
// NSDI 2018), adapted to a prefix tree: the leaf with the fewest expected
// hit atoms per atom and per tick of the time it would still stay goes
// first.
//
// Objects and events. Every node is an object whose lifetime runs from its
// last access (a match that walks through it, or its creation) to the end
// of that lifetime: a hit (a match walks through it again), a would-be
// hit (an insert recreates it from its ghost after its eviction) or a
// censoring (its ghost expires, so nothing more is known). Each event is
// counted, weighted by the node's device atoms, in a histogram of its
// class and of its age (ticks since the last access) bucket. A hit on a
// node saves its atoms and keeping it costs its atoms, so size cancels
// out of the density and the rank depends on class and age only.
//
// Classes are the number of returns of the node's content (matches, and
// recreations of an evicted leaf), in octaves: never, once, 2–3 times,
// 4 or more (lhdClasses). Ages are in logarithmic buckets, lhdSub per
// octave, so any clock scale gets the same relative resolution.
//
// Ghosts make the histograms see beyond the cache: without them a policy
// only observes the hits its own evictions allow, and long reuse
// distances would stay invisible. An evicted leaf's ghost (parent,
// namespace and first page, as lrfu's and admit's) lives for lhdHistory
// cache-sizes of evicted atoms; its eviction is not an event, its return
// is a hit at the age since its last access, and its expiry is a
// censoring at the age it reached. The histograms thus describe lifetimes
// as if nothing had been evicted before the ghost horizon.
//
// Density. Per class, from the oldest bucket down, the hit atoms and the
// remaining atom-ticks of every lifetime that reached an age are summed;
// their ratio is the density at that age (LHD's conditional expectation).
// Lifetimes still running in the ghosts count as censored at their
// current age. It is recomputed after every cache-size of evicted atoms,
// and then every counter loses 1/2^lhdDecay, so the histograms follow a
// changing stream with a memory of about 2^lhdDecay refits. Densities are
// rounded to lhdSubLog2 mantissa bits, and ties go in lru order. Before
// the first refit, and at ages no lifetime of the class reached, the
// density is 0, which is plain lru.
//
// Cost: per matched node, a bucket index and a counter addition; per
// victim, a ghost insert (and the censorings of the ghosts it pushes out);
// per new leaf, a ghost probe; per cache-size of evicted atoms, a refit of
// O(lhdClasses·buckets) and a pass over the ghosts; the key is O(1) (a
// table lookup).

// Constants chosen from first principles, not fitted (RATIONALE.md shows
// the results barely move when each is halved or doubled); variables only
// so that the sensitivity test can vary them.
var (
	lhdSubLog2 = 2  // log2 of the age buckets per octave: 4, a 19% step
	lhdClasses = 4  // return counts 0, 1, 2–3, 4+
	lhdHistory = 16 // ghosts cover this many cache-sizes of evicted atoms
	lhdDecay   = 5  // counters lose 1/32 per refit
	lhdRefit   = 0  // refit every 2^lhdRefit cache-sizes of evicted atoms
)

// lhdOctaves bounds the ages told apart (2^lhdOctaves ticks); older ages
// share the last bucket.
const lhdOctaves = 48

type lhdGhost struct {
	last    int64 // the victim's last access
	returns uint8 // its returns
}

// lhdState is the lhd policy's learning state.
type lhdState struct {
	subLog2 int      // lhdSubLog2, fixed at first use
	sub     int      // buckets per octave, 1 << subLog2
	classes int      // lhdClasses, fixed at first use
	hits    []uint64 // [class*buckets + bucket]: hit atoms
	ends    []uint64 // censored atoms (expired ghosts)
	dens    []int64  // density per class and bucket, as ordered bits
	ghosts  ghostSet[lhdGhost]
	evicted int64 // atoms evicted so far
	refitAt int64 // evicted count at which the next refit is due
	refits  int64
}

func (s *lhdState) reset() {
	s.ghosts.reset()
	clear(s.hits)
	clear(s.ends)
	clear(s.dens)
	*s = lhdState{subLog2: s.subLog2, sub: s.sub, classes: s.classes, hits: s.hits, ends: s.ends, dens: s.dens, ghosts: s.ghosts}
}

func (s *lhdState) buckets() int { return s.sub * lhdOctaves }

// init sizes the tables on first use.
func (s *lhdState) init() {
	if s.hits != nil {
		return
	}
	s.subLog2, s.classes = lhdSubLog2, lhdClasses
	s.sub = 1 << s.subLog2
	n := s.classes * s.buckets()
	s.hits, s.ends, s.dens = make([]uint64, n), make([]uint64, n), make([]int64, n)
	s.ghosts.keepDropped = true
}

// bucket maps an age in ticks to its bucket: ages 0..sub-1 one each, then
// sub buckets per octave (of age+sub).
func (s *lhdState) bucket(age int64) int {
	if age < 0 {
		age = 0
	}
	v := uint64(age) + uint64(s.sub)
	e := bits.Len64(v) - 1 - s.subLog2 // octave above the first, ≥ 0
	b := e*s.sub + int(v>>e) - s.sub
	return min(b, s.buckets()-1)
}

// width is how many ages bucket b holds.
func (s *lhdState) width(b int) float64 { return float64(uint64(1) << (b / s.sub)) }

// class maps a return count to its class: octaves, capped.
func (s *lhdState) class(returns uint8) int {
	return min(bits.Len8(returns), s.classes-1)
}

func (s *lhdState) slot(returns uint8, age int64) int {
	return s.class(returns)*s.buckets() + s.bucket(age)
}

func lhdKey(t *Tree, n *node) (int64, int64) {
	s := &t.lhd
	if s.dens == nil {
		return 0, n.lastAccess
	}
	return s.dens[s.slot(n.lhdReturns, t.tick-n.lastAccess)], n.lastAccess
}

// lhdMatch counts a hit on a node a match walks through, before the match
// restamps it.
func lhdMatch(t *Tree, n *node) {
	s := &t.lhd
	s.init()
	if a := len(n.dev[Full]); a > 0 {
		s.hits[s.slot(n.lhdReturns, t.tick-n.lastAccess)] += uint64(a)
	}
	if n.lhdReturns < math.MaxUint8 {
		n.lhdReturns++
	}
}

// lhdEvict leaves the victim's ghost, censors the ghosts it pushes out and
// refits once a cache-size of atoms went since the last refit.
func lhdEvict(t *Tree, n *node) {
	s := &t.lhd
	s.init()
	atoms := len(n.dev[Full])
	cache := t.evictable[Full] + t.protected[Full]
	s.evicted += int64(atoms)
	if n.parent != nilIdx {
		k := ghostKey{t.handle(n.parent), n.ns, n.edgeKey}
		s.ghosts.put(k, lhdGhost{last: n.lastAccess, returns: n.lhdReturns}, atoms, lhdHistory*cache)
		for _, g := range s.ghosts.dropped {
			s.ends[s.slot(g.v.returns, t.tick-g.v.last)] += uint64(g.atoms)
		}
		s.ghosts.dropped = s.ghosts.dropped[:0]
	}
	if s.evicted >= s.refitAt {
		s.pending(t, +1)
		s.refit()
		s.pending(t, -1)
		s.decay()
		s.refitAt = s.evicted + max(shift(int64(cache), lhdRefit), 1)
	}
}

// lhdInsert counts a would-be hit when a new leaf recreates an evicted one,
// and gives the leaf the victim's returns plus this one.
func lhdInsert(t *Tree, i int32) {
	s := &t.lhd
	s.init()
	n := &t.nodes[i]
	k := ghostKey{t.handle(n.parent), n.ns, n.edgeKey}
	atoms, g, ok := s.ghosts.takeAtoms(k)
	if !ok {
		return
	}
	s.hits[s.slot(g.returns, n.lastAccess-g.last)] += uint64(atoms)
	n.lhdReturns = g.returns
	if n.lhdReturns < math.MaxUint8 {
		n.lhdReturns++
	}
}

// shift is x·2^k for any sign of k.
func shift(x int64, k int) int64 {
	if k < 0 {
		return x >> -k
	}
	return x << k
}

// refit recomputes the densities from the histograms.
func (s *lhdState) refit() {
	s.refits++
	nb := s.buckets()
	// Densities within one step of 2^-lhdSubLog2 (the age buckets'
	// resolution) tie, and ties go in lru order: finer differences are
	// noise of a few hundred leaves.
	drop := uint(52 - s.subLog2)
	for c := range s.classes {
		hits, ends, dens := s.hits[c*nb:(c+1)*nb], s.ends[c*nb:(c+1)*nb], s.dens[c*nb:(c+1)*nb]
		// cumHits: hit atoms at ages ≥ b; alive: atoms of lifetimes that
		// reach bucket b; life: their remaining atom-ticks from b's start.
		var cumHits, alive, life float64
		for b := nb - 1; b >= 0; b-- {
			h, e := float64(hits[b]), float64(ends[b])
			w := s.width(b)
			// Lifetimes ending inside the bucket stay half of it on average.
			life += float64(alive*w) + float64((h+e)*w)/2
			alive += h + e
			cumHits += h
			if life > 0 {
				dens[b] = int64(math.Float64bits(cumHits/life) >> drop << drop)
			} else {
				dens[b] = 0
			}
		}
	}
}

// decay ages the histograms.
func (s *lhdState) decay() {
	for b := range s.hits {
		s.hits[b] -= s.hits[b] >> lhdDecay
		s.ends[b] -= s.ends[b] >> lhdDecay
	}
}

// pending adds (sign +1) or removes (-1) the live ghosts as censored at
// their current age: a refit counts the lifetimes still running (evicted
// leaves not yet back) as having lasted at least that long, else only the
// ones that ended, mostly in a return, would be seen and every density at
// a long age would be overrated. The scan is O(ghosts) once per cache-size
// of evicted atoms: amortised lhdHistory ghosts per evicted leaf.
func (s *lhdState) pending(t *Tree, sign int) {
	now := t.tick
	g := &s.ghosts
	for _, r := range g.ring[g.head:] {
		e, ok := g.byKey[r.key]
		if !ok || e.seq != r.seq {
			continue
		}
		k := s.slot(e.v.returns, now-e.v.last)
		if sign > 0 {
			s.ends[k] += uint64(e.atoms)
		} else {
			s.ends[k] -= uint64(e.atoms)
		}
	}
}
