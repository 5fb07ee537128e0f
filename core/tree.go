package core

import (
	"fmt"
	"math"
)

// Tree is the unified radix cache. It is synchronous and not safe for
// concurrent use: the host serialises calls (see host/native for a locked
// wrapper). A Tree never touches memory pools; values are pool slot
// indices and every freed or moved slot is reported as an [Action].
//
// Invariants (checked by [Tree.SanityCheck]):
//   - the root has no values and a device lock of 1 on every component;
//   - every non-root key is non-empty and page-aligned, and the edge that
//     leads to a node is its first page in its namespace;
//   - every non-root node holds Full data on some tier, and a node with a
//     Full device value has a parent with one (or is a child of the root);
//   - evictable and protected sizes equal the sums over unlocked and
//     locked value-holding nodes;
//   - the D-leaf set holds exactly the evictable device leaves;
//   - each node's lock count equals the number of live receipts whose
//     lock walk covers it.
type Tree struct {
	cfg    validated
	comps  []component              // Full, SWA, Mamba: canonical order (see validate), Full first
	byKind [numComponents]component // nil for components the tree lacks

	nodes []node
	free  []int32
	edges idTable // edgeKeyOf → head of the collision chain (node.go)
	tick  int64
	// shape counts changes to node keys and parent-child edges (alloc,
	// release, link, unlink, setKey, Reset); lastMatch is what the last
	// Match compared, valid while shape is unchanged (InsertParams.AfterMatch).
	shape     uint64
	lastMatch matchMark
	// inflation is gdsf's aging level: the credit of the last victim.
	inflation int64
	// adapt is the adaptive policy's learning state (adaptive.go).
	adapt adaptState
	// admit is the admit policy's learning state (admit.go).
	admit admitState
	// branch is the branch policy's learning state (branch.go).
	branch branchState
	// lhd is the lhd policy's learning state (lhd.go).
	lhd lhdState

	nsIDs  map[Namespace]uint32
	nsList []Namespace
	nsMemo uint32 // the non-default namespace found last (namespace.go)

	evictable [numComponents]int
	protected [numComponents]int
	dset      []int32            // evictable device leaves, in no particular order
	hset      []int32            // evictable host leaves, in no particular order
	coexist   []nodeRef          // settled nodes with Full on both tiers, oldest first; stale entries allowed
	hostUsed  [numComponents]int // host slots held by the tree
	loadBacks map[int32]uint32   // anchors of load-backs awaiting FinishLoadBack (write-back pins)
	lrus      [numTiers][numComponents]lruList
	swaUUIDs  int64 // last SWA boundary stamp issued (never reset)

	receipts      receiptTable // live receipts by serial (receipts.go)
	receiptSerial uint64
	lockReceipt   Receipt // Lock's and Unlock's scratch receipt (kept off the heap)

	protections   map[uint64][]nodeRef // queued requests' device paths, by serial (protect.go)
	protectSerial uint64

	ins  insertState
	walk evictWalk
	mar  marconiScratch // the marconi Mamba victim scan's buffers

	broken error

	events []Event

	keys  slabAlloc[uint32] // node keys (slabs.go)
	vals  slabAlloc[int32]  // Full device values
	kids  slabAlloc[int32]  // children lists
	arena []int32           // slots of the current call's actions
	slab  []int32           // one-slot values (Mamba states), see oneSlot

	keyScratch []uint32
	hashBuf    []byte
	path       []int32
}

const rootIdx int32 = 0

// nodeRef is an arena index with the generation it was taken at, so a
// list can hold nodes that may be freed meanwhile.
type nodeRef struct {
	idx int32
	gen uint32
}

func (t *Tree) ref(i int32) nodeRef { return nodeRef{i, t.nodes[i].gen} }

func (t *Tree) valid(r nodeRef) bool {
	n := &t.nodes[r.idx]
	return n.live && n.gen == r.gen
}

// New validates cfg and returns an empty tree.
// Errors: ErrInvalidConfig, ErrUnknownPolicy, ErrUnsupported.
func New(cfg Config) (*Tree, error) {
	v, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	t := &Tree{
		cfg:       v,
		nsIDs:     make(map[Namespace]uint32),
		nsList:    []Namespace{{}},
		loadBacks: make(map[int32]uint32),
	}
	for _, c := range v.comps {
		t.comps = append(t.comps, newComponent(c))
		t.byKind[c] = t.comps[len(t.comps)-1]
	}
	t.initRoot()
	t.clearLRUs()
	t.branch.reset()
	return t, nil
}

func (t *Tree) initRoot() {
	var r int32
	if len(t.nodes) == 0 {
		r = t.alloc(0, nil)
	} else {
		// Reset keeps slot 0 for the root; alloc would take the free list's top.
		n := &t.nodes[rootIdx]
		*n = node{gen: n.gen + 1, live: true, parent: nilIdx, pos: -1, edgeNext: nilIdx, dpos: -1, hpos: -1, pin: nilIdx}
		tick := t.nextTick()
		n.creation, n.lastAccess = tick, tick
		r = rootIdx
	}
	root := &t.nodes[r]
	root.priority = math.MinInt64
	for c := range root.lock {
		root.lock[c] = 1
	}
}

