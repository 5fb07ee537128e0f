package core

import (
	"fmt"
	"slices"
)

// InsertParams describes a resumable or one-shot insert.
type InsertParams struct {
	// Namespace of the request.
	Namespace Namespace
	// Tokens of the sequence to cache; only whole pages are inserted.
	Tokens []uint32
	// Slots holds one device Full slot per atom (at least the aligned
	// length). The tree keeps its own copies of what it adopts; the
	// FreeDeviceKV actions of the same call may alias Slots.
	Slots []int32
	// PrevPrefixLen is how much of the sequence the request already held
	// from the cache (its locked prefix): those slots belong to the tree
	// and are never freed.
	PrevPrefixLen int
	// Priority raises the eviction priority of every node on the path.
	Priority int64
	// Chunked marks a chunked-prefill insert: no hit counting.
	Chunked bool
	// TrackAdopted asks for the key ranges whose incoming slots the tree
	// kept (InsertResult.Adopted).
	TrackAdopted bool
	// SessionID is attributed to newly stored blocks in KV events.
	SessionID string

	// SWAEvictedSeqlen (SWA trees only) is how many leading atoms of the
	// sequence the request no longer holds SWA slots for (they left its
	// window and were freed); page-aligned. The tree keeps those positions
	// as SWA tombstones and frees duplicates of them Full-only.
	SWAEvictedSeqlen int
	// SWABranchingSeqlen (SWA trees only), when positive, is the branching
	// length the request's match reported; InsertResult.SWABranchInserted
	// tells whether this insert reached it.
	SWABranchingSeqlen int
	// MambaSlot is the request's Mamba state slot, required (≥ 0) in Mamba
	// trees and ignored otherwise. The tree adopts it unless the target
	// node already has a state (InsertResult.MambaExist).
	MambaSlot int32
	// AfterMatch is the caller's promise that Tokens are a prefix of the
	// tokens of the tree's last Match, in the same buffer and unchanged
	// since (an in-process caller that owns that buffer, such as the
	// wasm dispatcher). The insert's walk then skips comparing the keys
	// that Match compared, as long as no node key or edge changed since
	// (the tree checks that, and that Tokens start where the match's did;
	// otherwise it compares as without the promise). Results are the
	// same either way; a false promise can cache tokens under the wrong
	// prefix.
	AfterMatch bool
	// MatchedSlots, with AfterMatch, is the caller's promise that the
	// first MatchedSlots of Slots are the device slots the tree's last
	// Match appended to its dst, in that buffer and unchanged since: the
	// tree wrote them from its own values, so the insert does not check
	// them for negative ones. It is honoured only while no node key or
	// edge changed since that Match and when Slots start where those
	// slots did (at most as many as it appended are trusted); otherwise
	// every slot is checked. A false promise can cache a negative slot.
	MatchedSlots int
}

// Range is a half-open atom range [Start, End) of an insert key.
type Range struct{ Start, End int }

// InsertResult is the outcome of a completed insert.
type InsertResult struct {
	// PrefixLen is how many atoms of the key the tree already held.
	PrefixLen int
	// TotalLen is the page-aligned key length that was inserted.
	TotalLen int
	// LastDevice is the node at the end of the inserted path.
	LastDevice NodeID
	// MambaExist reports that the tree did not adopt the request's Mamba
	// slot because a state already covers the sequence (the caller frees
	// its slot); vacuously true for an empty insert and in trees without
	// Mamba.
	MambaExist bool
	// SWABranchInserted reports that the key reached the
	// SWABranchingSeqlen given in the params.
	SWABranchInserted bool
	// Adopted lists, per component, the key ranges whose incoming slots
	// the tree kept; nil unless TrackAdopted was set.
	Adopted [][]Range
}

// InsertStep is what one call of a resumable insert hands the host.
type InsertStep struct {
	// Actions to execute in order before resuming (or, when Done, before
	// using the result). Like their slots, they live in the tree's reused
	// buffer and are valid until the next call on the tree.
	Actions []Action
	// Done is set on the final step, with Result.
	Done   bool
	Result InsertResult
}

type insertPhase uint8

const (
	phaseWalk insertPhase = iota
	phaseCommit
	phaseTail
)

