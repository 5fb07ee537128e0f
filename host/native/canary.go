package native

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"unsafe"

	"github.com/radixkv/radixkv/core"
)

// CanaryBytes is the size of the canary record the controller writes at
// the start of a slot; pools used with the canary need at least this
// many bytes per slot.
//
// The record for the token at position i of a request in namespace ns is
// the digest d_i of (ns, tokens[0..i]) as a little-endian uint32, from a
// chain seeded by the namespace that adds one term a token, mod 2^32:
//
//	d_-1 = seed(ns)
//	d_i  = d_{i-1} + mix(tokens[i] ^ i*0x9e3779b9)
//
// where mix is a bijective 32-bit mixer (canaryMix). For a given previous
// digest and position, distinct tokens give distinct digests, so the
// first position where a slot's prefix differs from the request's is
// always caught, and so is every later position of a prefix that differs
// at one position only; a slot of another prefix, another tenant, another
// position (the position is mixed into every term) or a recycled, zeroed
// slot holds the expected digest only by a 2^-32 accident. The terms do
// not depend on the chain, so writing and checking a run's records
// overlap their multiplies.
//
// 32 bits, not 64: a record is the bytes the canary adds to every slot
// write and check, and at millions of slots the write path waits on
// memory, not on the mixer. What that gives up is the per-slot miss
// chance, 2^-32 instead of 2^-64; the certain catches above stay certain.
// The canary is a test oracle for the controller's bookkeeping, and a
// bookkeeping defect misplaces many slots over and over: to go unseen,
// every occurrence must hold the expected records by accident, and one
// miss shows it. See RATIONALE.md, "What the canary costs".
const CanaryBytes = 4

// canarySeed derives the chain seed from every namespace field
// (length-prefixed, so field boundaries cannot be shifted).
func canarySeed(ns core.Namespace) uint32 {
	const offset, prime = 0xcbf29ce484222325, 0x100000001b3
	h := uint64(offset)
	for _, f := range [...]string{ns.ExtraKey, ns.CacheSalt, ns.LoRA} {
		n := uint64(len(f))
		for k := 0; k < 8; k++ {
			h = (h ^ (n & 0xff)) * prime
			n >>= 8
		}
		for k := 0; k < len(f); k++ {
			h = (h ^ uint64(f[k])) * prime
		}
	}
	return uint32(h ^ h>>32) // fold: every bit of the hash reaches the seed
}

// canaryMix maps (token, position) to the term canaryStep adds to the
// chain: a bijective 32-bit mixer (odd multiplies and xor-shifts) of the
// token xor a position word, so for one position distinct tokens give
// distinct terms, and a token's term depends on where it stands. Nothing
// in it depends on the chain, so the mixes of a run of tokens overlap.
func canaryMix(tok uint32, pos uint64) uint32 { return canaryMixP(tok, uint32(pos)*canaryPosMul) }

// canaryPosMul spreads positions over 32 bits: the position word of
// position i is i*canaryPosMul mod 2^32 (a Weyl sequence: an odd
// multiplier, so distinct positions below 2^32 get distinct words, and a
// run's words follow from one another by an add).
const canaryPosMul = 0x9e3779b9 // 2^32 over the golden ratio, made odd

// canaryMixP is canaryMix given the position word p.
func canaryMixP(tok uint32, p uint32) uint32 {
	return mixKeyed(tok, p, canaryKeys[0], canaryKeys[1])
}

// canaryKeys are canaryMixP's multipliers. A variable, not constants, so
// the hot loops load them once into registers instead of materializing
// two immediates a record; never written.
var canaryKeys = [2]uint32{canaryK1, canaryK2}

// canaryK1 and canaryK2 are the first 32 fraction bits of sqrt(2) and
// sqrt(3): odd, so each multiply is a bijection mod 2^32, and with no
// structure a token's bits could line up with.
const canaryK1, canaryK2 = 0x6a09e667, 0xbb67ae85

// mixKeyed is canaryMixP with its multipliers passed in: multiply, fold
// the high half down, multiply, fold again. Each step is invertible
// (an odd multiply; x ^ x>>s for s > 0), so the whole is a bijection of
// tok ^ p; the folds carry the high bits a multiply produces back into
// the low bits the next multiply spreads upward.
func mixKeyed(tok uint32, p, k1, k2 uint32) uint32 {
	x := (tok ^ p) * k1
	x = (x ^ x>>16) * k2
	return x ^ x>>15
}

