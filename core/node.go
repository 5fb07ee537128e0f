package core

import "fmt"

// NodeID is a generational handle to a tree node: the arena slot in the low
// 32 bits (plus one, so 0 is never valid) and the slot's generation in the
// high 32 bits. A freed slot's generation moves on, so a handle to a freed
// or never-issued node resolves to ErrStaleNode, never to another node.
type NodeID uint64

// String renders the handle as slot.generation, e.g. "n3.1".
func (id NodeID) String() string {
	if id == 0 {
		return "nil"
	}
	return fmt.Sprintf("n%d.%d", uint32(id)-1, uint32(id>>32))
}

const nilIdx int32 = -1

// node is one radix-tree node, stored by value in the arena.
type node struct {
	gen    uint32
	live   bool
	parent int32
	ns     uint32   // interned namespace id; 0 is the default namespace
	key    []uint32 // key words; empty only for the root
	// children in no particular order; pos is this node's index in its
	// parent's children, so removal is O(1).
	children []int32
	pos      int32
	// where key, dev[Full] and children live in the tree's slabs (zero:
	// not in one); see slabs.go.
	keyAt, fullAt, kidsAt slabRef
	// edge table bookkeeping: the node's key there (edgeKeyOf its
	// parent, namespace and first page) and the next node on the same
	// key's collision chain.
	edgeKey  uint64
	edgeNext int32

	dev      [numComponents][]int32 // device values; nil means none
	host     [numComponents][]int32 // host values; nil means none
	lock     [numComponents]uint32  // device lock refs
	hostLock [numComponents]uint32  // host lock refs

	lru     [numTiers][numComponents]lruLink // auxiliary recency lists
	swaUUID int64                            // SWA lock-window boundary stamp; 0 = none
	// swaHostUUID is the host lock-window boundary stamp; 0 = none.
	swaHostUUID int64

	devChildren int32 // children with a Full device value
	dpos        int32 // index in the D-leaf set, or -1
	hpos        int32 // index in the H-leaf set, or -1

	// host tier bookkeeping
	wtPending  int64  // ack id of a write-through in flight; 0 = none
	pin        int32  // load-back anchor pinning the node (write-back); nilIdx = none
	pinGen     uint32 // the anchor's generation
	coexist    bool   // listed in the coexistence list
	extStored  bool   // the external cache linker stored the node
	extPending int64  // external offload in flight; 0 = none

	lastAccess int64
	creation   int64
	hits       int64
	priority   int64
	credit     int64 // gdsf: inflation at last access + hits
	crf        int64 // lrfu: decayed count of matches, log domain (adaptive.go)
	reused     bool  // admit: matched again, or recreated from a ghost (admit.go)
	births     int32 // branch: new leaves created under the node (branch.go)
	returns    int32 // branch: leaves under the node that came back
	lhdReturns uint8 // lhd: matches and recreations from a ghost, saturating (lhd.go)
	queued     int32 // live protections (queued requests) counting this node (protect.go)
	mstamp     int64 // tick when the Mamba device state was last used (marconi)

	// page digests, computed lazily (hash.go): the storage chain and, in a
	// non-default namespace, the salt-seeded event chain.
	hash   [][32]byte
	evHash [][32]byte
}

func (n *node) evicted() bool  { return n.dev[Full] == nil }
func (n *node) backuped() bool { return n.host[Full] != nil }
func (n *node) devLocked() bool {
	for _, l := range n.lock {
		if l != 0 {
			return true
		}
	}
	return false
}
func (n *node) hostLocked() bool {
	for _, l := range n.hostLock {
		if l != 0 {
			return true
		}
	}
	return false
}

// edgeKeyOf is the edge table's key of a child of parent in namespace ns
// whose first page hashes to h. Children with different first pages may
// share a key (and a collision chain), so lookup compares the page; for a
// given page hash the key is a bijection of (parent, ns), so an equal key
// and page mean the same parent and namespace.
func edgeKeyOf(parent int32, ns uint32, h uint64) uint64 {
	return h ^ (uint64(uint32(parent))<<32|uint64(ns))*0xd6e8feb86659fd93
}

// handle returns the NodeID of arena slot i.
func (t *Tree) handle(i int32) NodeID {
	return NodeID(uint64(t.nodes[i].gen)<<32 | uint64(uint32(i)+1))
}

