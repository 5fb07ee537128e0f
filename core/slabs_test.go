package core

import (
	"math/rand"
	"testing"
)

// slabModel drives a slabAlloc and checks it against a naive reference:
// the owner of every slab element (0 = free). A tree cuts a range in two
// on a split and frees the halves separately, so the model does too.
type slabModel struct {
	t      *testing.T
	a      slabAlloc[uint32]
	owner  [][]int32
	pieces []slabPiece
	nextID int32
}

type slabPiece struct {
	id  int32
	buf []uint32
	at  slabRef
}

func newSlabModel(t *testing.T, minSlab, maxSlab int) *slabModel {
	m := &slabModel{t: t, nextID: 1}
	m.a.minSlab, m.a.maxSlab = minSlab, maxSlab
	return m
}

// longestFree is the longest run of free elements in the reference.
func (m *slabModel) longestFree() int {
	best := 0
	for _, o := range m.owner {
		run := 0
		for _, id := range o {
			if id == 0 {
				run++
				best = max(best, run)
			} else {
				run = 0
			}
		}
	}
	return best
}

func (m *slabModel) alloc(n int) {
	m.t.Helper()
	fits := m.longestFree() >= n
	slabs, own := len(m.a.slabs), m.a.own
	buf, at := m.a.alloc(n)
	if len(buf) != n || cap(buf) != n {
		m.t.Fatalf("alloc(%d): len %d cap %d", n, len(buf), cap(buf))
	}
	for len(m.owner) < len(m.a.slabs) {
		m.owner = append(m.owner, make([]int32, len(m.a.slabs[len(m.owner)])))
	}
	switch {
	case n > m.a.slabLimit():
		if at != (slabRef{}) || m.a.own != own+1 {
			m.t.Fatalf("alloc(%d) over the slab limit %d: ref %v, own %d", n, m.a.slabLimit(), at, m.a.own)
		}
	case at.slab == 0:
		m.t.Fatalf("alloc(%d) within the slab limit returned no ref", n)
	case fits && len(m.a.slabs) != slabs:
		m.t.Fatalf("alloc(%d) added a slab although a free run of %d fits", n, m.longestFree())
	case !fits && len(m.a.slabs) != slabs+1:
		m.t.Fatalf("alloc(%d) with no free run that fits: %d slabs, had %d", n, len(m.a.slabs), slabs)
	}
	id := m.nextID
	m.nextID++
	if at.slab != 0 {
		s, off := int(at.slab-1), int(at.off)
		if &m.a.slabs[s][off] != &buf[0] {
			m.t.Fatalf("alloc(%d): the ref %v does not name the returned range", n, at)
		}
		for k := off; k < off+n; k++ {
			if o := m.owner[s][k]; o != 0 {
				m.t.Fatalf("alloc(%d) at %v overlaps live range %d at element %d", n, at, o, k)
			}
			m.owner[s][k] = id
		}
	}
	for k := range buf {
		buf[k] = uint32(id)
	}
	m.pieces = append(m.pieces, slabPiece{id, buf, at})
}

// split cuts piece k in two at element cut, as a tree split does.
func (m *slabModel) split(k, cut int) {
	p := m.pieces[k]
	if cut <= 0 || cut >= len(p.buf) || p.at.slab == 0 {
		return
	}
	id := m.nextID
	m.nextID++
	tail := slabPiece{id, p.buf[cut:], slabRef{p.at.slab, p.at.off + int32(cut)}}
	m.pieces[k].buf = p.buf[:cut:cut]
	for j := range tail.buf {
		tail.buf[j] = uint32(id)
		m.owner[p.at.slab-1][int(tail.at.off)+j] = id
	}
	m.pieces = append(m.pieces, tail)
}

func (m *slabModel) free(k int) {
	p := m.pieces[k]
	m.a.free(p.at, len(p.buf))
	if p.at.slab != 0 {
		for j := range p.buf {
			m.owner[p.at.slab-1][int(p.at.off)+j] = 0
		}
	}
	m.pieces[k] = m.pieces[len(m.pieces)-1]
	m.pieces = m.pieces[:len(m.pieces)-1]
}

func (m *slabModel) reset() {
	m.a.reset()
	m.pieces = m.pieces[:0]
	for _, o := range m.owner {
		clear(o)
	}
}

// verify checks the bookkeeping, that live contents are intact, and that
// the free ranges are exactly the maximal free runs of the reference.
func (m *slabModel) verify() {
	m.t.Helper()
	if err := m.a.check(); err != nil {
		m.t.Fatal(err)
	}
	used := 0
	for _, p := range m.pieces {
		for _, v := range p.buf {
			if v != uint32(p.id) {
				m.t.Fatalf("range %d was overwritten while live", p.id)
			}
		}
		if p.at.slab != 0 {
			used += len(p.buf)
		}
	}
	if used != m.a.used {
		m.t.Fatalf("used %d, live ranges hold %d", m.a.used, used)
	}
	runs := 0
	for s, o := range m.owner {
		for k := 0; k < len(o); {
			if o[k] != 0 {
				k++
				continue
			}
			e := k
			for e < len(o) && o[e] == 0 {
				e++
			}
			r := m.a.tagAt(int32(s), m.a.slabs[s][k])
			if f := m.a.recs[r]; r == 0 || int(f.off) != k || int(f.off+f.n) != e {
				m.t.Fatalf("slab %d: free run [%d, %d) is not one free range", s, k, e)
			}
			runs++
			k = e
		}
	}
	free := 0
	for _, f := range m.a.recs {
		if f.n != 0 {
			free++
		}
	}
	if free != runs {
		m.t.Fatalf("%d free ranges for %d free runs", free, runs)
	}
}

