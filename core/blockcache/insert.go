package blockcache

import "fmt"

// Acquired tells the caller how an insert changed block ownership.
type Acquired struct {
	// Blocks are the sequence's blocks the cache adopted (new nodes and a
	// new partial suffix): the caller adds the cache's reference to each.
	Blocks []uint32
	// DiskIDs are the disk ids the cache started to hold (new nodes with a
	// disk copy, existing nodes that had none, a new partial suffix): the
	// caller adds a disk reference to each.
	DiskIDs []uint32
	// Released are blocks the cache stopped holding (a replaced partial
	// suffix, or a parent's partial suffix dropped because a child now
	// covers it): the caller drops the cache's reference. ReleasedDiskIDs
	// are their disk ids.
	Released, ReleasedDiskIDs []uint32
	// Unused are the sequence's blocks the cache did not adopt because the
	// chunk was already cached in another block; the sequence still owns them.
	Unused []uint32
}

// Insert caches tokens under adapter with table[i] holding block i (and
// disks[i] its disk id, or NoDisk; disks may be shorter than table). It
// covers min(len(tokens)/BlockSize, len(table)) whole blocks; when tokens
// end inside a block, table has one more entry and the last node is not a
// root, that block becomes the node's partial suffix. matched is the
// prefix the caller already referenced by Lookup: the blocks from
// matched/BlockSize on are the sequence's own and get its reference too
// (release them with Release or ReleaseMatched). Every touched node is stamped.
//
// Errors (nothing changed): ErrInvalidArgument for matched outside the
// tokens or more disk ids than blocks; ErrBlockInUse for a new block the
// cache already holds elsewhere, or a block listed twice.
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

// CanInsert returns the error Insert would return, changing nothing.
func (c *Cache) CanInsert(tokens, table, disks []uint32, matched int, adapter uint64) error {
	if matched < 0 || matched > len(tokens) {
		return fmt.Errorf("%w: matched %d outside [0, %d]", ErrInvalidArgument, matched, len(tokens))
	}
	if len(disks) > len(table) {
		return fmt.Errorf("%w: %d disk ids for %d blocks", ErrInvalidArgument, len(disks), len(table))
	}
	n := min(len(tokens)/c.bs, len(table))
	p := c.root(adapter, false)
	fresh := c.fresh
	clear(fresh)
	adopt := func(b uint32, allowed int32) error {
		if o, ok := c.owner[b]; (ok && o != allowed) || fresh[b] {
			return fmt.Errorf("%w: block %d", ErrBlockInUse, b)
		}
		fresh[b] = true
		return nil
	}
	for k := range n {
		chunk := tokens[k*c.bs : (k+1)*c.bs]
		if p != none {
			if q := c.child(p, chunk); q != none {
				p = q
				continue
			}
			p = none
		}
		if err := adopt(table[k], none); err != nil {
			return err
		}
	}
	if c.partialWanted(tokens, table, n) {
		var allowed int32 = none
		if p != none && c.nodes[p].partial && c.nodes[p].pBlock == table[n] {
			allowed = p
		}
		if err := adopt(table[n], allowed); err != nil {
			return err
		}
	}
	return nil
}

// partialWanted reports whether an insert of n whole blocks stores a
// partial suffix (the end node is a root only when n is 0).
func (c *Cache) partialWanted(tokens, table []uint32, n int) bool {
	rem := len(tokens) - n*c.bs
	return n > 0 && n == len(tokens)/c.bs && rem > 0 && len(table) > n
}

