package core

import "fmt"

// MatchResult describes the longest cached prefix of a request.
type MatchResult struct {
	// Indices is dst with the device slots of the matched prefix appended
	// (root order). Its growth over dst is the device hit in atoms.
	Indices []int32
	// DeviceLen is the number of atoms appended to dst.
	DeviceLen int
	// LastDevice is the deepest matched node resident on the device; lock
	// it to protect the prefix while the request runs.
	LastDevice NodeID
	// LastHost is the anchor for host/storage follow-ups: Best under the
	// host tier, LastDevice otherwise.
	LastHost NodeID
	// Best is the deepest node every component validator accepted.
	Best NodeID
	// HostHitLen is the Full atoms cached only on the host between
	// LastDevice and Best (what a load-back would restore).
	HostHitLen int
	// SWAHostHitLen is the SWA atoms inside the window found on the host.
	SWAHostHitLen int
	// SWABranchingSeqlen is the page-aligned length that would have hit had
	// the SWA window been present, or -1.
	SWABranchingSeqlen int
	// MambaHostHitLen is 1 when Best's Mamba state is host-only.
	MambaHostHitLen int
	// MambaBranchingSeqlen is the chunk-aligned length that would have hit
	// had a Mamba state been saved there, or -1.
	MambaBranchingSeqlen int
	// MambaSlot is LastDevice's Mamba state slot, which the request forks
	// (copy on write) before extending the sequence; -1 when none. When
	// MambaHostHitLen is 1 the deeper Best has a state on the host only:
	// prefer loading it back (LoadBackPlan) to forking this one.
	MambaSlot int32
	// FullKVHitLen is the longest Full prefix on either tier, regardless of
	// other components.
	FullKVHitLen int
	// Actions lists host work caused by the match (a split of a node with
	// a pending write-through); usually nil.
	Actions []Action
}

// matchMark is what a Match compared: the first atoms atoms of tokens
// (whose first word is at tok) equal the keys of the path it walked in
// namespace ns, while the tree's shape is still shape.
type matchMark struct {
	tok  *uint32
	ntok int
	// idx is the first of the nidx device slots the match appended to
	// its dst (InsertParams.MatchedSlots).
	idx   *int32
	nidx  int
	ns    uint32
	atoms int
	shape uint64
}

// matchWalk carries the walk's outcome to the component finalisers.
type matchWalk struct {
	best, bestDevice int32
	deviceLen        int
	fullHit          int
}

// Match finds the longest cached page-aligned prefix of tokens in ns,
// appends its device slots to dst and restamps the access ticks of the
// matched path. A node matched partway is split so that the match ends on
// a node boundary. Tokens past the last whole page are ignored.
//
// Match allocates nothing when dst has room and no split is needed.
// Errors: ErrBroken.
func (t *Tree) Match(dst []int32, ns Namespace, tokens []uint32) (MatchResult, error) {
	r := MatchResult{Indices: dst, SWABranchingSeqlen: -1, MambaBranchingSeqlen: -1, MambaSlot: -1}
	if err := t.checkUsable(); err != nil {
		return r, err
	}
	t.lastMatch = matchMark{}
	q, L := t.atomsOf(tokens)
	root := t.handle(rootIdx)
	r.LastDevice, r.LastHost, r.Best = root, root, root
	if L == 0 {
		return r, nil
	}
	nsID, ok := t.nsLookup(&ns)
	w := matchWalk{best: rootIdx, bestDevice: rootIdx}
	depth := 0
	if ok {
		var err error
		if r.Indices, r.Actions, depth, err = t.matchWalk(&w, r.Indices, nsID, q, L); err != nil {
			return MatchResult{Indices: dst, SWABranchingSeqlen: -1, MambaBranchingSeqlen: -1, MambaSlot: -1}, err
		}
		// The walk compared w.fullHit atoms, ending on a node boundary
		// (a partial node was split), after its own splits.
		t.lastMatch = matchMark{tok: &tokens[0], ntok: len(tokens), ns: nsID, atoms: w.fullHit, shape: t.shape}
	}
	r.Indices = r.Indices[:len(dst)+w.deviceLen]
	if w.deviceLen > 0 && t.lastMatch.tok != nil {
		t.lastMatch.idx, t.lastMatch.nidx = &r.Indices[len(dst)], w.deviceLen
	}
	r.DeviceLen = w.deviceLen
	r.FullKVHitLen = w.fullHit

	for _, c := range t.comps[1:] {
		c.refreshLRU(t, phaseMatchEnd, w.best)
	}
	t.retickPath(w.best, depth)

	r.Best = t.handle(w.best)
	r.LastDevice = t.handle(w.bestDevice)
	r.LastHost = r.LastDevice
	if t.cfg.hostTier {
		r.LastHost = r.Best
	}
	for _, c := range t.comps {
		r = c.finishMatch(t, r, w)
	}
	return r, nil
}

