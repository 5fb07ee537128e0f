package core

import (
	"fmt"
	"slices"
	"strings"
)

// Ongoing names the host-tier operations in flight, for
// SanityCheckOngoing: nodes whose write-through awaits its ack, and
// anchors of load-backs not yet finished.
type Ongoing struct {
	WriteThrough []NodeID
	LoadBack     []NodeID
}

// SanityCheck verifies every invariant of the tree and returns an error
// wrapping ErrSanity that lists each violation found, one per line in
// sorted order (nil when none). It scans the whole tree: use it in tests
// and debugging, not per request.
func (t *Tree) SanityCheck() error { return t.SanityCheckOngoing(Ongoing{}) }

// SanityCheckOngoing is SanityCheck that also checks the host's view of
// its operations in flight: each is on a live node that is locked on the
// device (the host pins the copy's source or target), every pending
// write-through is listed, and every load-back pin belongs to a listed
// anchor.
func (t *Tree) SanityCheckOngoing(o Ongoing) error {
	var bad []string
	add := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	t.checkOngoing(o, add)

	root := &t.nodes[rootIdx]
	if !root.live || root.parent != nilIdx || len(root.key) != 0 {
		add("root: must be live, parentless and keyless")
	}
	for c := range numComponents {
		if root.dev[c] != nil || root.host[c] != nil {
			add("root: holds a %s value", Component(c))
		}
		if t.cfg.set.Has(Component(c)) && root.lock[c] == 0 {
			add("root: %s device lock is 0", Component(c))
		}
	}

	// Expected lock counts from the live receipts.
	wantLock := make([][numComponents]uint32, len(t.nodes))
	wantHost := make([][numComponents]uint32, len(t.nodes))
	if err := t.receipts.check(); err != nil {
		add("tree: %v", err)
	}
	for k := range t.receipts.recs {
		live := &t.receipts.recs[k]
		serial, i := live.r.Serial, live.idx
		if live.r.Host {
			continue
		}
		if !t.nodes[i].live {
			add("receipt %d: locks freed slot %d", serial, i)
			continue
		}
		if i == rootIdx {
			continue
		}
		for j := i; j != rootIdx && j != nilIdx; j = t.nodes[j].parent {
			wantLock[j][Full]++
		}
		early := live.swaReleased
		if t.cfg.set.Has(SWA) && !live.r.Skipped.Has(SWA) && !early {
			if !t.swaSegment(i, live.r.SWAUUID, false, func(j int32) { wantLock[j][SWA]++ }) {
				add("receipt %d: SWA boundary %d not found above %v", serial, live.r.SWAUUID, t.handle(i))
			}
		}
		if t.cfg.set.Has(Mamba) && !live.r.Skipped.Has(Mamba) && !early {
			wantLock[i][Mamba]++
		}
	}
	t.checkHostReceipts(wantHost, add)

	var evictable, protected [numComponents]int
	live, edges, dleaves, hleaves, coexistFlags := 0, 0, 0, 0, 0
	var hostUsed [numComponents]int
	wordsPerPage := t.cfg.page * t.cfg.width
	for idx := range t.nodes {
		i := int32(idx)
		n := &t.nodes[i]
		if !n.live || i == rootIdx {
			continue
		}
		live++
		id := t.handle(i)
		if n.parent < 0 || int(n.parent) >= len(t.nodes) || !t.nodes[n.parent].live {
			add("%v: parent %d is not a live node", id, n.parent)
			continue
		}
		p := &t.nodes[n.parent]
		if n.pos < 0 || int(n.pos) >= len(p.children) || p.children[n.pos] != i {
			add("%v: not at position %d of its parent's children", id, n.pos)
		}
		if len(n.key) == 0 || len(n.key)%wordsPerPage != 0 {
			add("%v: key of %d words is empty or not page-aligned", id, len(n.key))
		} else if t.lookup(n.parent, n.ns, n.key) != i {
			add("%v: the edge table does not lead to it from its parent", id)
		} else {
			edges++
		}
		if n.parent != rootIdx && n.ns != p.ns {
			add("%v: namespace %d differs from its parent's %d", id, n.ns, p.ns)
		}
		atoms := t.keyAtoms(n)
		if v := n.dev[Full]; v != nil && len(v) != atoms {
			add("%v: full device value has %d slots for %d atoms", id, len(v), atoms)
		}
		if v := n.host[Full]; v != nil && len(v) != atoms {
			add("%v: full host value has %d slots for %d atoms", id, len(v), atoms)
		}
		if v := n.dev[SWA]; v != nil && (n.dev[Full] == nil || len(v) != len(n.dev[Full]) || &v[0] != &n.dev[Full][0]) {
			add("%v: swa device value is not its full slots", id)
		}
		if v := n.dev[Mamba]; v != nil && len(v) != 1 {
			add("%v: mamba device value holds %d slots", id, len(v))
		}
		for c := SWA; c < numComponents; c++ {
			if (n.dev[c] != nil || n.host[c] != nil) && !t.cfg.set.Has(c) {
				add("%v: holds %s data the tree does not have", id, c)
			}
			if n.dev[c] != nil && n.dev[Full] == nil {
				add("%v: %s device value without a full device value", id, c)
			}
			if n.host[c] != nil && n.host[Full] == nil && !(t.cfg.writeBack && n.dev[Full] != nil) {
				add("%v: %s host value without a full host value", id, c)
			}
			if n.lock[c] > n.lock[Full] {
				add("%v: %s lock %d exceeds the full lock %d", id, c, n.lock[c], n.lock[Full])
			}
		}
		if n.dev[Full] == nil && n.host[Full] == nil {
			add("%v: holds full data on neither tier", id)
		}
		if n.dev[Full] != nil && n.parent != rootIdx && p.dev[Full] == nil {
			add("%v: has a full device value but its parent does not", id)
		}
		if !t.cfg.writeBack && n.host[Full] != nil && n.parent != rootIdx && p.host[Full] == nil {
			add("%v: backed up but its parent is not (write-through)", id)
		}
		for c := range numComponents {
			if n.lock[c] != wantLock[i][c] {
				add("%v: %s lock %d, but live receipts account for %d", id, Component(c), n.lock[c], wantLock[i][c])
			}
		}
		devChildren := int32(0)
		for _, c := range n.children {
			if t.nodes[c].live && t.nodes[c].dev[Full] != nil {
				devChildren++
			}
		}
		if devChildren != n.devChildren {
			add("%v: counts %d device children, has %d", id, n.devChildren, devChildren)
		}
		for c := range numComponents {
			if n.hostLock[c] != wantHost[i][c] {
				add("%v: %s host lock %d, but live host receipts account for %d", id, Component(c), n.hostLock[c], wantHost[i][c])
			}
			hostUsed[c] += len(n.host[c])
		}
		if n.pin != nilIdx {
			if g, ok := t.loadBacks[n.pin]; !ok || !t.nodes[n.pin].live || t.nodes[n.pin].gen != g || n.pinGen != g {
				add("%v: pinned by %d, which has no load-back in flight", id, n.pin)
			}
		}
		if n.wtPending != 0 && !n.backuped() {
			add("%v: write-through pending but not backed up", id)
		}
		if t.cfg.writeBack && t.coexisting(i) && !n.coexist {
			add("%v: holds full on both tiers but is not in the coexistence list", id)
		}
		if n.coexist {
			coexistFlags++
		}
		isHLeaf := n.pin == nilIdx && !n.devLocked() && n.dev[Full] == nil && n.host[Full] != nil && !n.hostLocked() && len(n.children) == 0
		inH := n.hpos >= 0 && int(n.hpos) < len(t.hset) && t.hset[n.hpos] == i
		if isHLeaf != inH {
			add("%v: evictable host leaf is %v but H-leaf set membership is %v", id, isHLeaf, inH)
		}
		if inH {
			hleaves++
		}
		isLeaf := n.pin == nilIdx && n.dev[Full] != nil && !n.devLocked() && !n.hostLocked() && devChildren == 0
		inSet := n.dpos >= 0 && int(n.dpos) < len(t.dset) && t.dset[n.dpos] == i
		if isLeaf != inSet {
			add("%v: evictable device leaf is %v but D-leaf set membership is %v", id, isLeaf, inSet)
		}
		if inSet {
			dleaves++
		}
		for c := range numComponents {
			if v := n.dev[c]; v != nil {
				if n.lock[c] > 0 {
					protected[c] += len(v)
				} else {
					evictable[c] += len(v)
				}
			}
		}
	}
	if root.devChildren != t.countDevChildren(rootIdx) {
		add("root: counts %d device children, has %d", root.devChildren, t.countDevChildren(rootIdx))
	}
	if reach := t.countReachable(); reach != live {
		add("tree: %d live nodes but %d reachable from the root", live, reach)
	}
	if n := t.edgeCount(add); n != live {
		add("tree: edge table holds %d entries for %d nodes", n, live)
	}
	t.checkLRUs(add)
	if hleaves != len(t.hset) {
		add("tree: H-leaf set holds %d entries, %d valid", len(t.hset), hleaves)
	}
	if hostUsed != t.hostUsed {
		add("tree: host slots recorded %v, nodes hold %v", t.hostUsed, hostUsed)
	}
	listed := 0
	for _, r := range t.coexist {
		if t.valid(r) && t.nodes[r.idx].coexist {
			listed++
		}
	}
	if listed != coexistFlags {
		add("tree: %d nodes flagged coexisting, %d listed", coexistFlags, listed)
	}
	for a, g := range t.loadBacks {
		if !t.nodes[a].live || t.nodes[a].gen != g {
			add("tree: load-back anchor %d was freed", a)
		}
	}
	if dleaves != len(t.dset) {
		add("tree: D-leaf set holds %d entries, %d valid", len(t.dset), dleaves)
	}
	for c := range numComponents {
		if evictable[c] != t.evictable[c] {
			add("tree: %s evictable size %d, nodes sum to %d", Component(c), t.evictable[c], evictable[c])
		}
		if protected[c] != t.protected[c] {
			add("tree: %s protected size %d, nodes sum to %d", Component(c), t.protected[c], protected[c])
		}
	}
	t.checkProtections(add)
	t.checkStorage(add)
	if len(bad) == 0 {
		return nil
	}
	// Some checks range over maps (receipts, load-backs): sort, so that
	// the message, which leaves through the ABI, is the same every time.
	slices.Sort(bad)
	return fmt.Errorf("%w:\n  %s", ErrSanity, strings.Join(bad, "\n  "))
}

