package snapshot

import "fmt"

// leaseActive reports whether the live session's tails and siblings are
// protected now: there is a live session, leases are on, and fewer than
// the TTL evictions happened since its last lookup.
func (x *Index) leaseActive() bool {
	return x.live != 0 && !x.cfg.NoLease && x.since < x.ttl
}

// victim returns the position of the next resident entry to evict, or -1.
//
// Order: among resident entries, leased ones (the live session's tails and
// siblings) are skipped while an unleased one exists; of the rest, the
// session whose freshest resident entry is oldest goes first (session 0
// is one group); within it the lowest S = norm(stamp) + Alpha*norm(tokens),
// both min-max normalised over all resident entries (a flat range is 0);
// ties go to the older stamp. Stamps are unique, so the order is total.
func (x *Index) victim() int {
	if x.mar != nil {
		return x.marconiVictim()
	}
	best := -1
	if x.cfg.GlobalLRU {
		for p := range x.entries {
			e := &x.entries[p]
			if !e.tiered && (best < 0 || e.stamp < x.entries[best].stamp) {
				best = p
			}
		}
		return best
	}
	lease := x.leaseActive()
	leased := func(e *entry) bool { return lease && e.session == x.live && e.kind != Plain }
	var (
		anyFree                bool
		minS, maxS, minT, maxT uint64
		n                      int
	)
	fresh := map[uint64]uint64{} // session -> max resident stamp; looked up only
	for p := range x.entries {
		e := &x.entries[p]
		if e.tiered {
			continue
		}
		t := uint64(e.tokens)
		if n == 0 {
			minS, maxS, minT, maxT = e.stamp, e.stamp, t, t
		}
		minS, maxS = min(minS, e.stamp), max(maxS, e.stamp)
		minT, maxT = min(minT, t), max(maxT, t)
		n++
		fresh[e.session] = max(fresh[e.session], e.stamp)
		anyFree = anyFree || !leased(e)
	}
	if n == 0 {
		return -1
	}
	norm := func(v, lo, hi uint64) float64 {
		if hi == lo {
			return 0
		}
		return float64(v-lo) / float64(hi-lo)
	}
	var bestF uint64
	var bestScore float64
	for p := range x.entries {
		e := &x.entries[p]
		if e.tiered || (anyFree && leased(e)) {
			continue
		}
		f := fresh[e.session]
		// The explicit conversion keeps the product unfused on every target.
		s := norm(e.stamp, minS, maxS) + float64(x.cfg.Alpha*norm(uint64(e.tokens), minT, maxT))
		if best >= 0 {
			b := &x.entries[best]
			switch {
			case f != bestF:
				if f > bestF {
					continue
				}
			case s != bestScore:
				if s > bestScore {
					continue
				}
			case e.stamp > b.stamp:
				continue
			}
		}
		best, bestF, bestScore = p, f, s
	}
	return best
}

// EvictLRU removes the next victim and returns its slot for the host to
// free; ok is false when no entry is resident.
func (x *Index) EvictLRU() (slot int32, ok bool) {
	p := x.victim()
	if p < 0 {
		return -1, false
	}
	slot = x.entries[p].slot
	x.remove(p)
	x.stats.Evictions++
	x.since++
	return slot, true
}

// TierOutcome says what EvictToTier did with its victim.
type TierOutcome uint8

const (
	// Spill: the entry stays, tiered; the host copies the state in Slot out
	// to the blob named Key, then frees Slot.
	Spill TierOutcome = iota + 1
	// Drop: the entry was shallower than the gate and is gone; the host
	// frees Slot.
	Drop
)

// TierEvict is the result of EvictToTier.
type TierEvict struct {
	Outcome TierOutcome
	Slot    int32
	Key     uint64
	Adapter uint64 // the entry's adapter, for Promote and Forget
	Tokens  int
}

// EvictToTier frees the slot of the next victim: one shallower than
// minTokens (when minTokens > 0) is dropped, any other is spilled and
// stays findable as tiered. ok is false when no entry is resident.
func (x *Index) EvictToTier(minTokens int) (ev TierEvict, ok bool, err error) {
	if minTokens < 0 {
		return TierEvict{}, false, fmt.Errorf("%w: minTokens %d is negative", ErrInvalidArgument, minTokens)
	}
	p := x.victim()
	if p < 0 {
		return TierEvict{}, false, nil
	}
	e := &x.entries[p]
	ev = TierEvict{Outcome: Spill, Slot: e.slot, Key: e.key, Adapter: e.adapter, Tokens: e.tokens}
	x.stats.Evictions++
	x.since++
	if minTokens > 0 && e.tokens < minTokens {
		ev.Outcome = Drop
		x.stats.Drops++
		x.remove(p)
		return ev, true, nil
	}
	delete(x.bySlot, e.slot)
	e.tiered, e.slot = true, -1
	x.stats.Spills++
	return ev, true, nil
}

// tiered returns the position of the tiered entry key of adapter.
func (x *Index) tiered(key, adapter uint64) (int, error) {
	p, ok := x.byKey[key]
	if !ok {
		return 0, fmt.Errorf("%w: %#x", ErrUnknownKey, key)
	}
	e := &x.entries[p]
	if e.adapter != adapter {
		return 0, fmt.Errorf("%w: %#x is adapter %d's, not %d's", ErrWrongAdapter, key, e.adapter, adapter)
	}
	if !e.tiered {
		return 0, fmt.Errorf("%w: %#x is in slot %d", ErrResident, key, e.slot)
	}
	return int(p), nil
}

// Promote makes the tiered entry key resident in slot after the host
// faulted its blob in; a nonzero session re-tags a plain entry (a tail or
// sibling keeps its owner). The lookup that found it already stamped it.
func (x *Index) Promote(key, adapter uint64, slot int32, session uint64) error {
	if slot < 0 {
		return fmt.Errorf("%w: slot %d is negative", ErrInvalidArgument, slot)
	}
	p, err := x.tiered(key, adapter)
	if err != nil {
		return err
	}
	if holder, ok := x.bySlot[slot]; ok {
		return fmt.Errorf("%w: slot %d holds the snapshot %#x", ErrSlotInUse, slot, holder)
	}
	e := &x.entries[p]
	e.tiered, e.slot = false, slot
	if session != 0 && e.kind == Plain {
		e.session = session
	}
	x.bySlot[slot] = key
	x.stats.FaultIns++
	return nil
}

// Forget removes the tiered entry key (its blob is gone). It is not an
// eviction and renews no lease.
func (x *Index) Forget(key, adapter uint64) error {
	p, err := x.tiered(key, adapter)
	if err != nil {
		return err
	}
	x.remove(p)
	x.stats.Reaps++
	return nil
}
