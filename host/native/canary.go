package native

import (
	"encoding/binary"
	"fmt"

	"github.com/radixkv/radixkv/core"
)

// CanaryBytes is the size of the canary record the controller writes at
// the start of a slot; pools used with the canary need at least this
// many bytes per slot.
//
// The record for the token at position i of a request in namespace ns is
//
//	bytes 0..7   digest of (ns, tokens[0..i]) as a little-endian uint64
//	bytes 8..15  i as a little-endian uint64
//
// where the digest is a 64-bit hash chain seeded by the namespace and
// stepped once per token. Two slots hold equal records only when they were
// computed for the same position of the same token prefix in the same
// namespace, so a match that hands back a slot of another prefix, another
// tenant or a recycled slot is caught.
const CanaryBytes = 16

// canarySeed derives the chain seed from every namespace field
// (length-prefixed, so field boundaries cannot be shifted).
func canarySeed(ns core.Namespace) uint64 {
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
	return h
}

// canaryStep folds one token into the chain (a 64-bit finaliser mix).
func canaryStep(h uint64, tok uint32) uint64 {
	h ^= uint64(tok) + 0x9e3779b97f4a7c15 + h<<6 + h>>2
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// putCanary encodes the record for position pos with chain digest h.
func putCanary(dst *[CanaryBytes]byte, h uint64, pos int) {
	binary.LittleEndian.PutUint64(dst[0:8], h)
	binary.LittleEndian.PutUint64(dst[8:16], uint64(pos))
}

// verifyChain checks that slots[i] holds the record of tokens[:i+1] for
// every i < len(slots), starting from chain value h at position 0. It
// returns the chain value after len(slots) tokens, the number of bad
// slots and an error naming the first one. Call with c.mu held.
func (c *Controller) verifyChain(ns core.Namespace, h uint64, tokens []uint32, slots []int32) (uint64, int, error) {
	var first error
	bad := 0
	for i, s := range slots {
		h = canaryStep(h, tokens[i])
		putCanary(&c.want, h, i)
		if err := c.kv.Read(s, c.got[:]); err != nil {
			bad++
			if first == nil {
				first = fmt.Errorf("%w: position %d, slot %d: %v", ErrCanaryMismatch, i, s, err)
			}
			continue
		}
		if c.got != c.want {
			bad++
			if first == nil {
				first = fmt.Errorf("%w: namespace %+v position %d slot %d holds %x, want %x",
					ErrCanaryMismatch, ns, i, s, c.got, c.want)
			}
		}
	}
	c.stats.CanaryChecked += uint64(len(slots))
	c.stats.CanaryMismatches += uint64(bad)
	return h, bad, first
}