// insertState is the in-flight insert. While a call runs, key and value
// alias the caller's buffers (no copy on the common one-step path); when
// the insert suspends at a barrier they are copied into buffers the tree
// owns (keyBuf, valBuf), so the caller may reuse its own between steps.
type insertState struct {
	active  bool
	owned   bool
	keyBuf  []uint32
	valBuf  []int32
	phase   insertPhase
	node    int32
	nodeGen uint32
	key     []uint32 // aligned key words
	// The first proven atoms of key are known equal to the path's keys
	// while the tree's shape is provenShape (InsertParams.AfterMatch).
	proven      int
	provenShape uint64
	value       []int32 // aligned slots
	L           int
	ns          uint32
	prev        int
	session     string
	priority    int64
	// auxiliary components' inputs
	swaEvicted   int
	swaBranching int
	mambaSlot    int32
	chunked      bool
	cursor       int
	newLeaf      bool
	target       int32
	targetGen    uint32
	res          InsertResult
	pending      []Action // this insert's actions; [handed:] not yet handed out
	handed       int
}

// own copies the key and value into tree-owned buffers before the insert
// suspends, since the caller's may change before it resumes.
func (s *insertState) own() {
	if s.owned {
		return
	}
	s.keyBuf = append(s.keyBuf[:0], s.key...)
	s.valBuf = append(s.valBuf[:0], s.value...)
	s.key, s.value, s.owned = s.keyBuf, s.valBuf, true
}

// handOut returns the actions not handed out yet. They stay in the
// tree's buffer, which the next insert reuses: like their slots, they are
// valid until the next call.
func (s *insertState) handOut() []Action {
	n := len(s.pending)
	acts := s.pending[s.handed:n:n]
	s.handed = n
	if len(acts) == 0 {
		return nil
	}
	return acts
}

// slots returns value[from:to] for an action: an alias of the caller's
// buffer while the insert runs in one call, a copy once the tree owns the
// value (its buffer is reused by the next insert).
func (s *insertState) slots(from, to int) []int32 {
	v := s.value[from:to:to]
	if s.owned {
		v = append([]int32(nil), v...)
	}
	return v
}

// adopt records that the tree kept incoming slots [s, e) of component c.
func (s *insertState) adopt(c Component, start, end int) {
	if s.res.Adopted == nil || start >= end {
		return
	}
	rs := s.res.Adopted[c]
	if k := len(rs); k > 0 && start <= rs[k-1].End {
		rs[k-1].Start = min(rs[k-1].Start, start)
		rs[k-1].End = max(rs[k-1].End, end)
		return
	}
	s.res.Adopted[c] = append(rs, Range{start, end})
}

// Insert runs a whole insert at once and returns its result with every
// action it produced, in order. Barrier actions are not executed between
// steps, so with the host tier two BackupKV chains may share a node; use
// BeginInsert / ResumeInsert there (see RATIONALE.md).
// Errors: those of BeginInsert.
func (t *Tree) Insert(p InsertParams) (InsertResult, []Action, error) {
	step, err := t.BeginInsert(p)
	if err != nil {
		return InsertResult{}, nil, err
	}
	acts := step.Actions
	for !step.Done {
		if step, err = t.ResumeInsert(); err != nil {
			return InsertResult{}, acts, err
		}
		acts = append(acts, step.Actions...)
	}
	return step.Result, acts, nil
}