// matchVals is the walk's validator state per auxiliary component: for
// the best node (host values allowed under the host tier) and for the best
// device node.
type matchVals struct {
	all, dev [numComponents - 1]validator
}

// matchWalk walks from the root, appending Full device values to dst for
// every node it passes and remembering the deepest accepted nodes. It
// also returns the depth of w.best (the root is 0).
func (t *Tree) matchWalk(w *matchWalk, dst []int32, ns uint32, q []uint32, L int) ([]int32, []Action, int, error) {
	var v matchVals
	for k, c := range t.comps[1:] {
		v.all[k] = c.startMatch(t.cfg.hostTier)
		v.dev[k] = c.startMatch(false)
	}
	base := len(dst)
	var acts []Action
	wd := t.cfg.width
	cur, off, depth, bestDepth := rootIdx, 0, 0, 0
	for off < L {
		child := t.lookup(cur, ns, q[off*wd:])
		if child == nilIdx {
			break
		}
		c := &t.nodes[child]
		if c.evicted() && !c.backuped() {
			break
		}
		p := t.matchLen(q[off*wd:L*wd], c.key)
		w.fullHit += p
		depth++
		if p < t.keyAtoms(c) {
			prefix, more, err := t.split(child, p, acts)
			if err != nil {
				return dst, nil, 0, err
			}
			acts = more
			if v := t.nodes[prefix].dev[Full]; v != nil {
				dst = append(dst, v...)
			}
			if t.matchAccept(w, &v, prefix, len(dst)-base) {
				bestDepth = depth
			}
			break
		}
		if v := c.dev[Full]; v != nil {
			dst = append(dst, v...)
		}
		cur = child
		if t.matchAccept(w, &v, child, len(dst)-base) {
			bestDepth = depth
		}
		off += p
	}
	return dst, acts, bestDepth, nil
}

// matchAccept runs every component's validator on node i, which the walk
// has reached with got device slots appended, and moves w's best and best
// device node there if they accept. It reports whether i is the new best.
// Full's validator is fullComponent.accept, stateless, inlined here: the
// node holds a device value (or, for the best node under the host tier, a
// host one).
func (t *Tree) matchAccept(w *matchWalk, v *matchVals, i int32, got int) bool {
	n := &t.nodes[i]
	hostOK := t.cfg.hostTier
	dev := n.dev[Full] != nil
	all := dev || (hostOK && n.host[Full] != nil)
	aux := t.comps[1:]
	for k, c := range aux {
		var ok bool
		v.all[k], ok = c.accept(t, v.all[k], i)
		all = ok && all
	}
	if all {
		w.best = i
	}
	if !hostOK {
		if all {
			w.bestDevice, w.deviceLen = i, got
		}
		return all
	}
	for k, c := range aux {
		var ok bool
		v.dev[k], ok = c.accept(t, v.dev[k], i)
		dev = ok && dev
	}
	if dev {
		w.bestDevice, w.deviceLen = i, got
	}
	return all
}