// canaryStep folds the token at position pos into the chain: digest_i =
// digest_{i-1} + canaryMix(tokens[i], i). For a given chain value and
// position, distinct tokens step to distinct values (an add of a
// bijection of the token); the only carried dependency is the add, so
// the chain no longer waits on a multiply a token.
func canaryStep(h uint32, tok uint32, pos uint64) uint32 { return h + canaryMix(tok, pos) }

// canaryChain folds tokens at positions pos, pos+1, ... into h.
func canaryChain(h uint32, tokens []uint32, pos uint64) uint32 {
	p := uint32(pos) * canaryPosMul
	for _, t := range tokens {
		h += canaryMixP(t, p)
		p += canaryPosMul
	}
	return h
}

// putCanary encodes the record with chain digest h.
func putCanary(dst *[CanaryBytes]byte, h uint32) {
	binary.LittleEndian.PutUint32(dst[:], h)
}

// The record of a Mamba state after the first n atoms of a request is
// the digest of (ns, tokens[0..n-1]) with stateTag flipped, so it never
// equals the KV record of the same prefix. A state advances from what
// its slot holds: one forked from the wrong slot stays wrong, and Verify
// or a later match that forks it reports the mismatch. (n is in the
// digest already: every term mixes its position.)
const stateTag = 1 << 31

func putState(dst *[CanaryBytes]byte, h uint32) {
	binary.LittleEndian.PutUint32(dst[:], h^stateTag)
}

// putState writes the record of the state after n atoms, chain value h,
// into slot (n is in h already; callers name it for the reader).
func (c *Controller) putState(slot int32, h uint32, _ int) error {
	var rec [CanaryBytes]byte
	putState(&rec, h)
	c.stats.BytesWritten += CanaryBytes
	return c.hy.mamba.Write(slot, rec[:])
}

// stateIs reports whether slot holds the record of the state after n
// atoms with chain value h (n is in h already).
func (c *Controller) stateIs(slot int32, h uint32, _ int) (bool, error) {
	var want, got [CanaryBytes]byte
	putState(&want, h)
	if err := c.hy.mamba.Read(slot, got[:]); err != nil {
		return false, err
	}
	return got == want, nil
}

// verifyState checks a state slot like verifyChain checks KV slots.
func (c *Controller) verifyState(slot int32, h uint32, n int) error {
	ok, err := c.stateIs(slot, h, n)
	if err != nil && notHeld(err) {
		c.stats.CanaryChecked++
		c.stats.CanaryMismatches++
		return fmt.Errorf("%w: mamba state slot %d: %v", ErrCanaryMismatch, slot, err)
	}
	if err != nil {
		return fmt.Errorf("native: reading the canary of mamba state slot %d: %w", slot, err)
	}
	c.stats.CanaryChecked++
	if ok {
		return nil
	}
	c.stats.CanaryMismatches++
	return fmt.Errorf("%w: mamba state slot %d does not hold the state after %d atoms", ErrCanaryMismatch, slot, n)
}

// stateAt returns the chain value of r's state after its first n atoms,
// derived from r's running state: when that is not the record it should
// be, the result is deliberately wrong too.
func (c *Controller) stateAt(r *Request, n int) (uint32, error) {
	ok, err := c.stateIs(r.mstate, r.hash, len(r.slots))
	if err != nil {
		return 0, err
	}
	var h uint32
	switch n {
	case len(r.slots):
		h = r.hash
	case r.ckLen:
		h = r.ckHash
	default:
		h = canaryChain(canarySeed(r.ns), r.tokens[:n], 0)
	}
	if !ok {
		h = ^h
	}
	return h, nil
}

