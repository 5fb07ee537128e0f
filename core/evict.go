package core

import (
	"fmt"
	"slices"
)

// EvictStep reports one step of an eviction walk.
type EvictStep struct {
	// Node is the leaf the step evicted, or (SWA and Mamba walks) the
	// inner node whose component value it dropped; zero when none.
	Node NodeID
	// Freed is what this step freed of the walked component on the
	// device: atoms, or states for Mamba.
	Freed int
	// Actions lists the frees for the host to execute.
	Actions []Action
	// Done is set, on a step that carries no work, once the walk has freed
	// what was asked or nothing evictable is left.
	Done bool
}

// heapEntry is an eviction candidate: a leaf's policy key, its arena slot
// and its generation. It has four fields in 32 bytes, so the compiler
// copies it as four words; a larger struct is copied by a memmove call in
// the WebAssembly build, seven for each step of heapDown.
type heapEntry struct {
	a, b int64
	idx  int32
	// tag holds the generation in its low 32 bits and, at bit 32, whether
	// a queued request protects the leaf (it then orders after every
	// unprotected one).
	tag uint64
}

const heapQueued = 1 << 32

func (x heapEntry) gen() uint32 { return uint32(x.tag) }

func (x *heapEntry) less(y *heapEntry) bool {
	if xq, yq := x.tag&heapQueued, y.tag&heapQueued; xq != yq {
		return yq != 0
	}
	if x.a != y.a {
		return x.a < y.a
	}
	if x.b != y.b {
		return x.b < y.b
	}
	return x.idx < y.idx
}

// evictWalk is the state of a step-wise device eviction.
type evictWalk struct {
	active     bool
	comp       Component
	want       int
	freed      int
	heap       []heapEntry
	lastParent int32
	parentGen  uint32
	// auxiliary walks: the next list member to visit
	cursor    int32
	cursorGen uint32
	// hostHeap is EvictHost's scratch heap.
	hostHeap []heapEntry
	// handed records the leaves an auxiliary walk handed to the host as
	// BackupKV (by slot, with their generation).
	handed map[int32]uint32
}

// With the host tier, an evicted leaf that is backed up is demoted (its
// host copy stays in the tree); under write-back an unbacked leaf yields
// an ActionBackupKV instead and is left as it is: the host backs it up
// and calls Demote (or DropSubtreeNoHost), and only then is it freed.
// Such a step reports Freed 0 but counts toward want, so the walk ends
// when what it freed plus what it handed to the host reaches want.
//
// EvictStart begins a step-wise device eviction of component c that aims
// to free want atoms (states for Mamba). Full candidates are the
// evictable leaves in the tree's policy order (fixed at start; later
// touches do not reorder them). SWA and Mamba walk their recency list from
// the least recent unlocked member, passing by load-back-pinned nodes: an
// evictable leaf goes whole, an inner node loses that component's value
// (and those ranked below it).
// Errors: ErrBroken, ErrEvictionInFlight, ErrInvalidArgument.
func (t *Tree) EvictStart(c Component, want int) error {
	if err := t.checkUsable(); err != nil {
		return err
	}
	if t.walk.active {
		return ErrEvictionInFlight
	}
	if !t.cfg.set.Has(c) {
		return fmt.Errorf("%w: component %s is not in the tree's set %s", ErrInvalidArgument, c, t.cfg.set)
	}
	if want < 0 {
		return fmt.Errorf("%w: cannot evict %d atoms", ErrInvalidArgument, want)
	}
	w := &t.walk
	clear(w.handed)
	*w = evictWalk{active: true, comp: c, want: want, heap: w.heap[:0], lastParent: nilIdx, cursor: nilIdx, hostHeap: w.hostHeap, handed: w.handed}
	if c != Full {
		return nil
	}
	if want > 0 {
		w.heap = t.buildHeap(w.heap, t.dset)
	}
	return nil
}

// buildHeap returns h refilled with the entries of leaves, in heap order.
// It is the guest's per-walk cost (every evictable leaf, to pop a few), so
// it writes entries in place and reads the common policies' keys directly
// instead of through the key function.
func (t *Tree) buildHeap(h []heapEntry, leaves []int32) []heapEntry {
	h = slices.Grow(h[:0], len(leaves))[:len(leaves)]
	nodes := t.nodes
	switch t.cfg.policy.plain {
	case keyLastAccess:
		for k, i := range leaves {
			n := &nodes[i]
			h[k] = heapEntry{a: n.lastAccess, idx: i, tag: entryTag(n)}
		}
	case keyCreation:
		for k, i := range leaves {
			n := &nodes[i]
			h[k] = heapEntry{a: n.creation, idx: i, tag: entryTag(n)}
		}
	case keyHits:
		for k, i := range leaves {
			n := &nodes[i]
			h[k] = heapEntry{a: n.hits, b: n.lastAccess, idx: i, tag: entryTag(n)}
		}
	case keyPriority:
		for k, i := range leaves {
			n := &nodes[i]
			h[k] = heapEntry{a: n.priority, b: n.lastAccess, idx: i, tag: entryTag(n)}
		}
	default:
		for k, i := range leaves {
			h[k] = t.heapEntry(i)
		}
	}
	heapify(h)
	return h
}