// retickPath restamps best, at depth depth, and its ancestors (root
// included) with fresh ticks, newest at best.
func (t *Tree) retickPath(best int32, depth int) {
	t.tick += int64(depth) + 1
	tick := t.tick
	decays, counts, onMatch := t.cfg.policy.decays, t.cfg.policy.counts, t.cfg.policy.onMatch
	for i := best; i != nilIdx; i = t.nodes[i].parent {
		n := &t.nodes[i]
		if onMatch != nil {
			onMatch(t, n)
		}
		n.lastAccess = tick
		n.credit = t.inflation + n.hits
		if decays {
			n.crf = t.crfAdd(n.crf, tick)
		}
		if counts && !n.reused && n.parent != nilIdx {
			t.branchReturn(n.parent)
		}
		n.reused = true
		tick--
	}
}

// split divides child at atom offset at (0 < at < len, page-aligned) into
// a new prefix node, which takes the child's place under its parent, and
// the child, re-keyed to the rest:
//
//	parent ── child[0:n]    ⇒    parent ── prefix[0:at] ── child[at:n]
//
// The prefix inherits the child's namespace, priority, hit count and
// creation tick; both keep the child's locks. The child gets a newer tick.
func (t *Tree) split(child int32, at int, acts []Action) (int32, []Action, error) {
	c := &t.nodes[child]
	if at <= 0 || at >= t.keyAtoms(c) || at%t.cfg.page != 0 {
		return nilIdx, acts, t.fail("split of %v at %d (key length %d)", t.handle(child), at, t.keyAtoms(c))
	}
	wd := t.cfg.width
	key := c.key
	prefix := t.alloc(c.ns, key[:at*wd:at*wd])
	c = &t.nodes[child] // alloc may grow the arena
	p := &t.nodes[prefix]
	// The halves keep their places in the key's storage.
	p.keyAt = c.keyAt
	if c.keyAt.slab != 0 {
		c.keyAt.off += int32(at * wd)
	}
	p.priority, p.hits, p.creation, p.credit, p.crf, p.reused, p.lhdReturns = c.priority, c.hits, c.creation, c.credit, c.crf, c.reused, c.lhdReturns
	p.wtPending, p.pin, p.pinGen = c.wtPending, c.pin, c.pinGen
	p.queued = c.queued // Unprotect walks up through the new prefix
	p.extStored, p.extPending = c.extStored, c.extPending

	// The prefix takes the child's place in the parent's children and on
	// its edge chain: same parent, namespace and first page.
	parent := c.parent
	p.parent, p.pos = parent, c.pos
	t.nodes[parent].children[c.pos] = prefix
	p.edgeKey, p.edgeNext = c.edgeKey, c.edgeNext
	t.replaceEdge(c.edgeKey, child, prefix)

	for _, comp := range t.comps {
		comp.split(t, prefix, child, at)
	}
	splitDigests(p, c, at/t.cfg.page)
	c.key = key[at*wd:]
	t.shape++
	c.parent, c.pos, c.edgeNext = nilIdx, -1, nilIdx
	// link counts the child as a device child of the prefix; the parent's
	// count is unchanged because the prefix replaced a node of the same
	// device status.
	t.link(prefix, child)

	c.lastAccess = t.nextTick()
	t.refreshLeaf(prefix)
	t.refreshLeaf(child)
	t.addCoexist(prefix)
	// The host's publish lists (write-through, external offload) name the
	// child; it now stands for both halves.
	for _, ack := range [2]int64{c.wtPending, c.extPending} {
		if ack != 0 {
			acts = append(acts, Action{Kind: ActionReplaceWriteThroughOnSplit, Ack: ack,
				Nodes: []NodeID{t.handle(child), t.handle(prefix), t.handle(child)}})
		}
	}
	return prefix, acts, nil
}

// errRange formats an out-of-range argument error.
func errRange(what string, v, limit int) error {
	return fmt.Errorf("%w: %s %d out of range [0, %d]", ErrInvalidArgument, what, v, limit)
}