// writeComputed writes the records of r's slots from start on (and of
// the SWA slots they map to), advances r's chain and its Mamba state, and
// tracks the state's last checkpoint.
func (c *Controller) writeComputed(r *Request, start int) error {
	first := start
	h, old := r.hash, r.hash
	swa, grid := c.hy.swa, c.hy.grid
	if mem, ok := rawMem(c.kv); ok && swa == nil && grid == 0 {
		// This package's pools: the records go straight into memory, a
		// run of consecutive slots (a page) at a time.
		slots, toks := r.slots, r.tokens
		if mem.sz == CanaryBytes {
			// Records back to back: one tight loop per run of
			// consecutive slots (a page).
			for start < len(slots) {
				s := slots[start]
				end := min(len(slots), start+len(mem.mem)/CanaryBytes-int(s))
				if s < 0 || end <= start {
					break // not a slot of the pool: the Pool calls below say so
				}
				var n int
				h, n = writeRun(mem.mem[int(s)*CanaryBytes:], slots[start:end], toks[start:], h, uint64(start))
				start += n
			}
		} else {
			for ; start < len(slots) && slots[start] >= 0 && int(slots[start]) < len(mem.mem)/mem.sz; start++ {
				rec := mem.slot(slots[start])
				h = canaryStep(h, toks[start], uint64(start))
				binary.LittleEndian.PutUint32(rec, h)
			}
		}
	}
	for i := start; i < len(r.slots); i++ {
		h = canaryStep(h, r.tokens[i], uint64(i))
		putCanary(&c.want, h)
		if err := c.kv.Write(r.slots[i], c.want[:]); err != nil {
			return err
		}
		if swa != nil {
			if err := swa.Write(c.hy.swaOf[r.slots[i]], c.want[:]); err != nil {
				return err
			}
		}
		if grid > 0 && (i+1)%grid == 0 {
			r.ckLen, r.ckHash = i+1, h
		}
	}
	r.hash = h
	n := len(r.slots) - first
	c.stats.BytesWritten += uint64(n * CanaryBytes)
	if swa != nil {
		c.stats.BytesWritten += uint64(n * CanaryBytes)
	}
	if r.mstate >= 0 {
		ok, err := c.stateIs(r.mstate, old, first)
		if err != nil {
			return err
		}
		if !ok {
			h = ^h
		}
		return c.putState(r.mstate, h, len(r.slots))
	}
	return nil
}

// swaWindow names up to two position ranges whose SWA slots a check
// covers as well; the zero value covers none.
type swaWindow struct{ lo, hi, lo2, hi2 int }

func (w swaWindow) has(i int) bool { return (i >= w.lo && i < w.hi) || (i >= w.lo2 && i < w.hi2) }

// matchWindow covers the last window of a matched prefix of n atoms: the
// SWA KV a hit promises.
func (h *hybrid) matchWindow(n int) swaWindow {
	if h.swa == nil {
		return swaWindow{}
	}
	return swaWindow{lo: max(0, n-h.window), hi: n}
}

// requestWindow covers what r still holds: its own positions inside its
// window, and the locked window above its protected prefix unless that
// lock was released early.
func (h *hybrid) requestWindow(r *Request) swaWindow {
	if h.swa == nil {
		return swaWindow{}
	}
	w := swaWindow{lo: max(r.swaEvicted, r.protected), hi: len(r.slots)}
	if !r.swaReleased {
		w.lo2, w.hi2 = max(0, r.protected-h.window), r.protected
	}
	return w
}

// verifyChain checks that slots[i] holds the record of tokens[:i+1] for
// every i < len(slots), starting from chain value h at position 0, and
// that the SWA slots of the positions in w hold it too. It returns the
// chain value after len(slots) tokens, the number of bad slots and an
// error naming the first one: ErrCanaryMismatch, or the pool's error when
// a slot could not be read (which counts as no bad slot: the I/O failed,
// not the data). Call with c.mu held.
func (c *Controller) verifyChain(ns core.Namespace, h uint32, tokens []uint32, slots []int32, w swaWindow) (uint32, int, error) {
	if mem, ok := rawMem(c.kv); ok && w.hi == 0 {
		// This package's pools: compare in place up to the first
		// mismatch, then slot by slot through the Pool calls.
		k := 0
		if mem.sz == CanaryBytes {
			h, k = verifyRuns(mem.mem, mem.used, h, tokens, slots)
		} else {
			for ; k < len(slots); k++ {
				if slots[k] < 0 || heldPrefix(mem.used, slots[k], 1) == 0 {
					break // verifyFrom reports the slot nobody holds
				}
				g := canaryStep(h, tokens[k], uint64(k))
				rec := mem.slot(slots[k])
				if binary.LittleEndian.Uint32(rec) != g {
					break
				}
				h = g
			}
		}
		c.stats.CanaryChecked += uint64(k)
		if k == len(slots) {
			return h, 0, nil
		}
		return c.verifyFrom(ns, h, tokens, slots, k, w)
	}
	return c.verifyFrom(ns, h, tokens, slots, 0, w)
}