func (t *Tree) heapEntry(i int32) heapEntry {
	n := &t.nodes[i]
	a, b := t.cfg.policy.key(t, n)
	return heapEntry{a: a, b: b, idx: i, tag: entryTag(n)}
}

// entryTag is a heap entry's tag for node n: its generation, and whether
// a queued request protects it.
func entryTag(n *node) uint64 {
	tag := uint64(n.gen)
	if n.queued > 0 {
		tag |= heapQueued
	}
	return tag
}

// EvictNext evicts the next leaf of the walk and returns its frees. A leaf
// whose parent thereby becomes a leaf makes the parent a candidate.
// Errors: ErrNoEviction, ErrBroken.
func (t *Tree) EvictNext() (EvictStep, error) {
	t.arena = t.arena[:0]
	st, _, err := t.evictNext(nil)
	return st, err
}

// evictNext is EvictNext appending the step's actions to dst; the step's
// Actions are the appended part.
func (t *Tree) evictNext(dst []Action) (EvictStep, []Action, error) {
	w := &t.walk
	if !w.active {
		return EvictStep{}, dst, ErrNoEviction
	}
	if err := t.checkUsable(); err != nil {
		return EvictStep{}, dst, err
	}
	if p := w.lastParent; p != nilIdx {
		w.lastParent = nilIdx
		if n := &t.nodes[p]; n.live && n.gen == w.parentGen && n.dpos >= 0 {
			w.heap = heapPush(w.heap, t.heapEntry(p))
		}
	}
	if w.freed >= w.want {
		return EvictStep{Done: true}, dst, nil
	}
	if w.comp != Full {
		return t.auxEvictNext(dst)
	}
	for len(w.heap) > 0 {
		var e heapEntry
		e, w.heap = heapPop(w.heap)
		n := &t.nodes[e.idx]
		if !n.live || n.gen != e.gen() || n.dpos < 0 {
			continue // stale: evicted, locked or gained a device child since start
		}
		mark := len(dst)
		if t.cfg.policy.trim && len(t.comps) == 1 {
			// Free only what is still wanted, from the leaf's end: any
			// request that would use the end uses the front too.
			var err error
			if dst, err = t.trimLeaf(e.idx, w.want-w.freed, dst); err != nil {
				return EvictStep{}, dst, err
			}
			n = &t.nodes[e.idx]
		}
		w.lastParent, w.parentGen = n.parent, t.nodes[n.parent].gen
		id := t.handle(e.idx)
		if t.cfg.policy.onEvict != nil {
			t.cfg.policy.onEvict(t, n)
		}
		before := t.evictable[Full] + t.protected[Full]
		atoms := len(n.dev[Full])
		var err error
		if dst, err = t.evictDeviceLeaf(e.idx, dst); err != nil {
			return EvictStep{}, dst, err
		}
		freed := before - t.evictable[Full] - t.protected[Full]
		w.freed += freed
		if freed == 0 {
			w.freed += atoms // handed to the host (write-back): it frees them
		}
		return EvictStep{Node: id, Freed: freed, Actions: dst[mark:len(dst):len(dst)]}, dst, nil
	}
	return EvictStep{Done: true}, dst, nil
}