// BeginInsert starts a resumable insert and runs it to its first barrier
// or to completion. When the returned step is not Done, the host executes
// its actions and calls ResumeInsert; EndInsert abandons the walk.
// Inserts are single-flight.
// Errors: ErrBroken, ErrInsertInFlight, ErrInvalidArgument (too few
// slots, a negative slot, PrevPrefixLen out of range).
func (t *Tree) BeginInsert(p InsertParams) (InsertStep, error) {
	if err := t.checkUsable(); err != nil {
		return InsertStep{}, err
	}
	if t.ins.active {
		return InsertStep{}, fmt.Errorf("%w: end or finish the suspended insert first", ErrInsertInFlight)
	}
	q, L := t.atomsOf(p.Tokens)
	if len(p.Slots) < L {
		return InsertStep{}, fmt.Errorf("%w: %d slots for a key of %d aligned atoms", ErrInvalidArgument, len(p.Slots), L)
	}
	if p.PrevPrefixLen < 0 || p.PrevPrefixLen > L {
		return InsertStep{}, errRange("prev prefix length", p.PrevPrefixLen, L)
	}
	if err := t.checkAuxParams(p, L); err != nil {
		return InsertStep{}, err
	}
	// One branch-free pass over the slots the tree did not just hand out
	// itself; search for the culprit only on failure.
	trusted := 0
	if m := &t.lastMatch; p.AfterMatch && p.MatchedSlots > 0 && m.idx != nil && m.shape == t.shape && L > 0 && &p.Slots[0] == m.idx {
		trusted = min(p.MatchedSlots, m.nidx, L)
	}
	if anyNegative(p.Slots[trusted:L]) {
		for k, s := range p.Slots[:L] {
			if s < 0 {
				return InsertStep{}, fmt.Errorf("%w: slot %d at atom %d is negative", ErrInvalidArgument, s, k)
			}
		}
	}

	root := &t.nodes[rootIdx]
	t.touch(rootIdx)
	root.priority = max(root.priority, p.Priority)
	if L == 0 {
		return InsertStep{Done: true, Result: InsertResult{LastDevice: t.handle(rootIdx), MambaExist: true}}, nil
	}
	s := &t.ins
	clear(s.pending) // drop the last insert's references to slot buffers
	*s = insertState{
		active:   true,
		keyBuf:   s.keyBuf,
		valBuf:   s.valBuf,
		pending:  s.pending[:0],
		node:     rootIdx,
		nodeGen:  root.gen,
		key:      q,
		value:    p.Slots[:L],
		L:        L,
		ns:       t.nsIntern(&p.Namespace),
		prev:     p.PrevPrefixLen,
		session:  p.SessionID,
		priority: p.Priority,
		chunked:  p.Chunked,
		target:   nilIdx,

		swaEvicted:   p.SWAEvictedSeqlen,
		swaBranching: p.SWABranchingSeqlen,
		mambaSlot:    p.MambaSlot,
		res:          InsertResult{TotalLen: L},
	}
	if m := &t.lastMatch; p.AfterMatch && m.atoms > 0 && m.shape == t.shape && s.ns == m.ns &&
		len(p.Tokens) <= m.ntok && &p.Tokens[0] == m.tok {
		s.proven, s.provenShape = min(m.atoms, L), m.shape
	}
	if p.TrackAdopted {
		s.res.Adopted = make([][]Range, numComponents)
	}
	return t.advanceInsert()
}

// ResumeInsert continues a suspended insert after the host executed the
// previous step's actions. If the host's other calls meanwhile freed the
// walk's node (or evicted it from the device before the new leaf was
// attached), or freed the committed node, the insert is abandoned: the
// error comes with the actions still owed to the host.
// Errors: ErrNoInsert, ErrBroken, ErrInvalidArgument (abandoned).
func (t *Tree) ResumeInsert() (InsertStep, error) {
	s := &t.ins
	if !s.active {
		return InsertStep{}, ErrNoInsert
	}
	if err := t.checkUsable(); err != nil {
		return InsertStep{}, err
	}
	why := ""
	n := &t.nodes[s.node]
	switch {
	case !n.live || n.gen != s.nodeGen:
		why = "the insert walk's node was freed"
	case s.phase != phaseTail && s.node != rootIdx && n.evicted():
		why = "the insert walk's node was evicted from the device"
	case s.phase == phaseTail && (!t.nodes[s.target].live || t.nodes[s.target].gen != s.targetGen):
		why = "the inserted node was freed"
	}
	if why != "" {
		s.active = false
		acts := s.handOut()
		s.key, s.value = nil, nil
		return InsertStep{Actions: acts}, fmt.Errorf("%w: %s while the insert was suspended; the insert was abandoned", ErrInvalidArgument, why)
	}
	return t.advanceInsert()
}

// InsertInFlight reports whether an insert is suspended at a barrier.
func (t *Tree) InsertInFlight() bool { return t.ins.active }

// EndInsert abandons a suspended insert (idempotent) and returns the
// actions it had produced but not yet handed out; the host must execute
// them (they free duplicate slots).
func (t *Tree) EndInsert() []Action {
	if !t.ins.active {
		return nil
	}
	t.ins.active = false
	acts := t.ins.handOut()
	return acts
}

// advanceInsert runs steps until one emits a barrier action or the insert
// completes.
func (t *Tree) advanceInsert() (InsertStep, error) {
	s := &t.ins
	for {
		mark := len(s.pending)
		switch s.phase {
		case phaseWalk:
			if err := t.insertWalkStep(s); err != nil {
				s.active = false
				return InsertStep{Actions: s.handOut()}, err
			}
		case phaseCommit:
			t.insertCommit(s)
		case phaseTail:
			t.insertTail(s)
			s.active = false
			s.key, s.value = nil, nil // do not pin the caller's buffers
			acts := s.handOut()
			return InsertStep{Actions: acts, Done: true, Result: s.res}, nil
		}
		for _, a := range s.pending[mark:] {
			if !a.Kind.deferrable() {
				acts := s.handOut()
				s.nodeGen = t.nodes[s.node].gen
				if s.phase == phaseTail {
					// The tail reads neither key nor slots: do not copy them.
					s.key, s.value = nil, nil
				} else {
					s.own()
				}
				return InsertStep{Actions: acts}, nil
			}
		}
	}
}

