package blockcache

import (
	"fmt"
	"slices"
)

// Acquired tells the caller how an insert changed block ownership.
type Acquired struct {
	// Blocks are the sequence's blocks the cache adopted (new blocks and a
	// new partial suffix): the caller adds the cache's reference to each.
	Blocks []uint32
	// DiskIDs are the disk ids the cache started to hold (new blocks with a
	// disk copy, cached blocks that had none, a new partial suffix): the
	// caller adds a disk reference to each.
	DiskIDs []uint32
	// Released are blocks the cache stopped holding (a replaced partial
	// suffix, or one dropped because a following block now covers its
	// tokens): the caller drops the cache's reference. ReleasedDiskIDs
	// are their disk ids.
	Released, ReleasedDiskIDs []uint32
	// Unused are the sequence's blocks the cache did not adopt because the
	// chunk was already cached in another block; the sequence still owns them.
	Unused []uint32
}

// Insert caches tokens under adapter with table[i] holding block i (and
// disks[i] its disk id, or NoDisk; disks may be shorter than table). It
// covers min(len(tokens)/BlockSize, len(table)) whole blocks; when tokens
// end inside a block, table has one more entry and at least one whole
// block precedes it, that block becomes the last block's partial suffix.
// matched is the prefix the caller already referenced by Lookup: the
// blocks from matched/BlockSize on are the sequence's own and get its
// reference too (give it back with ReleaseMatched). Every touched block
// is stamped.
//
// Errors (nothing changed): ErrInvalidArgument for matched outside the
// tokens or more disk ids than blocks; ErrBlockInUse for a new block the
// cache already holds, or a block listed twice.
func (c *Cache) Insert(tokens, table, disks []uint32, matched int, adapter uint64) (Acquired, error) {
	if err := c.CanInsert(tokens, table, disks, matched, adapter); err != nil {
		return Acquired{}, err
	}
	return c.insert(tokens, table, disks, matched, adapter), nil
}

func diskAt(disks []uint32, i int) uint32 {
	if i < len(disks) {
		return disks[i]
	}
	return NoDisk
}

// pathBlock returns the id of block i of the last walk (i < its length).
func (c *Cache) pathBlock(i int) uint32 {
	for _, s := range c.path {
		if i < s.to {
			return c.nodes[s.n].blocks[i-s.from]
		}
	}
	panic("blockcache: pathBlock beyond the walk")
}

// CanInsert returns the error Insert would return, changing nothing.
func (c *Cache) CanInsert(tokens, table, disks []uint32, matched int, adapter uint64) error {
	if matched < 0 || matched > len(tokens) {
		return fmt.Errorf("%w: matched %d outside [0, %d]", ErrInvalidArgument, matched, len(tokens))
	}
	if len(disks) > len(table) {
		return fmt.Errorf("%w: %d disk ids for %d blocks", ErrInvalidArgument, len(disks), len(table))
	}
	n := min(len(tokens)/c.bs, len(table))
	e, _, _ := c.walk(tokens[:n*c.bs], adapter)
	// Mark the new blocks while checking them, so that one listed twice is
	// caught too, then unmark: validation leaves nothing behind.
	marked := 0
	defer func() {
		for _, b := range table[e : e+marked] {
			c.owned.del(b)
		}
	}()
	for _, b := range table[e:n] {
		if c.owned.has(b) {
			return fmt.Errorf("%w: block %d (cached, or listed twice)", ErrBlockInUse, b)
		}
		c.owned.add(b)
		marked++
	}
	if c.partialWanted(tokens, table, n) {
		b := table[n]
		same := false
		if n <= e {
			pt := c.partials[c.pathBlock(n-1)]
			same = pt != nil && pt.block == b
		}
		if c.owned.has(b) && !same {
			return fmt.Errorf("%w: partial block %d (cached, or listed twice)", ErrBlockInUse, b)
		}
	}
	return nil
}

// partialWanted reports whether an insert of n whole blocks stores a
// partial suffix (a partial after no block would hang from a root).
func (c *Cache) partialWanted(tokens, table []uint32, n int) bool {
	return n > 0 && n == len(tokens)/c.bs && len(tokens) > n*c.bs && len(table) > n
}

