package router

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"sort"
)

// Snapshot format: "RKVRIDX1", then uvarints/varints (see SPEC in doc.go),
// then a CRC-32 (IEEE) of everything before it, little-endian.
const snapMagic = "RKVRIDX1"

// ErrBadSnapshot reports a snapshot that cannot be restored.
var ErrBadSnapshot = errors.New("router: bad snapshot")

// Snapshot serialises the index with every worker's epoch and next
// sequence number and the transport cursor. A router restored from it
// (Restore) resumes each worker's stream at the saved sequence, so it
// catches up by replaying only what came after, not the whole history.
// Buffered out-of-order messages and in-flight loads are not saved. The
// bytes are deterministic: the same index gives the same snapshot.
func (r *Router) Snapshot() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	x := r.x
	order := make([]int32, len(x.workers))
	for i := range order {
		order[i] = int32(i)
	}
	sort.Slice(order, func(a, b int) bool { return x.workers[order[a]].name < x.workers[order[b]].name })
	rank := make([]uint64, len(x.workers))
	for k, w := range order {
		rank[w] = uint64(k)
	}
	b := []byte(snapMagic)
	b = binary.AppendUvarint(b, r.cursor)
	b = binary.AppendUvarint(b, uint64(len(order)))
	for _, w := range order {
		ws := x.workers[w]
		b = binary.AppendUvarint(b, uint64(len(ws.name)))
		b = append(b, ws.name...)
		b = binary.AppendUvarint(b, ws.seq.epoch)
		b = binary.AppendUvarint(b, ws.seq.next)
		b = binary.AppendUvarint(b, uint64(ws.swaBlocks))
		if ws.mamba {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
		idx := make([]int, 0, len(ws.groupKinds))
		for g := range ws.groupKinds {
			idx = append(idx, g)
		}
		sort.Ints(idx)
		b = binary.AppendUvarint(b, uint64(len(idx)))
		for _, g := range idx {
			b = binary.AppendVarint(b, int64(g))
			b = append(b, byte(ws.groupKinds[g]))
		}
	}
	hashes := make([]int64, 0, len(x.byHash))
	for h := range x.byHash {
		hashes = append(hashes, h)
	}
	sort.Slice(hashes, func(a, b int) bool { return hashes[a] < hashes[b] })
	b = binary.AppendUvarint(b, uint64(len(hashes)))
	for _, h := range hashes {
		e := &x.arena[x.byHash[h]]
		b = binary.AppendVarint(b, h)
		if e.hasParent {
			b = append(b, 1)
			b = binary.AppendVarint(b, e.parent)
		} else {
			b = append(b, 0)
		}
		hs := append([]holder(nil), e.holders...)
		sort.Slice(hs, func(a, c int) bool { return rank[hs[a].w] < rank[hs[c].w] })
		b = binary.AppendUvarint(b, uint64(len(hs)))
		for _, hd := range hs {
			b = binary.AppendUvarint(b, rank[hd.w])
			b = append(b, hd.masks[:]...)
		}
	}
	return binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
}

type snapReader struct {
	b   []byte
	err error
}

func (s *snapReader) fail(what string) {
	if s.err == nil {
		s.err = fmt.Errorf("%w: truncated or invalid %s", ErrBadSnapshot, what)
	}
}

func (s *snapReader) uvarint(what string) uint64 {
	if s.err != nil {
		return 0
	}
	v, n := binary.Uvarint(s.b)
	if n <= 0 {
		s.fail(what)
		return 0
	}
	s.b = s.b[n:]
	return v
}

func (s *snapReader) varint(what string) int64 {
	if s.err != nil {
		return 0
	}
	v, n := binary.Varint(s.b)
	if n <= 0 {
		s.fail(what)
		return 0
	}
	s.b = s.b[n:]
	return v
}

func (s *snapReader) bytes(n uint64, what string) []byte {
	if s.err != nil {
		return nil
	}
	if n > uint64(len(s.b)) {
		s.fail(what)
		return nil
	}
	out := s.b[:n]
	s.b = s.b[n:]
	return out
}

