package native

import (
	"sync"

	"github.com/radixkv/radixkv/core/blockcache"
	"github.com/radixkv/radixkv/core/snapshot"
)

// BlockCache is the thread-safe host wrapper of core/blockcache: the
// block-granular prefix cache of the second seed, with its SSM snapshot
// index. Every method takes one mutex, so each call is atomic: a lookup's
// walk, its references and its snapshot lookup happen together, and
// InsertWithSnapshot validates both parts before changing either. Results
// are the core's own types; see core/blockcache for what the caller does
// with them (reference the adopted blocks, free the evicted ones, ...).
type BlockCache struct {
	mu sync.Mutex
	c  *blockcache.Cache
}

// NewBlockCache returns an empty cache configured by cfg.
func NewBlockCache(cfg blockcache.Config) (*BlockCache, error) {
	c, err := blockcache.New(cfg)
	if err != nil {
		return nil, err
	}
	return &BlockCache{c: c}, nil
}

// BlockSize returns the configured block size.
func (b *BlockCache) BlockSize() int { return b.c.BlockSize() }

// Lookup matches tokens and references the matched blocks for the caller.
func (b *BlockCache) Lookup(tokens []uint32, session, adapter uint64) (blockcache.Match, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.c.Lookup(tokens, session, adapter)
}

// Peek returns the matched length without side effects.
func (b *BlockCache) Peek(tokens []uint32, adapter uint64) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.c.Peek(tokens, adapter)
}

// Insert caches tokens in the blocks of table.
func (b *BlockCache) Insert(tokens, table, disks []uint32, matched int, adapter uint64) (blockcache.Acquired, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.c.Insert(tokens, table, disks, matched, adapter)
}

// InsertWithSnapshot is Insert plus the finish-leaf snapshot in slot.
func (b *BlockCache) InsertWithSnapshot(tokens, table, disks []uint32, matched int, adapter uint64, slot int32, session uint64) (snapshot.Displaced, blockcache.Acquired, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.c.InsertWithSnapshot(tokens, table, disks, matched, adapter, slot, session)
}

// InsertIntermediateSnapshot records a plain snapshot of tokens.
func (b *BlockCache) InsertIntermediateSnapshot(tokens []uint32, adapter uint64, slot int32, session uint64) (snapshot.Displaced, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.c.InsertIntermediateSnapshot(tokens, adapter, slot, session)
}

// InsertTailSnapshot records a mid-chunk tail for session.
func (b *BlockCache) InsertTailSnapshot(tokens []uint32, adapter uint64, slot int32, session uint64) (snapshot.Displaced, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.c.InsertTailSnapshot(tokens, adapter, slot, session)
}

// InsertTailSiblingSnapshot records the checkpoint one block before the tail.
func (b *BlockCache) InsertTailSiblingSnapshot(tokens []uint32, adapter uint64, slot int32, session uint64) (snapshot.Displaced, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.c.InsertTailSiblingSnapshot(tokens, adapter, slot, session)
}

// Release drops a sequence reference from every whole block of tokens.
func (b *BlockCache) Release(tokens []uint32, adapter uint64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.c.Release(tokens, adapter)
}

// ReleaseMatched drops a sequence reference from the first matched/BlockSize blocks.
func (b *BlockCache) ReleaseMatched(tokens []uint32, matched int, adapter uint64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.c.ReleaseMatched(tokens, matched, adapter)
}

// Evict frees at least want unreferenced blocks if it can.
func (b *BlockCache) Evict(want int) blockcache.Evicted {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.c.Evict(want)
}

// EvictSnapshotLRU removes the next snapshot victim and returns its slot.
func (b *BlockCache) EvictSnapshotLRU() (int32, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.c.Snapshots().EvictLRU()
}

// EvictSnapshotToTier spills (or, below minTokens, drops) the next victim.
func (b *BlockCache) EvictSnapshotToTier(minTokens int) (snapshot.TierEvict, bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.c.Snapshots().EvictToTier(minTokens)
}

// PromoteSnapshot makes a faulted-in tiered snapshot resident in slot.
func (b *BlockCache) PromoteSnapshot(key, adapter uint64, slot int32, session uint64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.c.Snapshots().Promote(key, adapter, slot, session)
}

// ForgetSnapshot removes a tiered snapshot whose blob is gone.
func (b *BlockCache) ForgetSnapshot(key, adapter uint64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.c.Snapshots().Forget(key, adapter)
}

// EndSession retires a session's tail snapshots and lease.
func (b *BlockCache) EndSession(session uint64) (snapshot.Displaced, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.c.Snapshots().EndSession(session)
}

// SnapshotCount is the number of snapshots, resident and tiered.
func (b *BlockCache) SnapshotCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.c.Snapshots().Len()
}

// Stats returns the cache's counters and sizes.
func (b *BlockCache) Stats() blockcache.Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.c.Stats()
}

// Check runs the cache's and the index's sanity checks.
func (b *BlockCache) Check() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.c.Check()
}