// verifyRuns is verifyChain's in-place check when the records fill whole
// slots (mem holds one CanaryBytes record per slot): it checks every slot
// of a run of consecutive slots (a page) in one sequential sweep, and
// returns the chain value and the position of the first slot it did not
// confirm (len(slots) when all match), exactly as the slot-by-slot loop
// does. A slot past the end of mem stops the sweep there too, so
// verifyFrom's Pool calls report it.
//
// Each record is checked against the step from the record before it (the
// chain value h for the first): the step of slot k needs only the digest
// stored in slot k-1, not the result of checking it, so the checks of a
// run overlap instead of waiting on one another. That is the
// slot-by-slot rule all the same: by induction, while every record so far
// matched, the stored digest is the chain's.
func verifyRuns(mem []byte, used []uint64, h uint32, tokens []uint32, slots []int32) (uint32, int) {
	if rec := recordWords(mem); rec != nil {
		return verifyWords(rec, used, h, tokens, slots)
	}
	k := 0
	for k < len(slots) {
		s := slots[k]
		e := k + 1
		for e < len(slots) && slots[e] == slots[e-1]+1 {
			e++
		}
		room := len(mem)/CanaryBytes - int(s) // slots from s to the end of mem
		if s < 0 || room <= 0 {
			return h, k
		}
		if e-k > room {
			e = k + room
		}
		// A slot nobody holds stops the sweep too: freed pages keep
		// their records until handed out again (slotPool.stale), so a
		// freed slot handed back is caught by its allocation bit, and
		// verifyFrom reports it.
		if held := heldPrefix(used, s, e-k); held < e-k {
			if held == 0 {
				return h, k
			}
			e = k + held
		}
		var n int
		h, n = checkRun(mem[int(s)*CanaryBytes:(int(s)+e-k)*CanaryBytes], tokens[k:e], h, uint64(k))
		if k += n; k < e {
			return h, k
		}
	}
	return h, k
}

// verifyWords is verifyRuns on the records' word view rec: one pass per
// run that finds where the run of consecutive slots ends and checks each
// record on the way (a separate pass to find the run cost as much as the
// check, RATIONALE.md), then the run's allocation bits a word at a time.
func verifyWords(rec []uint32, used []uint64, h uint32, tokens []uint32, slots []int32) (uint32, int) {
	p, k1 := uint32(0), canaryKeys[0]
	for k := 0; k < len(slots); {
		s := slots[k]
		if s < 0 || int(s) >= len(rec) {
			return h, k
		}
		n := min(len(slots)-k, len(rec)-int(s))
		r, sl := rec[s:int(s)+n], slots[k:k+n]
		h0 := h
		var j int
		h, p, j = checkWords(r, sl, tokens[k:k+n], h, p, k1)
		// The records of slots s..s+j-1 match; count only those held.
		if held := heldPrefix(used, s, j); held < j {
			if held > 0 {
				h0 = r[held-1]
			}
			return h0, k + held
		}
		k += j
		if j == 0 || (j < len(r) && sl[j] == s+int32(j)) {
			return h, k // a record that does not match (or nothing to run)
		}
	}
	return h, len(slots)
}

// checkWords checks the records r of slots sl (from r[0], slot sl[0] on)
// for tokens tk at position words p, p+canaryPosMul, ... from chain value
// h while the slots are consecutive and each record is the step from the
// one before it; it returns the chain value, the next position word and
// how many records it confirmed. It runs the vector kernel this CPU has
// (canary_amd64.go), else checkWordsGo: the same results.
func checkWords(r []uint32, sl []int32, tk []uint32, h, p, k1 uint32) (uint32, uint32, int) {
	return checkWordsVec(canaryVector, r, sl, tk, h, p, k1)
}

