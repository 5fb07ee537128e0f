package blockcache

import (
	"fmt"

	"github.com/radixkv/radixkv/core/snapshot"
)

// InsertWithSnapshot is Insert plus a plain snapshot of the whole sequence
// in slot (the finish leaf). Both are validated before either changes.
func (c *Cache) InsertWithSnapshot(tokens, table, disks []uint32, matched int, adapter uint64, slot int32, session uint64) (snapshot.Displaced, Acquired, error) {
	if err := c.CanInsert(tokens, table, disks, matched, adapter); err != nil {
		return snapshot.Displaced{}, Acquired{}, err
	}
	if err := c.idx.CanInsert(tokens, adapter, slot, session, snapshot.Plain); err != nil {
		return snapshot.Displaced{}, Acquired{}, fmt.Errorf("blockcache: %w", err)
	}
	a := c.insert(tokens, table, disks, matched, adapter)
	d, err := c.idx.Insert(tokens, adapter, slot, session)
	if err != nil { // unreachable: validated above
		return d, a, err
	}
	return d, a, nil
}

// InsertIntermediateSnapshot records a plain snapshot of tokens (a chunk
// boundary or decode checkpoint); the blocks are inserted separately.
func (c *Cache) InsertIntermediateSnapshot(tokens []uint32, adapter uint64, slot int32, session uint64) (snapshot.Displaced, error) {
	return c.idx.Insert(tokens, adapter, slot, session)
}

// InsertTailSnapshot records a mid-chunk tail for session, superseding the
// session's previous tail and sibling.
func (c *Cache) InsertTailSnapshot(tokens []uint32, adapter uint64, slot int32, session uint64) (snapshot.Displaced, error) {
	return c.idx.InsertTail(tokens, adapter, slot, session)
}

// InsertTailSiblingSnapshot records the checkpoint one block before the tail.
func (c *Cache) InsertTailSiblingSnapshot(tokens []uint32, adapter uint64, slot int32, session uint64) (snapshot.Displaced, error) {
	return c.idx.InsertSibling(tokens, adapter, slot, session)
}

// Snapshots returns the SSM snapshot index for eviction, tier and
// statistics calls. Block eviction never touches it.
func (c *Cache) Snapshots() *snapshot.Index { return c.idx }

// UseSnapshots makes x the cache's snapshot index (one index shared with
// other users, as an ABI instance shares its own); x must not be nil.
func (c *Cache) UseSnapshots(x *snapshot.Index) {
	if x != nil {
		c.idx = x
	}
}