// Reset empties the tree and clears a broken state. Every handle and
// receipt issued before becomes stale; the logical clock restarts at 0.
// Events not yet taken are kept for the consumer (they describe what
// happened before the reset), followed, with KV events on, by one
// AllBlocksCleared.
// Interned namespaces are kept (they carry no cached data).
func (t *Tree) Reset() {
	t.shape++
	t.lastMatch = matchMark{}
	t.keys.reset()
	t.vals.reset()
	t.kids.reset()
	for i := range t.nodes {
		n := &t.nodes[i]
		n.live = false
		n.key, n.keyAt, n.fullAt = nil, slabRef{}, slabRef{}
		n.children, n.kidsAt = nil, slabRef{}
		n.hash, n.evHash = nil, nil
		n.dev = [numComponents][]int32{}
		n.host = [numComponents][]int32{}
	}
	t.free = t.free[:0]
	for i := int32(len(t.nodes)) - 1; i > rootIdx; i-- {
		t.free = append(t.free, i)
	}
	t.edges.reset()
	t.tick = 0
	t.inflation = 0
	t.adapt.reset()
	t.admit.reset()
	t.branch.reset()
	t.lhd.reset()
	t.evictable = [numComponents]int{}
	t.protected = [numComponents]int{}
	t.dset = t.dset[:0]
	t.hset = t.hset[:0]
	t.coexist = t.coexist[:0]
	t.hostUsed = [numComponents]int{}
	clear(t.loadBacks)
	t.clearLRUs()
	t.receipts.reset()
	clear(t.protections)
	t.ins = insertState{keyBuf: t.ins.keyBuf[:0], valBuf: t.ins.valBuf[:0]}
	t.walk = evictWalk{heap: t.walk.heap[:0]}
	t.broken = nil
	t.initRoot()
	if t.cfg.kvEvents {
		t.enqueue(Event{Kind: EventAllBlocksCleared})
	}
}

func (t *Tree) clearLRUs() {
	for tr := range t.lrus {
		for c := range t.lrus[tr] {
			t.lrus[tr][c] = lruList{head: nilIdx, tail: nilIdx}
		}
	}
}

// Root returns the root's handle. It changes on Reset.
func (t *Tree) Root() NodeID { return t.handle(rootIdx) }

// PageSize returns the configured page size in atoms.
func (t *Tree) PageSize() int { return t.cfg.page }

// Components returns the configured component set.
func (t *Tree) Components() ComponentSet { return t.cfg.set }

// Policy returns the normalised eviction policy name.
func (t *Tree) Policy() string { return t.cfg.policyName }

// Evictable returns the number of unlocked cached atoms (slots for Mamba)
// of component c on the device.
func (t *Tree) Evictable(c Component) int {
	if c >= numComponents {
		return 0
	}
	return t.evictable[c]
}

// Protected returns the number of locked cached atoms of component c.
func (t *Tree) Protected(c Component) int {
	if c >= numComponents {
		return 0
	}
	return t.protected[c]
}

// TotalSize returns the device atoms held by Full and by all auxiliary
// components together.
func (t *Tree) TotalSize() (full, aux int) {
	full = t.evictable[Full] + t.protected[Full]
	for c := SWA; c < numComponents; c++ {
		aux += t.evictable[c] + t.protected[c]
	}
	return full, aux
}

// checkUsable refuses mutations on a broken tree.
func (t *Tree) checkUsable() error {
	if t.broken != nil {
		return fmt.Errorf("%w (reset it): %v", ErrBroken, t.broken)
	}
	return nil
}

// fail marks the tree broken after an internal invariant failed.
func (t *Tree) fail(format string, args ...any) error {
	err := fmt.Errorf("core: internal invariant failed: "+format, args...)
	if t.broken == nil {
		t.broken = err
	}
	return fmt.Errorf("%w: %v", ErrBroken, err)
}

// account adds delta atoms of component c to the evictable or protected
// size depending on whether the node is locked for c.
func (t *Tree) account(i int32, c Component, delta int) {
	if t.nodes[i].lock[c] > 0 {
		t.protected[c] += delta
	} else {
		t.evictable[c] += delta
	}
}

// refreshLeaf puts node i in or out of the D-leaf and H-leaf sets to
// match their predicates. A D-leaf (evictable device leaf) holds Full on
// the device, has no device lock, no load-back pin and no child on the
// device, and no host lock either (a host lock's holder reads the node's
// copies). An H-leaf (evictable host leaf) holds Full on the host only,
// has no lock on either tier, no pin and no children at all.
func (t *Tree) refreshLeaf(i int32) {
	n := &t.nodes[i]
	ok := i != rootIdx && n.live && n.pin == nilIdx && !n.devLocked() && !n.hostLocked()
	if want := ok && n.dev[Full] != nil && n.devChildren == 0; want != (n.dpos >= 0) {
		t.dpos(i, want)
	}
	if want := ok && n.dev[Full] == nil && n.host[Full] != nil && len(n.children) == 0; want != (n.hpos >= 0) {
		t.hpos(i, want)
	}
}

// dpos adds node i to or removes it from the D-leaf set.
func (t *Tree) dpos(i int32, in bool) {
	n := &t.nodes[i]
	if in {
		n.dpos = int32(len(t.dset))
		t.dset = append(t.dset, i)
		return
	}
	last := t.dset[len(t.dset)-1]
	t.dset[n.dpos] = last
	t.nodes[last].dpos = n.dpos
	t.dset = t.dset[:len(t.dset)-1]
	n.dpos = -1
}

// hpos adds node i to or removes it from the H-leaf set.
func (t *Tree) hpos(i int32, in bool) {
	n := &t.nodes[i]
	if in {
		n.hpos = int32(len(t.hset))
		t.hset = append(t.hset, i)
		return
	}
	last := t.hset[len(t.hset)-1]
	t.hset[n.hpos] = last
	t.nodes[last].hpos = n.hpos
	t.hset = t.hset[:len(t.hset)-1]
	n.hpos = -1
}

// touch restamps a node's access tick. (Auxiliary lists are refreshed at
// the end of a match or insert, not on the way down.)
func (t *Tree) touch(i int32) {
	n := &t.nodes[i]
	n.lastAccess = t.nextTick()
	n.credit = t.inflation + n.hits
}