func (t *Tree) countDevChildren(i int32) int32 {
	k := int32(0)
	for _, c := range t.nodes[i].children {
		if t.nodes[c].dev[Full] != nil {
			k++
		}
	}
	return k
}

func (t *Tree) countReachable() int {
	stack := append(t.path[:0], rootIdx)
	seen := -1 // the root is not counted
	for len(stack) > 0 && seen <= len(t.nodes) {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		seen++
		stack = append(stack, t.nodes[i].children...)
	}
	t.path = stack[:0]
	return seen
}

// edgeCount counts the nodes on the edge table's chains, adding a
// violation for a broken table or a chain member filed under another key.
func (t *Tree) edgeCount(add func(string, ...any)) int {
	if err := t.edges.check(); err != nil {
		add("tree: edge table: %v", err)
	}
	k := 0
	t.edges.each(func(key uint64, head int32) {
		for i := head; i != nilIdx && k <= len(t.nodes); i = t.nodes[i].edgeNext {
			if i < 0 || int(i) >= len(t.nodes) {
				add("tree: edge chain %#x leads to slot %d", key, i)
				return
			}
			if t.nodes[i].edgeKey != key {
				add("%v: on the edge chain of %#x, keyed %#x", t.handle(i), key, t.nodes[i].edgeKey)
			}
			k++
		}
	})
	return k
}