// resolve turns a handle into an arena index.
func (t *Tree) resolve(id NodeID) (int32, error) {
	slot := uint32(id)
	if slot == 0 || int(slot-1) >= len(t.nodes) {
		return nilIdx, fmt.Errorf("%w: %v was never issued", ErrStaleNode, id)
	}
	i := int32(slot - 1)
	n := &t.nodes[i]
	if !n.live || n.gen != uint32(id>>32) {
		return nilIdx, fmt.Errorf("%w: %v refers to a freed node", ErrStaleNode, id)
	}
	return i, nil
}

// alloc takes a slot from the free list (or grows the arena) and stamps a
// fresh tick into its creation and access times.
func (t *Tree) alloc(ns uint32, key []uint32) int32 {
	t.shape++
	var i int32
	if k := len(t.free); k > 0 {
		i = t.free[k-1]
		t.free = t.free[:k-1]
	} else {
		t.nodes = append(t.nodes, node{gen: 0})
		i = int32(len(t.nodes) - 1)
	}
	n := &t.nodes[i]
	gen := n.gen + 1
	children := n.children[:0]
	*n = node{
		gen:      gen,
		live:     true,
		parent:   nilIdx,
		ns:       ns,
		key:      key,
		children: children,
		pos:      -1,
		edgeNext: nilIdx,
		dpos:     -1,
		hpos:     -1,
		pin:      nilIdx,
	}
	tick := t.nextTick()
	n.creation, n.lastAccess, n.crf = tick, tick, tick
	n.credit = t.inflation
	return i
}

// release returns a detached node's slot to the free list; its generation
// moves on when the slot is reused, and live=false makes handles stale now.
func (t *Tree) release(i int32) {
	t.shape++
	n := &t.nodes[i]
	n.live = false
	for tr := range numTiers {
		for c := SWA; c < numComponents; c++ {
			t.lruRemove(i, tr, c)
		}
	}
	t.keys.free(n.keyAt, len(n.key))
	n.key, n.keyAt = nil, slabRef{}
	n.hash, n.evHash = nil, nil
	n.dev = [numComponents][]int32{}
	n.host = [numComponents][]int32{}
	// The storage goes back: slots that held many children do not keep
	// it while new parents grow theirs.
	t.kids.free(n.kidsAt, cap(n.children))
	n.children, n.kidsAt = nil, slabRef{}
	t.free = append(t.free, i)
}

func (t *Tree) nextTick() int64 {
	t.tick++
	return t.tick
}

// lookup finds the child of parent in namespace ns whose first page equals
// the first page of words q.
func (t *Tree) lookup(parent int32, ns uint32, q []uint32) int32 {
	page := t.firstPage(q)
	i, ok := t.edges.get(edgeKeyOf(parent, ns, pageHash(page)))
	if !ok {
		return nilIdx
	}
	for ; i != nilIdx; i = t.nodes[i].edgeNext {
		if k := t.nodes[i].key; mismatch(k[:len(page)], page) == len(page) {
			return i
		}
	}
	return nilIdx
}

// link attaches child under parent: children list and edge table.
func (t *Tree) link(parent, child int32) {
	t.shape++
	c := &t.nodes[child]
	c.parent = parent
	p := &t.nodes[parent]
	c.pos = int32(len(p.children))
	if len(p.children) == cap(p.children) {
		t.growChildren(p)
	}
	p.children = append(p.children, child)
	k := edgeKeyOf(parent, c.ns, pageHash(t.firstPage(c.key)))
	c.edgeKey = k
	if head, ok := t.edges.get(k); ok {
		c.edgeNext = head
	} else {
		c.edgeNext = nilIdx
	}
	t.edges.put(k, child)
	if c.dev[Full] != nil {
		p.devChildren++
	}
}

// unlink detaches child from its parent: children list and edge table.
func (t *Tree) unlink(child int32) {
	t.shape++
	c := &t.nodes[child]
	parent := c.parent
	p := &t.nodes[parent]
	last := p.children[len(p.children)-1]
	p.children[c.pos] = last
	t.nodes[last].pos = c.pos
	p.children = p.children[:len(p.children)-1]
	t.replaceEdge(c.edgeKey, child, c.edgeNext)
	if c.dev[Full] != nil {
		p.devChildren--
	}
	c.parent, c.pos, c.edgeNext = nilIdx, -1, nilIdx
}

