package core

// Keys are stored as runs of uint32 words: one word per atom, or two per
// atom in bigram mode. Lengths in the public API are in atoms; the helpers
// here translate. Key comparison decides match speed, so it lives in one
// small function that can be tuned per target (see ARCHITECTURE.md).

// pageHash mixes the words of one page into the edge-table hash, two
// words a round (half the rounds of a word at a time: a round is a few
// instructions natively but a few blocks of WebAssembly). It is a
// variable so tests can force collisions.
var pageHash = func(page []uint32) uint64 {
	h := uint64(0x9e3779b97f4a7c15) ^ uint64(len(page))
	i := 0
	for ; i+1 < len(page); i += 2 {
		h ^= uint64(page[i]) | uint64(page[i+1])<<32
		h *= 0xbf58476d1ce4e5b9
		h ^= h >> 31
	}
	if i < len(page) {
		h ^= uint64(page[i])
		h *= 0xbf58476d1ce4e5b9
		h ^= h >> 31
	}
	return h
}

// atomsOf converts raw tokens into key words in t's scratch buffer (bigram
// mode) or returns them as they are. The result is valid until the next
// call. It also returns the page-aligned atom count.
func (t *Tree) atomsOf(tokens []uint32) ([]uint32, int) {
	if !t.cfg.bigram {
		n := len(tokens) / t.cfg.page * t.cfg.page
		return tokens[:n], n
	}
	atoms := 0
	if len(tokens) > 1 {
		atoms = len(tokens) - 1
	}
	atoms = atoms / t.cfg.page * t.cfg.page
	buf := t.keyScratch[:0]
	for i := range atoms {
		buf = append(buf, tokens[i], tokens[i+1])
	}
	t.keyScratch = buf
	return buf, atoms
}

// keyAtoms is a node key's length in atoms.
func (t *Tree) keyAtoms(n *node) int { return len(n.key) / t.cfg.width }

// matchLen is the page-aligned common prefix, in atoms, of the query words
// q and a node key k.
func (t *Tree) matchLen(q, k []uint32) int {
	w := t.cfg.width
	m := mismatch(q, k) / w
	return m / t.cfg.page * t.cfg.page
}

// firstPage returns the words of the first page of key words k.
func (t *Tree) firstPage(k []uint32) []uint32 {
	return k[:t.cfg.page*t.cfg.width]
}