// auxEvictNext is one step of an SWA or Mamba walk.
func (t *Tree) auxEvictNext(dst []Action) (EvictStep, []Action, error) {
	w := &t.walk
	c := w.comp
	x := w.cursor
	if x == nilIdx || !t.nodes[x].live || t.nodes[x].gen != w.cursorGen ||
		!t.inLRU(x, tierDevice, c) || t.nodes[x].lock[c] != 0 {
		x = t.lruOldestUnlocked(tierDevice, c)
	}
	// Pass by leaves already handed to the host (write-back; they stay in
	// the list until it demotes them) and nodes a load-back pins: their
	// values are what the load-back brought back, until FinishLoadBack.
	for x != nilIdx && (w.handed[x] == t.nodes[x].gen || t.nodes[x].pin != nilIdx) {
		x = t.lruNewerUnlocked(x, tierDevice, c)
	}
	if c == Mamba && t.cfg.mar.on {
		x = t.marconiVictim()
	}
	if x == nilIdx {
		return EvictStep{Done: true}, dst, nil
	}
	w.cursor = t.lruNewerUnlocked(x, tierDevice, c)
	if w.cursor != nilIdx {
		w.cursorGen = t.nodes[w.cursor].gen
	}
	before := t.evictable[c] + t.protected[c]
	own := len(t.nodes[x].dev[c])
	id := t.handle(x)
	mark := len(dst)
	var err error
	if t.nodes[x].dpos >= 0 {
		if t.cfg.policy.onEvict != nil {
			t.cfg.policy.onEvict(t, &t.nodes[x])
		}
		dst, err = t.evictDeviceLeaf(x, dst)
	} else {
		dst, err = t.cascade(x, c, layerDevice, dst)
	}
	if err != nil {
		return EvictStep{}, dst, err
	}
	freed := before - t.evictable[c] - t.protected[c]
	w.freed += freed
	if freed == 0 && own > 0 && t.nodes[x].dev[c] != nil {
		w.freed += own // handed to the host (write-back): it frees them
		if w.handed == nil {
			w.handed = make(map[int32]uint32)
		}
		w.handed[x] = t.nodes[x].gen
	}
	return EvictStep{Node: id, Freed: freed, Actions: dst[mark:len(dst):len(dst)]}, dst, nil
}

// cascade drops component trig's value on node i for one layer, with the
// values of every component that ranks at or below it there (on a leaf
// all rank equal; inside the tree Full > SWA > Mamba). A locked
// higher-ranked component stays; a locked lower-ranked one would be
// stranded, which the lock rules make impossible, so it breaks the tree.
// A Full device value goes last: the SWA free is named by Full slots.
func (t *Tree) cascade(i int32, trig Component, l layer, acts []Action) ([]Action, error) {
	n := &t.nodes[i]
	leaf := n.dpos >= 0
	if l == layerHost {
		leaf = n.hpos >= 0
	}
	tc := t.byKind[trig]
	tp, tip := tc.priority(leaf), tc.priority(false)
	var victims [numComponents]bool
	for _, c := range t.comps {
		k := c.kind()
		if k == trig || c.priority(leaf) > tp {
			continue
		}
		has, locked := n.dev[k] != nil, n.lock[k] != 0
		if l == layerHost {
			has, locked = n.host[k] != nil, n.hostLock[k] != 0
		}
		if !has {
			continue
		}
		if locked {
			if c.priority(false) >= tip {
				continue
			}
			return acts, t.fail("cascade from %s: a %s lock strands %v", trig, k, t.handle(i))
		}
		victims[k] = true
	}
	fullLast := trig == Full && l == layerDevice
	if !fullLast {
		acts, _ = tc.evict(t, i, l, acts)
	}
	for _, c := range t.comps {
		if victims[c.kind()] {
			acts, _ = c.evict(t, i, l, acts)
		}
	}
	if fullLast {
		acts, _ = tc.evict(t, i, l, acts)
	}
	t.refreshLeaf(i)
	return acts, nil
}

// trimLeaf splits leaf i so that its end holds the fewest whole pages that
// cover want atoms; the end keeps slot i (the caller evicts it) and the
// front becomes its parent. A leaf no longer than that is left whole.
func (t *Tree) trimLeaf(i int32, want int, dst []Action) ([]Action, error) {
	page := t.cfg.page
	atoms := t.keyAtoms(&t.nodes[i])
	drop := (want + page - 1) / page * page
	if drop <= 0 || drop >= atoms {
		return dst, nil
	}
	last := t.nodes[i].lastAccess
	prefix, dst, err := t.split(i, atoms-drop, dst)
	if err == nil {
		// A trim is no access: the front keeps the leaf's place in the
		// recency order (split stamps both halves with fresh ticks).
		t.nodes[prefix].lastAccess = last
		if t.cfg.policy.trimAge {
			t.nodes[i].lastAccess = last // the victim keeps its age too
		}
	}
	return dst, err
}

// EvictEnd finishes the eviction walk (idempotent).
func (t *Tree) EvictEnd() {
	t.walk.active = false
	t.walk.heap = t.walk.heap[:0]
}

// EvictionInFlight reports whether a step-wise eviction walk is open.
func (t *Tree) EvictionInFlight() bool { return t.walk.active }