// step runs one operation chosen by op and arg.
func (m *slabModel) step(op byte, arg int) {
	switch {
	case op < 120 || len(m.pieces) == 0:
		m.alloc(1 + arg%(2*m.a.slabLimit()/3))
	case op < 230:
		m.free(arg % len(m.pieces))
	case op < 254:
		k := arg % len(m.pieces)
		m.split(k, 1+arg/7%max(1, len(m.pieces[k].buf)))
	default:
		m.reset()
	}
	m.verify()
}

func TestSlabAlloc_Model(t *testing.T) {
	for seed := int64(1); seed <= 20; seed++ {
		m := newSlabModel(t, 16, 256)
		rng := rand.New(rand.NewSource(seed))
		for range 2000 {
			m.step(byte(rng.Intn(256)), rng.Intn(1<<20))
		}
	}
}

func TestSlabAlloc_Coalesces(t *testing.T) {
	m := newSlabModel(t, 64, 64)
	for range 4 {
		m.alloc(16)
	}
	m.split(0, 8)
	m.verify()
	// Free in an order that needs merging on the left, the right and both.
	for _, k := range []int{1, 3, 0, 1, 0} {
		m.free(k)
		m.verify()
	}
	if len(m.a.slabs) != 1 || m.a.used != 0 {
		t.Fatalf("%d slabs, %d used", len(m.a.slabs), m.a.used)
	}
	m.alloc(64) // the whole slab is one range again
	if len(m.a.slabs) != 1 {
		t.Fatalf("a whole-slab request after freeing everything added a slab")
	}
	m.verify()
}

func TestSlabAlloc_Exhaustion(t *testing.T) {
	m := newSlabModel(t, 32, 128)
	m.alloc(32)
	m.alloc(32) // the first slab is full: a second one
	if len(m.a.slabs) != 2 {
		t.Fatalf("%d slabs, want 2", len(m.a.slabs))
	}
	m.alloc(100) // no free range of 100: a slab of its own size class
	m.alloc(129) // over the limit: a buffer of its own
	m.verify()
	if len(m.a.slabs) != 3 || m.a.own != 1 {
		t.Fatalf("%d slabs, %d own buffers", len(m.a.slabs), m.a.own)
	}
	if buf, at := m.a.alloc(0); buf != nil || at != (slabRef{}) {
		t.Fatalf("alloc(0) = %v, %v", buf, at)
	}
}

func FuzzSlabAlloc(f *testing.F) {
	f.Add([]byte{0, 10, 0, 200, 130, 3, 240, 7, 0, 33, 255, 1})
	f.Fuzz(func(t *testing.T, ops []byte) {
		m := newSlabModel(t, 8, 64)
		for k := 0; k+1 < len(ops); k += 2 {
			m.step(ops[k], int(ops[k+1])*37+k)
		}
	})
}

func TestFitClass_Monotone(t *testing.T) {
	prev := 0
	for n := 1; n < 1<<22; n++ {
		c := fitClass(n)
		if c < prev || c > prev+1 || c >= fitClasses {
			t.Fatalf("fitClass(%d) = %d after %d", n, c, prev)
		}
		prev = c
	}
	if c := fitClass(1<<31 - 1); c != fitClasses-1 {
		t.Fatalf("fitClass(2^31-1) = %d, want %d", c, fitClasses-1)
	}
}

// TestTree_SlabStorageMixed runs a tree whose slabs are tiny, so that
// long keys get buffers of their own while short ones share slabs: splits,
// evictions and resets across both kinds keep the storage consistent.
func TestTree_SlabStorageMixed(t *testing.T) {
	tr, err := New(Config{PageSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []*slabAlloc[int32]{&tr.vals, &tr.kids} {
		a.minSlab, a.maxSlab = 16, 64
	}
	tr.keys.minSlab, tr.keys.maxSlab = 16, 64
	rng := rand.New(rand.NewSource(7))
	slots := make([]int32, 256)
	shared := 0
	for step := range 3000 {
		// Keys share a prefix of random length, so inserts split nodes
		// at random points.
		n := 4 * (1 + rng.Intn(48))
		cut := 4 * rng.Intn(n/4+1)
		key := make([]uint32, n)
		for k := range key {
			key[k] = uint32(k)
			if k >= cut {
				key[k] += uint32(1000 * (step + 1))
			}
		}
		if _, _, err := tr.Insert(InsertParams{Tokens: key, Slots: slots}); err != nil {
			t.Fatal(err)
		}
		if held := tr.Evictable(Full); held > 600 {
			if _, _, err := tr.Evict(Full, held-400, nil); err != nil {
				t.Fatal(err)
			}
		}
		shared = max(shared, tr.keys.used)
		if step%500 == 499 {
			tr.Reset()
		}
		if err := tr.SanityCheck(); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
	}
	if tr.keys.own == 0 || shared == 0 {
		t.Fatalf("%d own buffers, at most %d slab elements in use: both kinds should occur", tr.keys.own, shared)
	}
}