// Restore returns a router with cfg whose index and per-worker sequence
// state come from a snapshot (then trimmed to cfg's budget). Errors:
// ErrBadSnapshot (wrong magic, checksum, truncation, inconsistent or
// non-canonical contents), ErrInvalid for cfg.
func Restore(cfg Config, snap []byte) (*Router, error) {
	r, err := New(cfg)
	if err != nil {
		return nil, err
	}
	if len(snap) < len(snapMagic)+4 || string(snap[:len(snapMagic)]) != snapMagic {
		return nil, fmt.Errorf("%w: not a router snapshot", ErrBadSnapshot)
	}
	body := snap[:len(snap)-4]
	if crc32.ChecksumIEEE(body) != binary.LittleEndian.Uint32(snap[len(snap)-4:]) {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrBadSnapshot)
	}
	s := &snapReader{b: body[len(snapMagic):]}
	x := r.x
	r.cursor = s.uvarint("cursor")
	nw := s.uvarint("worker count")
	if nw > uint64(len(s.b)) {
		s.fail("worker count")
	}
	for i := uint64(0); i < nw && s.err == nil; i++ {
		name := string(s.bytes(s.uvarint("name length"), "name"))
		if s.err == nil {
			if _, dup := x.byName[name]; dup || name == "" {
				s.fail("worker name")
				break
			}
		}
		w := x.worker(name)
		ws := x.workers[w]
		ws.seq = seqState{started: true, epoch: s.uvarint("epoch"), next: s.uvarint("next seq")}
		ws.swaBlocks = int(s.uvarint("window") & 0x7fffffff)
		m := s.bytes(1, "mamba flag")
		ws.mamba = len(m) == 1 && m[0] == 1
		ng := s.uvarint("group count")
		for k := uint64(0); k < ng && s.err == nil; k++ {
			g := s.varint("group index")
			kind := s.bytes(1, "group kind")
			if s.err == nil {
				if kind[0] >= byte(numGroups) {
					s.fail("group kind")
					break
				}
				ws.groupKinds[int(int32(g))] = Group(kind[0])
			}
		}
	}
	nb := s.uvarint("block count")
	if nb > uint64(len(s.b)) {
		s.fail("block count")
	}
	for i := uint64(0); i < nb && s.err == nil; i++ {
		h := s.varint("hash")
		if s.err == nil {
			if _, dup := x.byHash[h]; dup {
				s.fail("duplicate block")
				break
			}
		}
		ei := x.get(h, true)
		flag := s.bytes(1, "parent flag")
		if len(flag) == 1 && flag[0] == 1 {
			x.arena[ei].parent, x.arena[ei].hasParent = s.varint("parent"), true
		}
		nh := s.uvarint("holder count")
		last := int64(-1)
		for k := uint64(0); k < nh && s.err == nil; k++ {
			wr := s.uvarint("holder")
			masks := s.bytes(uint64(numGroups), "tiers")
			if s.err != nil {
				break
			}
			if wr >= nw || int64(wr) <= last {
				s.fail("holder worker")
				break
			}
			last = int64(wr)
			hd := x.holderOf(ei, int32(wr), true)
			copy(hd.masks[:], masks)
			if hd.empty() {
				s.fail("empty holder")
			}
		}
		if s.err == nil && len(x.arena[ei].holders) == 0 {
			s.fail("block without holders")
		}
	}
	if s.err == nil && len(s.b) != 0 {
		s.fail("trailing bytes")
	}
	if s.err != nil {
		return nil, s.err
	}
	// Only snapshots this package writes are accepted: sorted workers and
	// blocks, minimal varints, flags 0 or 1. Anything else was not made
	// by Snapshot and is refused rather than half-trusted.
	if !bytes.Equal(r.Snapshot(), snap) {
		return nil, fmt.Errorf("%w: not in canonical form", ErrBadSnapshot)
	}
	x.enforceBudget()
	return r, nil
}