// checkWordsGo is checkWords in Go: the definition the vector kernels
// are tested against, and the loop where there are none. A loop of its
// own, so that its values stay in registers.
func checkWordsGo(r []uint32, sl []int32, tk []uint32, h, p, k1 uint32) (uint32, uint32, int) {
	const k2 = canaryK2 // an immediate: the loop is a register short otherwise
	n := min(len(r), len(sl), len(tk))
	r, sl, tk = r[:n], sl[:n], tk[:n]
	if n == 0 {
		return h, p, 0
	}
	s0 := sl[0]
	for j, d := range r {
		if sl[j] != s0+int32(j) || d-h != mixKeyed(tk[j], p, k1, k2) {
			return h, p, j
		}
		h, p = d, p+canaryPosMul
	}
	return h, p, n
}

// writeWords is writeRun's loop on the records' word view: it writes the
// records of tokens tk at position words p, p+canaryPosMul, ... from
// chain value h into rec while the slots sl are consecutive, and returns
// the chain value and how many it wrote. It runs the vector kernel this
// CPU has (canary_amd64.go), else writeWordsGo: the same records.
func writeWords(rec []uint32, sl []int32, tk []uint32, h, p, k1, k2 uint32) (uint32, int) {
	return writeWordsVec(canaryVector, rec, sl, tk, h, p, k1, k2)
}

// writeWordsGo is writeWords in Go: the definition the vector kernels
// are tested against, and the loop where there are none.
func writeWordsGo(rec []uint32, sl []int32, tk []uint32, h, p, k1, k2 uint32) (uint32, int) {
	n := min(len(rec), len(sl), len(tk))
	rec, sl, tk = rec[:n], sl[:n], tk[:n]
	if n == 0 {
		return h, 0
	}
	s0 := sl[0]
	for j := range rec {
		if sl[j] != s0+int32(j) {
			return h, j
		}
		h += mixKeyed(tk[j], p, k1, k2)
		rec[j] = h
		p += canaryPosMul
	}
	return h, n
}

// heldPrefix is how many of the slots s, s+1, ..., s+n-1 are allocated in
// the bitmap used before the first that is not (n when all are), a
// bitmap word at a time.
func heldPrefix(used []uint64, s int32, n int) int {
	if w, m, ok := oneWord(s, n); ok && w < len(used) && used[w]&m == m {
		return n // a page within one bitmap word, all held: the usual case
	}
	for i := 0; i < n; {
		t := int(s) + i
		wd, b := t>>6, uint(t)&63
		if wd >= len(used) {
			return i
		}
		c := min(64-int(b), n-i)
		if free := ^used[wd] & (^uint64(0) >> (64 - uint(c)) << b); free != 0 {
			return i + bits.TrailingZeros64(free) - int(b)
		}
		i += c
	}
	return n
}

// checkRun checks the records back to back in run against tokens tk at
// positions pos, pos+1, ... from chain value h, each against the step from
// the digest stored before it; it returns the chain value and how many
// records matched before the first that did not. run holds len(tk)
// records. Four records at a time, their differences from what they
// should be or'ed together, so a match costs one branch per four slots;
// a group with a difference is rechecked one record at a time to find
// the first bad one.
func checkRun(run []byte, tk []uint32, h uint32, pos uint64) (uint32, int) {
	w := uint32(canaryPosMul) // a variable: 2*w and up wrap
	p := uint32(pos) * w
	if rec := recordWords(run); rec != nil {
		rec = rec[:len(tk)]
		for j, t := range tk {
			d := rec[j]
			if d-h != canaryMixP(t, p) {
				return h, j
			}
			h, p = d, p+w
		}
		return h, len(tk)
	}
	le := binary.LittleEndian
	run = run[:len(tk)*CanaryBytes]
	j := 0
	for ; j+4 <= len(tk); j += 4 {
		r := (*[4 * CanaryBytes]byte)(run[j*CanaryBytes:])
		t := (*[4]uint32)(tk[j:])
		d0, d1, d2, d3 := le.Uint32(r[0:]), le.Uint32(r[4:]), le.Uint32(r[8:]), le.Uint32(r[12:])
		diff := (d0 - h - canaryMixP(t[0], p)) | (d1 - d0 - canaryMixP(t[1], p+w)) |
			(d2 - d1 - canaryMixP(t[2], p+2*w)) | (d3 - d2 - canaryMixP(t[3], p+3*w))
		if diff != 0 {
			break
		}
		h, p = d3, p+4*w
	}
	for ; j < len(tk); j++ {
		d := le.Uint32(run[j*CanaryBytes:])
		if d-h != canaryMixP(tk[j], p) {
			return h, j
		}
		h, p = d, p+w
	}
	return h, len(tk)
}

