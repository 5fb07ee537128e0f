package core

import "fmt"

// Scheduler-aware protection (opt-in): the host tells the tree the
// prefixes of requests waiting in its queue, and a Full device eviction
// walk takes every unprotected leaf before a protected one. Protection is
// soft: when nothing else is left, protected leaves go too (in the
// policy's order), so a queue larger than the cache cannot make an
// eviction fail. Host-tier eviction and the SWA and Mamba walks do not
// look at it.
//
// A protection counts once on every cached node of the prefix's device
// path (the last node counts even when the prefix ends inside it). The
// tree keeps, per protection, the (slot, generation) of that path; Unprotect walks
// up from the deepest one still live, which also covers the prefixes a
// split inserted since (they inherit the count), and nodes freed in the
// meantime took their count with them.

// Protection is the result of Protect.
type Protection struct {
	// Serial names the protection for Unprotect (never reused, not even
	// across Reset).
	Serial uint64
	// Len is the number of tokens (atoms) of the prefix that the device
	// cache held and that are now protected; 0 protects nothing but still
	// issues a serial.
	Len int
}

// Protect protects the device-cached part of tokens' prefix in namespace
// ns until Unprotect(serial). It neither changes recency nor splits nodes.
// Errors: ErrBroken, ErrEvictionInFlight (the walk's order is fixed at its
// start).
func (t *Tree) Protect(ns Namespace, tokens []uint32) (Protection, error) {
	if err := t.checkUsable(); err != nil {
		return Protection{}, err
	}
	if t.walk.active {
		return Protection{}, fmt.Errorf("%w: protect during an eviction walk", ErrEvictionInFlight)
	}
	q, L := t.atomsOf(tokens)
	var path []nodeRef
	covered := 0
	if nsID, ok := t.nsLookup(&ns); ok && L > 0 {
		wd := t.cfg.width
		cur, off := rootIdx, 0
		for off < L {
			child := t.lookup(cur, nsID, q[off*wd:])
			if child == nilIdx || t.nodes[child].evicted() {
				break
			}
			c := &t.nodes[child]
			p := t.matchLen(q[off*wd:L*wd], c.key)
			path = append(path, t.ref(child))
			covered += p
			if p < t.keyAtoms(c) {
				break
			}
			cur, off = child, off+p
		}
	}
	// Nothing above can fail: apply.
	for _, r := range path {
		t.nodes[r.idx].queued++
	}
	t.protectSerial++
	if t.protections == nil {
		t.protections = make(map[uint64][]nodeRef)
	}
	t.protections[t.protectSerial] = path
	return Protection{Serial: t.protectSerial, Len: covered}, nil
}

// Unprotect releases protection serial (when its request is admitted or
// dropped). Errors: ErrBroken, ErrEvictionInFlight, ErrInvalidArgument
// (a serial that is not live).
func (t *Tree) Unprotect(serial uint64) error {
	if err := t.checkUsable(); err != nil {
		return err
	}
	if t.walk.active {
		return fmt.Errorf("%w: unprotect during an eviction walk", ErrEvictionInFlight)
	}
	path, ok := t.protections[serial]
	if !ok {
		return fmt.Errorf("%w: protection %d is not live (released already, or never issued)", ErrInvalidArgument, serial)
	}
	delete(t.protections, serial)
	for i := t.protectedTip(path); i != nilIdx && i != rootIdx; i = t.nodes[i].parent {
		t.nodes[i].queued--
	}
	return nil
}

// Protections returns the number of live protections.
func (t *Tree) Protections() int { return len(t.protections) }

// protectedTip is the deepest node of a protection's path that is still
// live (the same node the handle named), or nilIdx.
func (t *Tree) protectedTip(path []nodeRef) int32 {
	for k := len(path) - 1; k >= 0; k-- {
		if r := path[k]; t.nodes[r.idx].live && t.nodes[r.idx].gen == r.gen {
			return r.idx
		}
	}
	return nilIdx
}

// checkProtections adds a sanity failure for every node whose protection
// count differs from what the live protections imply.
func (t *Tree) checkProtections(add func(string, ...any)) {
	want := make([]int32, len(t.nodes))
	for _, path := range t.protections {
		for i := t.protectedTip(path); i != nilIdx && i != rootIdx; i = t.nodes[i].parent {
			want[i]++
		}
	}
	for i := range t.nodes {
		if t.nodes[i].live && t.nodes[i].queued != want[i] {
			add("node %d: protected by %d queued requests, the live protections imply %d", i, t.nodes[i].queued, want[i])
		}
	}
}