// replaceEdge puts repl in old's place on the collision chain of k (repl
// may be nilIdx to drop old). repl inherits nothing: callers set its
// edgeNext before or after as needed.
func (t *Tree) replaceEdge(k uint64, old, repl int32) {
	head, _ := t.edges.get(k)
	if head == old {
		if repl == nilIdx {
			t.edges.del(k)
		} else {
			t.edges.put(k, repl)
		}
		return
	}
	for i := head; i != nilIdx; i = t.nodes[i].edgeNext {
		if t.nodes[i].edgeNext == old {
			t.nodes[i].edgeNext = repl
			return
		}
	}
}

// setDevice sets or clears (v == nil) the device value of component c,
// keeping the parent's device-children count for Full.
func (t *Tree) setDevice(i int32, c Component, v []int32) {
	n := &t.nodes[i]
	if c == Full && n.parent != nilIdx && (n.dev[Full] == nil) != (v == nil) {
		if v == nil {
			t.nodes[n.parent].devChildren--
		} else {
			t.nodes[n.parent].devChildren++
		}
	}
	n.dev[c] = v
}

// setAuxDevice sets or clears (v == nil) an auxiliary component's device
// value, keeping list membership: a new value becomes the most recent and
// leaves the host list (the node is no longer host-only).
func (t *Tree) setAuxDevice(i int32, c Component, v []int32) {
	n := &t.nodes[i]
	had := n.dev[c] != nil
	n.dev[c] = v
	switch {
	case v == nil && had:
		t.lruRemove(i, tierDevice, c)
		if n.host[c] != nil && n.hostLock[c] == 0 {
			t.lruFront(i, tierHost, c)
		}
	case v != nil && !had:
		t.lruFront(i, tierDevice, c)
		t.lruRemove(i, tierHost, c)
	}
}

// growChildren moves node p's children to a range twice as long.
func (t *Tree) growChildren(p *node) {
	old, at := p.children, p.kidsAt
	buf, nat := t.kids.alloc(max(4, 2*cap(old)))
	p.children, p.kidsAt = append(buf[:0], old...), nat
	t.kids.free(at, cap(old))
}

// setKey gives node i a copy of key in key storage of its own.
func (t *Tree) setKey(i int32, key []uint32) {
	t.shape++
	n := &t.nodes[i]
	n.key, n.keyAt = t.keys.clone(key)
}

// setFull gives node i, which holds no Full device value, a copy of v in
// value storage of its own.
func (t *Tree) setFull(i int32, v []int32) {
	b, at := t.vals.clone(v)
	t.setDevice(i, Full, b)
	t.nodes[i].fullAt = at
}

// freeFull returns node i's Full device value storage (the caller has
// copied what the host still reads) and clears the value.
func (t *Tree) freeFull(i int32) {
	n := &t.nodes[i]
	t.vals.free(n.fullAt, len(n.dev[Full]))
	n.fullAt = slabRef{}
	t.setDevice(i, Full, nil)
}

// oneSlot returns a one-element slice holding v, carved from a shared
// block so that saving a Mamba state does not allocate per insert. The
// element is never written again (frees hand the slice to the host).
func (t *Tree) oneSlot(v int32) []int32 {
	if len(t.slab) == cap(t.slab) {
		t.slab = make([]int32, 0, 256)
	}
	k := len(t.slab)
	t.slab = append(t.slab, v)
	return t.slab[k : k+1 : k+1]
}

// scratch returns n elements of the per-call slot arena. Action slots that
// the tree frees are copied here so their own buffers can be recycled; the
// arena is rewound at the start of the next call that frees slots, which
// is why action slots are valid only until then.
func (t *Tree) scratch(n int) []int32 {
	k := len(t.arena)
	if k+n > cap(t.arena) {
		// Earlier slices keep the old array; only new ones use the new one.
		t.arena = make([]int32, 0, max(2*cap(t.arena), k+n, 4096))
		k = 0
	}
	t.arena = t.arena[:k+n]
	return t.arena[k : k+n : k+n]
}
