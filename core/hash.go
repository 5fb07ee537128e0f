package core

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
)

// Page hashes chain SHA-256 digests page by page down the tree: a page's
// digest covers the previous page's raw digest (when there is one) and the
// page's key words as little-endian u32 (two words per atom for bigram
// keys). They name pages in storage (L3) and in KV cache events, so they
// follow SGLang's definition bit for bit:
//
//	digest(page) = SHA256(prior[32] ‖ LE32(word) ...)
//	prior        = the previous digest on the path; for the first page
//	               under the root, the namespace seed, or nothing for the
//	               default namespace
//
// Nodes hash lazily: a node's digests are computed the first time events
// (or storage) need them, together with any unhashed ancestors, and are
// divided on split at the page boundary.

// HashConvention picks how a page digest becomes a 64-bit event block id.
type HashConvention uint8

const (
	// HashSGLang takes the digest's first eight bytes big-endian as a
	// signed int64 (the first 16 hex characters, two's complement).
	HashSGLang HashConvention = iota
	// HashVLLM takes the digest's last eight bytes big-endian (the low 64
	// bits of the 256-bit value) as an unsigned integer; Event block ids
	// carry those bits in an int64 (read them back with uint64(id)).
	HashVLLM
)

// String names the convention.
func (c HashConvention) String() string {
	if c == HashVLLM {
		return "vllm"
	}
	return "sglang"
}

// blockID converts a digest to an event block id.
func (c HashConvention) blockID(d *[32]byte) int64 {
	if c == HashVLLM {
		return int64(binary.BigEndian.Uint64(d[24:]))
	}
	return int64(binary.BigEndian.Uint64(d[:8]))
}

// namespaceSeed is the prior of the first page under the root in a
// non-default namespace: SHA256 of a version tag and each field as
// 0x00 (absent) or 0x01‖u64 LE length‖bytes, for extra key and cache salt
// as in SGLang. radixkv's LoRA field, which SGLang folds into the extra
// key, is appended as a third field only when set, so namespaces without
// an adapter keep SGLang's digests.
func namespaceSeed(ns Namespace) [32]byte {
	h := sha256.New()
	h.Write([]byte("sglang-cache-namespace-v1"))
	field := func(s string) {
		if s == "" {
			h.Write([]byte{0})
			return
		}
		var n [9]byte
		n[0] = 1
		binary.LittleEndian.PutUint64(n[1:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	field(ns.ExtraKey)
	field(ns.CacheSalt)
	if ns.LoRA != "" {
		field(ns.LoRA)
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// saltSeed seeds the event-id chain of a namespace with a cache salt.
func saltSeed(salt string) [32]byte {
	return sha256.Sum256(append([]byte("sglang-cache-salt-v1\x00"), salt...))
}

// appendPageDigests appends the digests of each page of words to dst.
func (t *Tree) appendPageDigests(dst [][32]byte, prior *[32]byte, words []uint32) [][32]byte {
	pw := t.cfg.page * t.cfg.width
	for off := 0; off+pw <= len(words); off += pw {
		buf := t.hashBuf[:0]
		if prior != nil {
			buf = append(buf, prior[:]...)
		}
		for _, w := range words[off : off+pw] {
			buf = binary.LittleEndian.AppendUint32(buf, w)
		}
		t.hashBuf = buf
		dst = append(dst, sha256.Sum256(buf))
		prior = &dst[len(dst)-1]
	}
	return dst
}

// chain selects one of the two digest chains a node can carry.
type chain uint8

const (
	// storageChain is seeded by the whole namespace (L3 keys; event ids in
	// the default namespace).
	storageChain chain = iota
	// saltChain is seeded by the cache salt only (event ids in a
	// non-default namespace).
	saltChain
)

func (n *node) digests(c chain) *[][32]byte {
	if c == saltChain {
		return &n.evHash
	}
	return &n.hash
}

// ensureDigests computes the chain's digests of node i and of every
// unhashed ancestor, top-down, and returns node i's.
func (t *Tree) ensureDigests(i int32, c chain) [][32]byte {
	if d := *t.nodes[i].digests(c); d != nil {
		return d
	}
	missing := t.path[:0]
	var prior *[32]byte
	j := i
	for ; j != rootIdx; j = t.nodes[j].parent {
		if d := *t.nodes[j].digests(c); d != nil {
			prior = &d[len(d)-1]
			break
		}
		missing = append(missing, j)
	}
	if j == rootIdx {
		ns := t.nsList[t.nodes[i].ns]
		switch {
		case c == storageChain && !ns.IsDefault():
			seed := namespaceSeed(ns)
			prior = &seed
		case c == saltChain && ns.CacheSalt != "":
			seed := saltSeed(ns.CacheSalt)
			prior = &seed
		}
	}
	for k := len(missing) - 1; k >= 0; k-- {
		n := &t.nodes[missing[k]]
		d := t.appendPageDigests(make([][32]byte, 0, t.keyAtoms(n)/t.cfg.page), prior, n.key)
		*n.digests(c) = d
		prior = &d[len(d)-1]
	}
	t.path = missing[:0]
	return *t.nodes[i].digests(c)
}

// splitDigests divides the prefix's and child's digests at the split.
func splitDigests(p, c *node, pages int) {
	for _, ch := range []chain{storageChain, saltChain} {
		if d := *c.digests(ch); d != nil {
			*p.digests(ch) = d[:pages:pages]
			*c.digests(ch) = d[pages:]
		}
	}
}

// PageHashes returns node's storage page hashes as lowercase hex, one per
// page, computing them (and its ancestors') if needed.
// Errors: ErrStaleNode, ErrInvalidArgument for the root.
func (t *Tree) PageHashes(node NodeID) ([]string, error) {
	i, err := t.resolve(node)
	if err != nil {
		return nil, err
	}
	if i == rootIdx {
		return nil, fmt.Errorf("%w: the root has no pages", ErrInvalidArgument)
	}
	d := t.ensureDigests(i, storageChain)
	out := make([]string, len(d))
	for k := range d {
		out[k] = hex.EncodeToString(d[k][:])
	}
	return out, nil
}

// eventIDs appends the event block ids of node i's pages to dst.
func (t *Tree) eventIDs(dst []int64, i int32) []int64 {
	c := storageChain
	if t.nodes[i].ns != 0 {
		c = saltChain
	}
	d := t.ensureDigests(i, c)
	for k := range d {
		dst = append(dst, t.cfg.hashConv.blockID(&d[k]))
	}
	return dst
}

// lastEventID returns the event id of node i's last page, or false for
// the root.
func (t *Tree) lastEventID(i int32) (int64, bool) {
	if i == rootIdx {
		return 0, false
	}
	c := storageChain
	if t.nodes[i].ns != 0 {
		c = saltChain
	}
	d := t.ensureDigests(i, c)
	return t.cfg.hashConv.blockID(&d[len(d)-1]), true
}