// insertWalkStep processes one existing node on the key's path.
func (t *Tree) insertWalkStep(s *insertState) error {
	c := s.cursor
	wd := t.cfg.width
	var child int32 = nilIdx
	if c < s.L {
		child = t.lookup(s.node, s.ns, s.key[c*wd:])
	}
	if child == nilIdx {
		s.phase = phaseCommit
		return nil
	}
	t.touch(child)
	i := child
	var p int
	if n := t.keyAtoms(&t.nodes[child]); c+n <= s.proven && t.shape == s.provenShape {
		p = n // the match compared this node's key, and nothing changed since
	} else {
		p = t.matchLen(s.key[c*wd:], t.nodes[child].key)
	}
	if p < t.keyAtoms(&t.nodes[child]) {
		var err error
		if i, err = t.insertSplit(s, child, p); err != nil {
			return err
		}
	}
	n := &t.nodes[i]
	n.priority = max(n.priority, s.priority)
	if n.evicted() {
		t.unevict(i, s.value[c:c+p], s.session)
		s.adopt(Full, c, c+p)
		for _, comp := range t.comps[1:] {
			comp.recoverAfterUnevict(t, s, i, p)
		}
	} else {
		consumed := p
		for _, comp := range t.comps {
			consumed = min(consumed, comp.overlap(t, s, i, p))
		}
		// Incoming slots past the request's own cached prefix duplicate
		// slots the tree already holds: the host frees them.
		// Those below the request's SWA-evicted length already lost
		// their SWA side, so they are freed Full-only.
		if d0 := max(s.prev-c, 0); d0 < consumed {
			from, to := c+d0, c+consumed
			a := min(max(s.swaEvicted-from, 0), to-from)
			if a > 0 {
				s.pending = append(s.pending, Action{Kind: ActionFreeDeviceKVFullOnly, Slots: s.slots(from, from+a)})
			}
			if from+a < to {
				s.pending = append(s.pending, Action{Kind: ActionFreeDeviceKV, Slots: s.slots(from+a, to)})
			}
		}
	}
	if t.hitCheck(i, s.chunked) {
		s.pending = append(s.pending, t.backupAction(i))
	}
	s.node = i
	s.cursor += p
	return nil
}

// insertSplit splits node i at atom offset at during an insert, queueing
// the split's actions, and returns the new prefix node.
func (t *Tree) insertSplit(s *insertState, i int32, at int) (int32, error) {
	prefix, acts, err := t.split(i, at, s.pending)
	s.pending = acts
	return prefix, err
}

// checkAuxParams validates the SWA and Mamba insert parameters.
func (t *Tree) checkAuxParams(p InsertParams, L int) error {
	if !t.cfg.set.Has(SWA) && (p.SWAEvictedSeqlen != 0 || p.SWABranchingSeqlen != 0) {
		return fmt.Errorf("%w: SWA evicted/branching lengths given to a tree without swa (%s)", ErrInvalidArgument, t.cfg.set)
	}
	if e := p.SWAEvictedSeqlen; e < 0 || e%t.cfg.page != 0 {
		return fmt.Errorf("%w: SWA evicted length %d must be a non-negative multiple of the page size %d", ErrInvalidArgument, e, t.cfg.page)
	}
	if t.cfg.set.Has(Mamba) && L > 0 && p.MambaSlot < 0 {
		return fmt.Errorf("%w: a mamba tree needs the request's state slot (got %d)", ErrInvalidArgument, p.MambaSlot)
	}
	return nil
}

// unevict restores an evicted node's Full device value from the insert's
// fresh slots.
func (t *Tree) unevict(i int32, fresh []int32, session string) {
	t.setFull(i, fresh)
	t.account(i, Full, len(fresh))
	t.refreshLeaf(i)
	t.refreshLeaf(t.nodes[i].parent)
	t.addCoexist(i)
	t.recordStored(i, MediumGPU, session)
}