// recordWords views run, records back to back, as its words, or returns
// nil where that view is not the records' encoding (a big-endian
// machine) or not a valid one (run not 4-byte aligned; this package's
// pools are: their memory is word-aligned and a record slot is 4 bytes). The checks and writes of a run then cost a load or a store
// a record, not a slice, a bounds check and a byte order each: the
// canary's loops are as much instructions as memory (RATIONALE.md).
func recordWords(run []byte) []uint32 {
	if !littleEndian || len(run) < CanaryBytes || uintptr(unsafe.Pointer(unsafe.SliceData(run)))%CanaryBytes != 0 {
		return nil
	}
	return unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(run))), len(run)/CanaryBytes)
}

// writeRun writes the records of tokens tk at positions pos, pos+1, ...
// back to back into run while slots are consecutive (slots[j] ==
// slots[0]+j), stepping the chain from h; it returns the chain value after
// the last record written and how many it wrote (at least one). run holds
// a record for each of slots, tk a token for each.
func writeRun(run []byte, slots []int32, tk []uint32, h uint32, pos uint64) (uint32, int) {
	if rec := recordWords(run); rec != nil {
		// One pass: find where the run ends while writing it.
		return writeWords(rec, slots, tk, h, uint32(pos)*canaryPosMul, canaryKeys[0], canaryKeys[1])
	}
	n, s0 := 1, slots[0]
	for n < len(slots) && slots[n] == s0+int32(n) {
		n++
	}
	return writeRecords(run, tk[:n], h, pos), n
}

// writeRecords is writeRun's loop over one run (len(tk) records): a
// record a word through recordWords, else four records a bounds check.
func writeRecords(run []byte, tk []uint32, h uint32, pos uint64) uint32 {
	w := uint32(canaryPosMul) // a variable: 2*w and up wrap
	p := uint32(pos) * w
	if rec := recordWords(run); rec != nil {
		rec = rec[:len(tk)]
		for j, t := range tk {
			h += canaryMixP(t, p)
			rec[j] = h
			p += w
		}
		return h
	}
	le := binary.LittleEndian
	run = run[:len(tk)*CanaryBytes]
	j := 0
	for ; j+4 <= len(tk); j += 4 {
		r := (*[4 * CanaryBytes]byte)(run[j*CanaryBytes:])
		t := (*[4]uint32)(tk[j:])
		h0 := h + canaryMixP(t[0], p)
		h1 := h0 + canaryMixP(t[1], p+w)
		h2 := h1 + canaryMixP(t[2], p+2*w)
		h = h2 + canaryMixP(t[3], p+3*w)
		le.PutUint32(r[0:], h0)
		le.PutUint32(r[4:], h1)
		le.PutUint32(r[8:], h2)
		le.PutUint32(r[12:], h)
		p += 4 * w
	}
	for ; j < len(tk); j++ {
		h += canaryMixP(tk[j], p)
		le.PutUint32(run[j*CanaryBytes:], h)
		p += w
	}
	return h
}

