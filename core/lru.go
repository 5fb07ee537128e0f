package core

// Auxiliary components (SWA, Mamba) order their eviction by recency lists
// rather than the Full policy heap: a node holding an auxiliary value sits
// in that component's list for its tier, most recent at the head. The
// links live in the nodes (intrusive), so membership changes never
// allocate.

// tier indexes the device and host lists.
type tier uint8

const (
	tierDevice tier = iota
	tierHost
	numTiers
)

// lruLink is a node's place in one list.
type lruLink struct {
	prev, next int32
	in         bool
}

// lruList is one doubly linked recency list; head is the most recent.
type lruList struct {
	head, tail int32
	n          int
}

func (t *Tree) list(tr tier, c Component) *lruList { return &t.lrus[tr][c] }

func (t *Tree) lruLk(i int32, tr tier, c Component) *lruLink { return &t.nodes[i].lru[tr][c] }

func (t *Tree) inLRU(i int32, tr tier, c Component) bool { return t.nodes[i].lru[tr][c].in }

// lruRemove takes node i out of a list (no-op when absent).
func (t *Tree) lruRemove(i int32, tr tier, c Component) {
	k := t.lruLk(i, tr, c)
	if !k.in {
		return
	}
	l := t.list(tr, c)
	if k.prev != nilIdx {
		t.lruLk(k.prev, tr, c).next = k.next
	} else {
		l.head = k.next
	}
	if k.next != nilIdx {
		t.lruLk(k.next, tr, c).prev = k.prev
	} else {
		l.tail = k.prev
	}
	l.n--
	*k = lruLink{prev: nilIdx, next: nilIdx}
}

// lruFront makes node i the most recent member.
func (t *Tree) lruFront(i int32, tr tier, c Component) {
	t.lruRemove(i, tr, c)
	l := t.list(tr, c)
	k := t.lruLk(i, tr, c)
	*k = lruLink{prev: nilIdx, next: l.head, in: true}
	if l.head != nilIdx {
		t.lruLk(l.head, tr, c).prev = i
	} else {
		l.tail = i
	}
	l.head = i
	l.n++
	if tr == tierDevice && c == Mamba {
		t.nodes[i].mstamp = t.tick // marconi's recency: the state's own use
	}
}

// lruAfter places node i just less recent than x (x must be a member).
func (t *Tree) lruAfter(x, i int32, tr tier, c Component) {
	t.lruRemove(i, tr, c)
	l := t.list(tr, c)
	kx := t.lruLk(x, tr, c)
	next := kx.next
	*t.lruLk(i, tr, c) = lruLink{prev: x, next: next, in: true}
	kx.next = i
	if next != nilIdx {
		t.lruLk(next, tr, c).prev = i
	} else {
		l.tail = i
	}
	l.n++
}

// lockOn returns node i's lock count on the tier a list belongs to.
func (t *Tree) lockOn(i int32, tr tier, c Component) uint32 {
	if tr == tierHost {
		return t.nodes[i].hostLock[c]
	}
	return t.nodes[i].lock[c]
}

// lruOldestUnlocked returns the least recent member whose lock on the
// list's own tier is zero, or nilIdx.
func (t *Tree) lruOldestUnlocked(tr tier, c Component) int32 {
	for i := t.list(tr, c).tail; i != nilIdx; i = t.lruLk(i, tr, c).prev {
		if t.lockOn(i, tr, c) == 0 {
			return i
		}
	}
	return nilIdx
}

// lruNewerUnlocked returns the next more recent unlocked member after x.
func (t *Tree) lruNewerUnlocked(x int32, tr tier, c Component) int32 {
	for i := t.lruLk(x, tr, c).prev; i != nilIdx; i = t.lruLk(i, tr, c).prev {
		if t.lockOn(i, tr, c) == 0 {
			return i
		}
	}
	return nilIdx
}

// lruWindowFront walks from node i toward the root (root excluded) while
// the key length seen is below w, and makes the visited device members of
// c's list the most recent run, deepest first. Visited nodes that are not
// members still count toward w.
func (t *Tree) lruWindowFront(i int32, w int, c Component) {
	run := t.path[:0]
	seen := 0
	for j := i; j != rootIdx && seen < w; j = t.nodes[j].parent {
		if t.nodes[j].dev[c] != nil {
			run = append(run, j)
		}
		seen += t.keyAtoms(&t.nodes[j])
	}
	// Shallowest first, so the deepest ends at the head.
	for k := len(run) - 1; k >= 0; k-- {
		t.lruFront(run[k], tierDevice, c)
	}
	t.path = run[:0]
}

// LRUOrder returns the members of component c's list on the device
// (host=false) or host tier, most recent first. Full has no lists.
func (t *Tree) LRUOrder(c Component, host bool) []NodeID {
	if c == Full || c >= numComponents {
		return nil
	}
	tr := tierDevice
	if host {
		tr = tierHost
	}
	var out []NodeID
	for i := t.list(tr, c).head; i != nilIdx; i = t.lruLk(i, tr, c).next {
		out = append(out, t.handle(i))
	}
	return out
}

// checkLRUs verifies list integrity and membership against values.
func (t *Tree) checkLRUs(add func(string, ...any)) {
	for tr := range numTiers {
		for c := SWA; c < numComponents; c++ {
			l := t.list(tr, c)
			k, prev := 0, nilIdx
			for i := l.head; i != nilIdx; i = t.lruLk(i, tr, c).next {
				if k > len(t.nodes) {
					add("lru %s/%d: cycle", c, tr)
					break
				}
				lk := t.lruLk(i, tr, c)
				if !t.nodes[i].live || !lk.in || lk.prev != prev {
					add("lru %s/%d: broken link at %v", c, tr, t.handle(i))
				}
				prev = i
				k++
			}
			if prev != l.tail || k != l.n {
				add("lru %s/%d: tail or length mismatch (%d walked, %d recorded)", c, tr, k, l.n)
			}
			for idx := range t.nodes {
				n := &t.nodes[idx]
				if !n.live {
					continue
				}
				var want bool
				if tr == tierDevice {
					want = n.dev[c] != nil
				} else {
					want = n.host[c] != nil && n.dev[c] == nil && n.hostLock[c] == 0
				}
				if n.lru[tr][c].in != want {
					add("%v: %s %s-list membership %v, value says %v", t.handle(int32(idx)), c, [...]string{"device", "host"}[tr], n.lru[tr][c].in, want)
				}
			}
		}
	}
}