// Evict frees at least want device atoms of component c if the tree holds
// that many unlocked, appending the frees to dst. It returns the atoms
// actually freed, which is less than want only when nothing evictable is
// left.
// Errors: as EvictStart.
func (t *Tree) Evict(c Component, want int, dst []Action) ([]Action, int, error) {
	if err := t.EvictStart(c, want); err != nil {
		return dst, 0, err
	}
	defer t.EvictEnd()
	t.arena = t.arena[:0]
	freed := 0
	for {
		var step EvictStep
		var err error
		step, dst, err = t.evictNext(dst)
		if err != nil {
			return dst, freed, err
		}
		freed += step.Freed
		if step.Done {
			return dst, freed, nil
		}
	}
}

// deleteDeviceLeaf removes an unbacked device leaf with all its data and
// then cleans up ancestors left without data.
func (t *Tree) deleteDeviceLeaf(i int32, acts []Action) ([]Action, int) {
	t.recordRemoved(i, MediumGPU)
	acts, freed := t.releaseAll(i, acts)
	parent := t.nodes[i].parent
	t.removeLeaf(i)
	t.refreshLeaf(parent)
	acts = t.cleanupTombstones(parent, acts)
	return acts, freed
}

// releaseAll frees every component's data on node i on both tiers; Full
// goes last because auxiliary frees are expressed in Full slots.
func (t *Tree) releaseAll(i int32, acts []Action) ([]Action, int) {
	freed := 0
	for k := len(t.comps) - 1; k >= 0; k-- {
		var f int
		acts, f = t.comps[k].evict(t, i, layerAll, acts)
		if t.comps[k].kind() == Full {
			freed = f
		}
	}
	return acts, freed
}

// removeLeaf unlinks a childless node and recycles its slot.
func (t *Tree) removeLeaf(i int32) {
	t.unlink(i)
	t.nodes[i].live = false
	t.refreshLeaf(i) // a dead node leaves the D-leaf set
	t.release(i)
}

// cleanupTombstones walks up from i deleting childless, unlocked nodes
// that hold no Full data on either tier, freeing any auxiliary data they
// still carry. It stops at the root, at a node with children, at a locked
// node, or at a node that still holds Full data.
func (t *Tree) cleanupTombstones(i int32, acts []Action) []Action {
	for i != rootIdx {
		n := &t.nodes[i]
		if len(n.children) > 0 || n.devLocked() || n.hostLocked() {
			break
		}
		if n.dev[Full] != nil {
			t.refreshLeaf(i)
			break
		}
		for _, c := range t.comps[1:] {
			acts, _ = c.evict(t, i, layerDevice, acts)
		}
		if n.host[Full] != nil {
			t.refreshLeaf(i)
			break
		}
		for _, c := range t.comps {
			acts, _ = c.evict(t, i, layerHost, acts)
		}
		parent := n.parent
		t.removeLeaf(i)
		t.refreshLeaf(parent)
		i = parent
	}
	return acts
}

// The heap moves a hole instead of swapping (one entry store per level)
// and compares through pointers: in the WebAssembly build each entry
// copied is four loads and stores and each by-value comparison two
// copies, and a 250-leaf heap took ~9 µs to build against ~1 natively.

// heapify orders h as a heap: heapDown from the last parent to the root,
// in one loop (a call per parent costs more than its work in the
// WebAssembly build). The result is the array the calls would leave.
func heapify(h []heapEntry) {
	n := len(h)
	for top := n/2 - 1; top >= 0; top-- {
		k, x := top, h[top]
		for {
			l := 2*k + 1
			if l >= n {
				break
			}
			m := l
			if r := l + 1; r < n && h[r].less(&h[l]) {
				m = r
			}
			if !h[m].less(&x) {
				break
			}
			h[k] = h[m]
			k = m
		}
		h[k] = x
	}
}

func heapDown(h []heapEntry, k int) {
	n := len(h)
	x := h[k]
	for {
		l := 2*k + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h[r].less(&h[l]) {
			m = r
		}
		if !h[m].less(&x) {
			break
		}
		h[k] = h[m]
		k = m
	}
	h[k] = x
}

func heapPush(h []heapEntry, e heapEntry) []heapEntry {
	h = append(h, e)
	k := len(h) - 1
	for k > 0 {
		p := (k - 1) / 2
		if !e.less(&h[p]) {
			break
		}
		h[k] = h[p]
		k = p
	}
	h[k] = e
	return h
}

func heapPop(h []heapEntry) (heapEntry, []heapEntry) {
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	if last > 0 {
		heapDown(h, 0)
	}
	return top, h
}