// checkHostReceipts adds the host lock counts the live host receipts
// account for.
func (t *Tree) checkHostReceipts(want [][numComponents]uint32, add func(string, ...any)) {
	for k := range t.receipts.recs {
		live := &t.receipts.recs[k]
		serial, i := live.r.Serial, live.idx
		if !live.r.Host || i == rootIdx || !t.nodes[i].live {
			continue
		}
		if !live.r.Skipped.Has(Full) && !t.hostFullSpan(i, live.hostSpan, func(j int32) { want[j][Full]++ }) {
			add("host receipt %d: full host lock of %d atoms not covered above %v", serial, live.hostSpan, t.handle(i))
		}
		if t.cfg.set.Has(SWA) && !t.swaSegment(i, live.r.SWAHostUUID, true, func(j int32) { want[j][SWA]++ }) {
			add("host receipt %d: SWA boundary %d not found above %v", serial, live.r.SWAHostUUID, t.handle(i))
		}
		if t.cfg.set.Has(Mamba) {
			want[i][Mamba]++
		}
	}
}

func (t *Tree) checkOngoing(o Ongoing, add func(string, ...any)) {
	wt := make(map[int32]bool, len(o.WriteThrough))
	for _, id := range o.WriteThrough {
		i, err := t.resolve(id)
		if err != nil {
			add("ongoing write-through %v: %v", id, err)
			continue
		}
		wt[i] = true
		if t.nodes[i].lock[Full] == 0 {
			add("ongoing write-through %v: not locked on the device", id)
		}
	}
	lb := make(map[int32]bool, len(o.LoadBack))
	for _, id := range o.LoadBack {
		i, err := t.resolve(id)
		if err != nil {
			add("ongoing load-back %v: %v", id, err)
			continue
		}
		lb[i] = true
		if t.nodes[i].lock[Full] == 0 {
			add("ongoing load-back %v: not locked on the device", id)
		}
	}
	if o.WriteThrough == nil && o.LoadBack == nil {
		return // the plain SanityCheck: the host's view is unknown
	}
	for idx := range t.nodes {
		i := int32(idx)
		n := &t.nodes[i]
		if !n.live {
			continue
		}
		if n.wtPending != 0 && !wt[i] {
			add("%v: write-through pending (ack %d) but not listed as ongoing", t.handle(i), n.wtPending)
		}
		if n.pin != nilIdx && !lb[n.pin] {
			add("%v: pinned by a load-back anchor not listed as ongoing", t.handle(i))
		}
	}
}