func (c *Cache) insert(tokens, table, disks []uint32, matched int, adapter uint64) Acquired {
	var a Acquired
	n := min(len(tokens)/c.bs, len(table))
	p := c.root(adapter, true)
	c.clock++
	for k := range n {
		chunk := tokens[k*c.bs : (k+1)*c.bs]
		// The sequence's own chunks are those its lookup did not reference:
		// from the first block not wholly matched (a sub-block match takes
		// no reference, so its block counts as the sequence's).
		owned := k >= matched/c.bs
		d := diskAt(disks, k)
		if q := c.child(p, chunk); q != none {
			nd := &c.nodes[q]
			if owned {
				nd.ref++
			}
			if nd.disk == NoDisk && d != NoDisk {
				nd.disk = d
				a.DiskIDs = append(a.DiskIDs, d)
			}
			if nd.block != table[k] {
				a.Unused = append(a.Unused, table[k])
			}
			c.touch(q)
			p = q
			continue
		}
		q := c.newChild(p, chunk, &a)
		nd := &c.nodes[q]
		nd.block, nd.disk, nd.ref = table[k], d, 1
		if owned {
			nd.ref = 2
		}
		c.owner[table[k]] = q
		a.Blocks = append(a.Blocks, table[k])
		if d != NoDisk {
			a.DiskIDs = append(a.DiskIDs, d)
		}
		c.touch(q)
		p = q
	}
	if c.partialWanted(tokens, table, n) {
		c.setPartial(p, tokens[n*c.bs:], table[n], diskAt(disks, n), &a)
	}
	c.st.Inserts++
	return a
}

// newChild links a fresh node under p; p's partial suffix is released,
// since the child now covers its tokens.
func (c *Cache) newChild(p int32, chunk []uint32, a *Acquired) int32 {
	q := c.alloc()
	nd, pn := &c.nodes[q], &c.nodes[p]
	nd.key = c.keyOf(nd.key, chunk)
	nd.ctx, nd.parent = chain(pn.ctx, chunk), p
	nd.next = pn.first
	if pn.first != none {
		c.nodes[pn.first].prev = q
	}
	pn.first = q
	e := edgeOf(p, chunk)
	if old, ok := c.edges[e]; ok {
		nd.same = old
	}
	c.edges[e] = q
	c.nodeN++
	if pn.partial {
		c.dropPartial(p, &a.Released, &a.ReleasedDiskIDs)
	}
	return q
}

func (c *Cache) dropPartial(p int32, blocks, disks *[]uint32) {
	pn := &c.nodes[p]
	*blocks = append(*blocks, pn.pBlock)
	if pn.pDisk != NoDisk {
		*disks = append(*disks, pn.pDisk)
	}
	delete(c.owner, pn.pBlock)
	pn.partial, pn.pTokens, pn.pBlock, pn.pDisk = false, pn.pTokens[:0], NoDisk, NoDisk
	c.parts--
}

// setPartial stores rem in block b as p's partial suffix. The same block
// only updates the tokens (and a missing disk id); another block replaces
// the old one, which is released.
func (c *Cache) setPartial(p int32, rem []uint32, b, d uint32, a *Acquired) {
	pn := &c.nodes[p]
	if pn.partial && pn.pBlock == b {
		pn.pTokens = append(pn.pTokens[:0], rem...)
		if pn.pDisk == NoDisk && d != NoDisk {
			pn.pDisk = d
			a.DiskIDs = append(a.DiskIDs, d)
		}
		return
	}
	if pn.partial {
		c.dropPartial(p, &a.Released, &a.ReleasedDiskIDs)
	}
	pn.partial, pn.pBlock, pn.pDisk = true, b, d
	pn.pTokens = append(pn.pTokens[:0], rem...)
	c.owner[b] = p
	c.parts++
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
// Lookup (or the end of a sequence, with its inserted length). Errors
// (nothing changed): ErrInvalidArgument for a negative count;
// ErrOverRelease when one of those blocks is not cached or holds no
// sequence reference.
func (c *Cache) ReleaseMatched(tokens []uint32, matched int, adapter uint64) error {
	if matched < 0 {
		return fmt.Errorf("%w: matched %d is negative", ErrInvalidArgument, matched)
	}
	k := min(matched, len(tokens)) / c.bs
	var buf [64]int32
	path, _ := c.walk(buf[:0], tokens[:k*c.bs], adapter)
	if len(path) < k {
		return fmt.Errorf("%w: block %d of the %d to release is not cached", ErrOverRelease, len(path), k)
	}
	for i, q := range path {
		if c.nodes[q].ref < 2 {
			return fmt.Errorf("%w: block %d (id %d) holds no sequence reference", ErrOverRelease, i, c.nodes[q].block)
		}
	}
	for _, q := range path {
		c.nodes[q].ref--
		c.offer(q)
	}
	return nil
}