// verifyFrom is verifyChain from position k on, through the Pool calls.
func (c *Controller) verifyFrom(ns core.Namespace, h uint32, tokens []uint32, slots []int32, k int, w swaWindow) (uint32, int, error) {
	var first error
	bad, checked := 0, len(slots)-k
	for i := k; i < len(slots); i++ {
		s := slots[i]
		h = canaryStep(h, tokens[i], uint64(i))
		putCanary(&c.want, h)
		if err := c.kv.Read(s, c.got[:]); err != nil {
			if notHeld(err) {
				// A freed or foreign slot handed back: the data is gone.
				bad++
				if first == nil {
					first = fmt.Errorf("%w: position %d, slot %d: %v", ErrCanaryMismatch, i, s, err)
				}
				continue
			}
			// An I/O error says nothing about the slot's data.
			checked--
			if first == nil {
				first = fmt.Errorf("native: reading the canary of position %d, slot %d: %w", i, s, err)
			}
			continue
		}
		if c.got != c.want {
			bad++
			if first == nil {
				first = fmt.Errorf("%w: namespace %+v position %d slot %d holds %x, want %x",
					ErrCanaryMismatch, ns, i, s, c.got, c.want)
			}
			continue
		}
		if w.hi > 0 && w.has(i) {
			checked++
			if err := c.verifySWASlot(ns, i, s); err != nil {
				if errors.Is(err, ErrCanaryMismatch) {
					bad++
				} else {
					checked--
				}
				if first == nil {
					first = err
				}
			}
		}
	}
	c.stats.CanaryChecked += uint64(checked)
	c.stats.CanaryMismatches += uint64(bad)
	return h, bad, first
}

// verifySWASlot checks that Full slot s (position i) maps to an SWA slot
// holding c.want.
func (c *Controller) verifySWASlot(ns core.Namespace, i int, s int32) error {
	sw := c.hy.mapping(s)
	if sw < 0 {
		return fmt.Errorf("%w: namespace %+v position %d: full slot %d maps to no SWA slot", ErrCanaryMismatch, ns, i, s)
	}
	if err := c.hy.swa.Read(sw, c.got[:]); err != nil {
		if notHeld(err) {
			return fmt.Errorf("%w: position %d, SWA slot %d: %v", ErrCanaryMismatch, i, sw, err)
		}
		return fmt.Errorf("native: reading the canary of position %d, SWA slot %d: %w", i, sw, err)
	}
	if c.got != c.want {
		return fmt.Errorf("%w: namespace %+v position %d SWA slot %d (of full slot %d) holds %x, want %x",
			ErrCanaryMismatch, ns, i, sw, s, c.got, c.want)
	}
	return nil
}

// notHeld reports a pool error that names a slot nobody holds (free, or
// out of range): for a slot the tree handed back, lost data, not I/O.
func notHeld(err error) bool {
	return errors.Is(err, ErrSlotNotAllocated) || errors.Is(err, ErrSlotRange)
}

// slotMem is the storage of one of this package's pools, for the
// canary's per-token records without a call per slot.
type slotMem struct {
	mem  []byte
	sz   int
	used []uint64 // the pool's allocation bitmap
}

// slot returns the record bytes of slot s (in range: the tree's and the
// request's slots are the pool's own).
func (m slotMem) slot(s int32) []byte {
	off := int(s) * m.sz
	return m.mem[off : off+CanaryBytes : off+CanaryBytes]
}

// rawMem returns p's storage when p is one of this package's open pools
// with room for a record per slot.
func rawMem(p Pool) (slotMem, bool) {
	var sp *slotPool
	switch q := p.(type) {
	case *MemPool:
		sp = &q.slotPool
	case *MmapPool:
		sp = &q.slotPool
	default:
		return slotMem{}, false
	}
	if sp.closed || sp.slotBytes < CanaryBytes {
		return slotMem{}, false
	}
	return slotMem{sp.mem, sp.slotBytes, sp.used}, true
}

// poison zeroes the records of slots (those in range), a run of
// consecutive slots at a time when the records are the whole slot.
func (m slotMem) poison(slots []int32, capacity int) {
	for k := 0; k < len(slots); {
		s := slots[k]
		e := k + 1
		if m.sz == CanaryBytes {
			for e < len(slots) && slots[e] == slots[e-1]+1 {
				e++
			}
		}
		if uint(s) < uint(capacity) && int(s)+(e-k) <= capacity {
			if e-k > 1 {
				clear(m.mem[int(s)*m.sz : (int(s)+e-k)*m.sz])
			} else {
				clear(m.slot(s))
			}
		}
		k = e
	}
}

// localPaged returns the storage of p when it is one of this package's
// open paged pools (page > 1).
func localPaged(p Pool) *slotPool {
	var sp *slotPool
	switch q := p.(type) {
	case *MemPool:
		sp = &q.slotPool
	case *MmapPool:
		sp = &q.slotPool
	default:
		return nil
	}
	if sp.closed || sp.page == 1 || sp.slotBytes < CanaryBytes {
		return nil
	}
	return sp
}