func (c *Cache) insert(tokens, table, disks []uint32, matched int, adapter uint64) Acquired {
	var a Acquired
	n := min(len(tokens)/c.bs, len(table))
	root := c.root(adapter, true)
	e, end, at := c.walk(tokens[:n*c.bs], adapter)
	if end == none {
		end = root
	}
	c.clock++
	// The sequence's own blocks are those its lookup did not reference:
	// from the first block not wholly matched (a sub-block match takes no
	// reference, so its block counts as the sequence's).
	own := matched / c.bs
	for _, s := range c.path {
		nd := &c.nodes[s.n]
		for j := range s.to - s.from {
			i := s.from + j
			if i >= own {
				nd.refs[j]++
			}
			if d := diskAt(disks, i); nd.disks[j] == NoDisk && d != NoDisk {
				nd.disks[j] = d
				a.DiskIDs = append(a.DiskIDs, d)
			}
			if nd.blocks[j] != table[i] {
				a.Unused = append(a.Unused, table[i])
			}
			nd.lasts[j] = c.clock
		}
		c.offer(s.n)
	}
	last := NoDisk // id of block n-1 once known; NoDisk is never looked up when n == 0
	if e > 0 {
		last = c.pathBlock(e - 1)
	}
	if e < n {
		if e > 0 {
			if pt := c.partials[last]; pt != nil {
				c.dropPartial(last, &a.Released, &a.ReleasedDiskIDs)
			}
		}
		p := end
		if at < len(c.nodes[end].blocks) {
			c.split(end, at)
		}
		q, from := p, e*c.bs
		if p == root || c.nodes[p].first != none {
			q, from = c.newChild(p, tokens[from:from+c.bs], (n-e)*c.bs), from+c.bs
		}
		nd := &c.nodes[q]
		nd.key = append(nd.key, tokens[from:n*c.bs]...)
		nd.blocks, nd.disks = slices.Grow(nd.blocks, n-e), slices.Grow(nd.disks, n-e)
		nd.refs, nd.lasts = slices.Grow(nd.refs, n-e), slices.Grow(nd.lasts, n-e)
		a.Blocks = make([]uint32, 0, n-e+1)
		for i := e; i < n; i++ {
			ref := uint32(1)
			if i >= own {
				ref = 2
			}
			d := diskAt(disks, i)
			nd.blocks = append(nd.blocks, table[i])
			nd.disks = append(nd.disks, d)
			nd.refs = append(nd.refs, ref)
			nd.lasts = append(nd.lasts, c.clock)
			c.owned.add(table[i])
			a.Blocks = append(a.Blocks, table[i])
			if d != NoDisk {
				a.DiskIDs = append(a.DiskIDs, d)
			}
		}
		c.blockN += n - e
		c.offer(q)
		last = table[n-1]
	}
	if c.partialWanted(tokens, table, n) {
		c.setPartial(last, tokens[n*c.bs:], table[n], diskAt(disks, n), &a)
	}
	c.st.Inserts++
	return a
}

// split cuts node x after its first at blocks: the rest, with x's
// children, moves to a new child of x.
func (c *Cache) split(x int32, at int) {
	y := c.alloc()
	xn, yn := &c.nodes[x], &c.nodes[y]
	yn.key = append(yn.key, xn.key[at*c.bs:]...)
	yn.blocks = append(yn.blocks, xn.blocks[at:]...)
	yn.disks = append(yn.disks, xn.disks[at:]...)
	yn.refs = append(yn.refs, xn.refs[at:]...)
	yn.lasts = append(yn.lasts, xn.lasts[at:]...)
	xn.key, xn.blocks, xn.disks = xn.key[:at*c.bs], xn.blocks[:at], xn.disks[:at]
	xn.refs, xn.lasts = xn.refs[:at], xn.lasts[:at]
	yn.first = xn.first
	for ch := yn.first; ch != none; ch = c.nodes[ch].next {
		c.unindex(ch)
		c.nodes[ch].parent = y
		c.index(ch)
	}
	xn.first = none
	c.link(x, y)
	c.offer(y)
}

// newChild links a run under p whose key starts with first (the insert
// adds the blocks and the rest of the key); size is the key's final length.
func (c *Cache) newChild(p int32, first []uint32, size int) int32 {
	q := c.alloc()
	if cap(c.nodes[q].key) < size {
		c.nodes[q].key = make([]uint32, 0, size)
	}
	c.nodes[q].key = append(c.nodes[q].key, first...)
	c.link(p, q)
	return q
}