// insertCommit creates the leaf for the unmatched suffix (if any) and
// lets each component attach its data to the target.
func (t *Tree) insertCommit(s *insertState) {
	target := s.node
	if s.cursor < s.L {
		wd := t.cfg.width
		s.newLeaf = true
		// The leaf borrows the insert's buffers until the components have
		// committed (SWA may split it): each piece then gets storage of
		// its own.
		key := s.key[s.cursor*wd : s.L*wd : s.L*wd]
		val := s.value[s.cursor:s.L:s.L]
		target = t.alloc(s.ns, key)
		leaf := &t.nodes[target]
		leaf.priority = s.priority
		t.setDevice(target, Full, val)
		t.link(s.node, target)
		t.evictable[Full] += len(val)
		t.refreshLeaf(target)
		t.refreshLeaf(s.node)
		if t.cfg.policy.onInsert != nil {
			t.cfg.policy.onInsert(t, target)
		}
		s.adopt(Full, s.cursor, s.L)
		t.recordStored(target, MediumGPU, s.session)
	}
	s.target, s.targetGen = target, t.nodes[target].gen
	s.res.PrefixLen = s.cursor
	s.res.LastDevice = t.handle(target)
	s.res.MambaExist = !t.cfg.set.Has(Mamba)
	for _, comp := range t.comps {
		comp.commit(t, s, target, s.newLeaf)
	}
	if s.newLeaf {
		for j := target; j != s.node; j = t.nodes[j].parent {
			n := &t.nodes[j]
			n.key, n.keyAt = t.keys.clone(n.key)
			v, at := t.vals.clone(n.dev[Full])
			n.dev[Full], n.fullAt = v, at
			if n.dev[SWA] != nil {
				n.dev[SWA] = v
			}
		}
	}
	s.phase = phaseTail
}

// insertTail refreshes auxiliary LRUs and decides the final backup.
func (t *Tree) insertTail(s *insertState) {
	if s.target != rootIdx {
		for _, comp := range t.comps[1:] {
			comp.refreshLRU(t, phaseInsertEnd, s.target)
		}
	}
	if s.newLeaf {
		if t.hitCheck(s.target, s.chunked) {
			s.pending = append(s.pending, t.backupAction(s.target))
		}
		return
	}
	if n := &t.nodes[s.target]; t.cfg.hostTier && s.target != rootIdx && n.backuped() && n.wtPending == 0 && t.needsAuxBackup(s.target) {
		s.pending = append(s.pending, t.backupAction(s.target))
	}
}

// hitCheck counts a hit on node i and reports whether it should now be
// written through to the host tier or, with the external linker (which
// then decides alone), to the external store.
func (t *Tree) hitCheck(i int32, chunked bool) bool {
	n := &t.nodes[i]
	if n.evicted() || chunked || t.cfg.writeBack {
		return false
	}
	n.hits++
	n.credit = t.inflation + n.hits
	if n.hits < t.cfg.wtThresh {
		return false
	}
	if t.cfg.linker {
		// With the linker the external store's state alone decides, host
		// tier or not: a node it holds (or is taking) asks for nothing.
		return !n.extStored && n.extPending == 0
	}
	return t.cfg.hostTier && !n.backuped()
}

// backupAction lists the chain to back up for node i: under write-through
// the node and its ancestors up to the first one already backed up (or,
// with the linker, externally stored or pending), ancestors first; under
// write-back the node alone.
func (t *Tree) backupAction(i int32) Action {
	chain := []NodeID{t.handle(i)}
	if !t.cfg.writeBack {
		for j := t.nodes[i].parent; j != rootIdx && !t.chainStop(j); j = t.nodes[j].parent {
			chain = append(chain, t.handle(j))
		}
		slices.Reverse(chain)
	}
	return Action{Kind: ActionBackupKV, Node: t.handle(i), Nodes: chain}
}

func (t *Tree) chainStop(j int32) bool {
	n := &t.nodes[j]
	return n.backuped() || n.extStored || n.extPending != 0
}

// needsAuxBackup reports whether a backed-up insert target still has
// auxiliary device data without a host copy: SWA in the window above it
// (stopping at a pending node), or (write-through only) its Mamba state.
func (t *Tree) needsAuxBackup(i int32) bool {
	if t.byKind[SWA] != nil {
		seen := 0
		for j := i; j != rootIdx && seen < t.cfg.window; j = t.nodes[j].parent {
			n := &t.nodes[j]
			if n.wtPending != 0 {
				break
			}
			if n.dev[SWA] != nil && n.host[SWA] == nil {
				return true
			}
			seen += t.keyAtoms(n)
		}
	}
	n := &t.nodes[i]
	return !t.cfg.writeBack && n.dev[Mamba] != nil && n.host[Mamba] == nil
}
