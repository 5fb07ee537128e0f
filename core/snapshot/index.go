package snapshot

import (
	"fmt"
	"math"
	"slices"
)

// DefaultLeaseTTL is how many evictions a live session's tail lease
// survives without a new lookup from that session.
const DefaultLeaseTTL = 64

// MaxAlpha bounds Config.Alpha.
const MaxAlpha = 8

// Kind says which producer saved a snapshot.
type Kind uint8

const (
	// Plain is a finish-leaf, intermediate or decode checkpoint: it serves
	// every session.
	Plain Kind = iota
	// Tail is a mid-chunk tail: it serves only the session that saved it
	// and is leased to that session while it is live.
	Tail
	// Sibling is the checkpoint one block before a tail: it serves every
	// session but is leased like the tail.
	Sibling
)

func (k Kind) String() string {
	switch k {
	case Plain:
		return "plain"
	case Tail:
		return "tail"
	case Sibling:
		return "sibling"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Config tunes the victim order. The zero value is the reference default:
// pure recency within the least fresh session, a 64-eviction tail lease.
type Config struct {
	// Alpha weighs depth against recency in the victim score
	// S = norm(stamp) + Alpha*norm(tokens); 0 is pure LRU. In [0, MaxAlpha].
	Alpha float64
	// LeaseTTL is the number of evictions a lease survives without a lookup
	// from its session; 0 means DefaultLeaseTTL.
	LeaseTTL int
	// NoLease turns the tail lease off.
	NoLease bool
	// GlobalLRU replaces the session-aware order with the global least
	// recent resident entry (the reference's legacy switch).
	GlobalLRU bool
	// Marconi, when set, replaces the victim order with Marconi's utility
	// (recency plus Alpha times FLOPs saved per byte, see MarconiConfig);
	// sessions, leases, Alpha above and GlobalLRU then do not apply. The
	// index keeps each entry's tokens to know which entry extends which.
	Marconi *MarconiConfig
}

type entry struct {
	key     uint64
	adapter uint64
	tokens  int
	slot    int32 // -1 while tiered
	session uint64
	stamp   uint64
	kind    Kind
	tiered  bool
}

// Index maps prefix hashes to saved recurrent-state (SSM) snapshots. It is
// independent of any KV tree: evicting KV never removes a snapshot. Not
// safe for concurrent use; hosts wrap it in a lock.
type Index struct {
	cfg     Config
	ttl     uint64
	entries []entry
	byKey   map[uint64]int32 // key -> position in entries
	bySlot  map[int32]uint64 // resident slot -> key
	clock   uint64
	live    uint64 // session of the last session-tagged lookup; 0 = none
	since   uint64 // evictions since that lookup
	stats   Stats
	hashes  []uint64    // lookup scratch
	lens    []int       // distinct entry lengths, ascending: the only anchors a lookup probes
	lenN    map[int]int // entries per length
	mar     *forest     // Marconi bookkeeping; nil for the default order
}

// New returns an empty index, or ErrInvalidConfig.
func New(cfg Config) (*Index, error) {
	if math.IsNaN(cfg.Alpha) || cfg.Alpha < 0 || cfg.Alpha > MaxAlpha {
		return nil, fmt.Errorf("%w: Alpha %v outside [0, %d]", ErrInvalidConfig, cfg.Alpha, MaxAlpha)
	}
	if cfg.LeaseTTL < 0 {
		return nil, fmt.Errorf("%w: LeaseTTL %d is negative", ErrInvalidConfig, cfg.LeaseTTL)
	}
	ttl := uint64(cfg.LeaseTTL)
	if ttl == 0 {
		ttl = DefaultLeaseTTL
	}
	x := &Index{cfg: cfg, ttl: ttl, byKey: map[uint64]int32{}, bySlot: map[int32]uint64{}, lenN: map[int]int{}}
	if m := cfg.Marconi; m != nil {
		if !m.Model.Valid() {
			return nil, fmt.Errorf("%w: Marconi model %+v needs SSM layers, d and n above 0", ErrInvalidConfig, m.Model)
		}
		if math.IsNaN(m.Alpha) || m.Alpha < 0 || m.Alpha > MaxAlpha {
			return nil, fmt.Errorf("%w: Marconi Alpha %v outside [0, %d]", ErrInvalidConfig, m.Alpha, MaxAlpha)
		}
		x.mar = newForest(*m)
		x.cfg.Marconi = nil // the live settings are in x.mar
	}
	return x, nil
}

// Match is the result of Lookup.
type Match struct {
	// Found is false when no snapshot anchors the prefix.
	Found bool
	// Tiered says the winner was spilled: fault it in from the blob named
	// Key, then Promote (or Forget when the blob is gone). Slot is -1.
	Tiered bool
	// Slot holds the state when the winner is resident.
	Slot int32
	// Key is the winner's prefix hash (its tier key).
	Key uint64
	// Tokens is the anchor: the prefix length the state was saved at.
	Tokens int
	// Kind of the winner.
	Kind Kind
}

// Lookup finds the deepest snapshot that anchors tokens[:matched] (the part
// the KV cache matched): an entry of this adapter whose length is at most
// matched and whose key is the hash of that many tokens. Tails count only
// for their own, nonzero session. Only the winner is re-stamped. A nonzero
// session becomes the live session and renews its tail lease.
func (x *Index) Lookup(tokens []uint32, matched int, session, adapter uint64) (Match, error) {
	if matched < 0 || matched > len(tokens) {
		return Match{}, fmt.Errorf("%w: matched %d outside [0, %d]", ErrInvalidArgument, matched, len(tokens))
	}
	if session != 0 {
		x.live, x.since = session, 0
	}
	x.stats.Lookups++
	// Probe only lengths some entry has, deepest first.
	top, _ := slices.BinarySearch(x.lens, matched+1)
	if top > 0 {
		x.hashes = appendPrefixHashes(x.hashes[:0], tokens, x.lens[top-1], adapter)
	}
	for j := top - 1; j >= 0; j-- {
		c := x.lens[j]
		p, ok := x.byKey[x.hashes[c]]
		if !ok {
			continue
		}
		e := &x.entries[p]
		if e.tokens != c || e.adapter != adapter {
			continue // another prefix that collides with this one
		}
		if e.kind == Tail && (session == 0 || e.session != session) {
			continue
		}
		x.clock++
		e.stamp = x.clock
		x.stats.Hits++
		x.stats.AnchorTokens += uint64(c)
		x.stats.RecomputeOnHit += uint64(matched - c)
		if e.tiered {
			x.stats.TierHits++
		}
		return Match{Found: true, Tiered: e.tiered, Slot: e.slot, Key: e.key, Tokens: c, Kind: e.kind}, nil
	}
	x.stats.RecomputeOnMiss += uint64(matched)
	return Match{Slot: -1}, nil
}

// Displaced lists what an insert or session end took out of the index: the
// resident slots the host frees, and the tier keys whose blobs it deletes
// (their entries are gone or resident again). The new snapshot's own slot
// is never listed.
type Displaced struct {
	Slots []int32
	Blobs []uint64
}

// Insert records a plain snapshot of tokens (finish leaf, intermediate or
// decode checkpoint) in slot. An existing entry for the prefix is
// overwritten: it takes the new slot and session, becomes resident and
// plain, and is re-stamped; its old resident slot is handed back.
func (x *Index) Insert(tokens []uint32, adapter uint64, slot int32, session uint64) (Displaced, error) {
	return x.insert(tokens, adapter, slot, session, Plain)
}

// InsertSibling records the checkpoint one block before a tail: as Insert,
// but the entry is leased to its session like a tail.
func (x *Index) InsertSibling(tokens []uint32, adapter uint64, slot int32, session uint64) (Displaced, error) {
	return x.insert(tokens, adapter, slot, session, Sibling)
}

// InsertTail records a mid-chunk tail snapshot for session (which must not
// be 0: a tail serves only its own session). The session's previous tails
// and siblings are superseded and removed first; then it inserts as Insert.
func (x *Index) InsertTail(tokens []uint32, adapter uint64, slot int32, session uint64) (Displaced, error) {
	return x.insert(tokens, adapter, slot, session, Tail)
}

// CanInsert reports the error the insert of kind would return, changing
// nothing; callers that pair an insert with other work validate first.
func (x *Index) CanInsert(tokens []uint32, adapter uint64, slot int32, session uint64, kind Kind) error {
	if kind > Sibling {
		return fmt.Errorf("%w: kind %d", ErrInvalidArgument, kind)
	}
	if kind == Tail && session == 0 {
		return fmt.Errorf("%w: a tail snapshot needs a nonzero session", ErrInvalidArgument)
	}
	if len(tokens) == 0 {
		return fmt.Errorf("%w: empty prefix", ErrInvalidArgument)
	}
	if slot < 0 {
		return fmt.Errorf("%w: slot %d is negative", ErrInvalidArgument, slot)
	}
	key := Hash(tokens, adapter)
	if holder, ok := x.bySlot[slot]; ok && holder != key && !x.swept(&x.entries[x.byKey[holder]], key, session, kind) {
		return fmt.Errorf("%w: slot %d holds the snapshot %#x", ErrSlotInUse, slot, holder)
	}
	return nil
}

// swept reports whether a tail insert of key for session supersedes e.
func (x *Index) swept(e *entry, key, session uint64, kind Kind) bool {
	return kind == Tail && e.session == session && e.kind != Plain && e.key != key
}

func (x *Index) insert(tokens []uint32, adapter uint64, slot int32, session uint64, kind Kind) (Displaced, error) {
	if err := x.CanInsert(tokens, adapter, slot, session, kind); err != nil {
		return Displaced{}, err
	}
	key := Hash(tokens, adapter)
	swept := func(e *entry) bool { return x.swept(e, key, session, kind) }
	var d Displaced
	if kind == Tail {
		for p := 0; p < len(x.entries); {
			e := &x.entries[p]
			if !swept(e) {
				p++
				continue
			}
			d = d.add(e, slot)
			x.stats.Swept++
			x.remove(p)
		}
	}
	x.clock++
	if p, ok := x.byKey[key]; ok {
		e := &x.entries[p]
		d = d.add(e, slot)
		if !e.tiered {
			delete(x.bySlot, e.slot)
		}
		x.dropLen(e.tokens)
		x.addLen(len(tokens))
		*e = entry{key: key, adapter: adapter, tokens: len(tokens), slot: slot, session: session, stamp: x.clock, kind: kind}
		x.bySlot[slot] = key
		x.stats.Overwrites++
		if x.mar != nil {
			x.forestRemove(key)
			x.forestAdd(e, tokens)
		}
		return d, nil
	}
	x.byKey[key] = int32(len(x.entries))
	x.bySlot[slot] = key
	x.entries = append(x.entries, entry{key: key, adapter: adapter, tokens: len(tokens), slot: slot, session: session, stamp: x.clock, kind: kind})
	x.addLen(len(tokens))
	x.stats.Saves++
	if x.mar != nil {
		x.forestAdd(&x.entries[len(x.entries)-1], tokens)
	}
	return d, nil
}

// add lists e's resources for the host, except keep (the new slot).
func (d Displaced) add(e *entry, keep int32) Displaced {
	switch {
	case e.tiered:
		d.Blobs = append(d.Blobs, e.key)
	case e.slot != keep:
		d.Slots = append(d.Slots, e.slot)
	}
	return d
}

func (x *Index) addLen(n int) {
	if x.lenN[n]++; x.lenN[n] == 1 {
		i, _ := slices.BinarySearch(x.lens, n)
		x.lens = slices.Insert(x.lens, i, n)
	}
}

func (x *Index) dropLen(n int) {
	if x.lenN[n]--; x.lenN[n] == 0 {
		delete(x.lenN, n)
		i, _ := slices.BinarySearch(x.lens, n)
		x.lens = slices.Delete(x.lens, i, i+1)
	}
}

// remove swap-removes the entry at p.
func (x *Index) remove(p int) {
	e := x.entries[p]
	if x.mar != nil {
		x.forestRemove(e.key)
	}
	x.dropLen(e.tokens)
	delete(x.byKey, e.key)
	if !e.tiered {
		delete(x.bySlot, e.slot)
	}
	last := len(x.entries) - 1
	if p != last {
		x.entries[p] = x.entries[last]
		x.byKey[x.entries[p].key] = int32(p)
	}
	x.entries = x.entries[:last]
}

// EndSession retires session: its tails (useless to anyone else) are
// removed, its siblings become plain entries, and its lease ends. Returns
// ErrUnknownSession when the session owns nothing and is not live.
func (x *Index) EndSession(session uint64) (Displaced, error) {
	if session == 0 {
		return Displaced{}, fmt.Errorf("%w: session 0 is the anonymous session", ErrInvalidArgument)
	}
	known := x.live == session
	for i := range x.entries {
		known = known || x.entries[i].session == session
	}
	if !known {
		return Displaced{}, fmt.Errorf("%w: %#x", ErrUnknownSession, session)
	}
	var d Displaced
	for p := 0; p < len(x.entries); {
		e := &x.entries[p]
		if e.session == session && e.kind == Sibling {
			e.kind = Plain
		}
		if e.session != session || e.kind != Tail {
			p++
			continue
		}
		d = d.add(e, -1)
		x.stats.Swept++
		x.remove(p)
	}
	if x.live == session {
		x.live, x.since = 0, 0
	}
	return d, nil
}

// Len is the number of entries, resident and tiered.
func (x *Index) Len() int { return len(x.entries) }

// Resident is the number of entries that hold a slot.
func (x *Index) Resident() int { return len(x.bySlot) }

// LiveSession is the session of the last session-tagged lookup (0: none).
func (x *Index) LiveSession() uint64 { return x.live }