// link makes q (whose key starts with its first block) p's newest child.
func (c *Cache) link(p, q int32) {
	qn, pn := &c.nodes[q], &c.nodes[p]
	qn.parent, qn.prev, qn.next = p, none, pn.first
	if pn.first != none {
		c.nodes[pn.first].prev = q
	}
	pn.first = q
	c.index(q)
}

// index adds q to the edge map under its parent.
func (c *Cache) index(q int32) {
	e := edgeOf(c.nodes[q].parent, c.nodes[q].key[:c.bs])
	c.nodes[q].same = none
	if old, ok := c.edges[e]; ok {
		c.nodes[q].same = old
	}
	c.edges[e] = q
}

// unindex removes q from the edge map.
func (c *Cache) unindex(q int32) {
	n := &c.nodes[q]
	e := edgeOf(n.parent, n.key[:c.bs])
	if c.edges[e] == q {
		if n.same == none {
			delete(c.edges, e)
		} else {
			c.edges[e] = n.same
		}
		return
	}
	for i := c.edges[e]; i != none; i = c.nodes[i].same {
		if c.nodes[i].same == q {
			c.nodes[i].same = n.same
			return
		}
	}
}

func (c *Cache) dropPartial(after uint32, blocks, disks *[]uint32) {
	pt := c.partials[after]
	*blocks = append(*blocks, pt.block)
	if pt.disk != NoDisk {
		*disks = append(*disks, pt.disk)
	}
	c.owned.del(pt.block)
	delete(c.partials, after)
}

// setPartial stores rem in block b as the partial suffix after block
// after. The same block only updates the tokens (and a missing disk id);
// another block replaces the old one, which is released.
func (c *Cache) setPartial(after uint32, rem []uint32, b, d uint32, a *Acquired) {
	if pt := c.partials[after]; pt != nil && pt.block == b {
		pt.tokens = append(pt.tokens[:0], rem...)
		if pt.disk == NoDisk && d != NoDisk {
			pt.disk = d
			a.DiskIDs = append(a.DiskIDs, d)
		}
		return
	} else if pt != nil {
		c.dropPartial(after, &a.Released, &a.ReleasedDiskIDs)
	}
	c.partials[after] = &partial{tokens: append([]uint32(nil), rem...), block: b, disk: d}
	c.owned.add(b)
	a.Blocks = append(a.Blocks, b)
	if d != NoDisk {
		a.DiskIDs = append(a.DiskIDs, d)
	}
}

// Release drops one sequence reference from each whole block of tokens.
// Prefer ReleaseMatched with the exact count the sequence took: Release
// by tokens can take a reference another sequence added to a longer
// insert of the same prefix (SNAPSHOTS.md §11.11).
func (c *Cache) Release(tokens []uint32, adapter uint64) error {
	return c.ReleaseMatched(tokens, len(tokens), adapter)
}

// ReleaseMatched drops one sequence reference from each of the first
// min(matched, len(tokens))/BlockSize blocks of tokens: the rollback of a
// Lookup, or the end of a sequence with its inserted length. Errors
// (nothing changed): ErrInvalidArgument for a negative count;
// ErrOverRelease when one of those blocks is not cached or holds no
// sequence reference.
func (c *Cache) ReleaseMatched(tokens []uint32, matched int, adapter uint64) error {
	if matched < 0 {
		return fmt.Errorf("%w: matched %d is negative", ErrInvalidArgument, matched)
	}
	k := min(matched, len(tokens)) / c.bs
	n, _, _ := c.walk(tokens[:k*c.bs], adapter)
	if n < k {
		return fmt.Errorf("%w: block %d of the %d to release is not cached", ErrOverRelease, n, k)
	}
	for _, s := range c.path {
		for j, r := range c.nodes[s.n].refs[:s.to-s.from] {
			if r < 2 {
				return fmt.Errorf("%w: block %d (id %d) holds no sequence reference", ErrOverRelease, s.from+j, c.nodes[s.n].blocks[j])
			}
		}
	}
	for _, s := range c.path {
		refs := c.nodes[s.n].refs[:s.to-s.from]
		for j := range refs {
			refs[j]--
		}
		c.offer(s.n)
	}
	return nil
}
