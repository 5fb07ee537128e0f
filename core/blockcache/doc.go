// Package blockcache is radixkv's block-granular prefix cache, the API of
// the second seed (SNAPSHOTS.md §3-5): token sequences are cut into blocks
// of BlockSize tokens, each cached block is one node holding the caller's
// physical block id, and a lookup returns the blocks of the longest cached
// prefix. It is deterministic and uses the standard library only; hosts
// add locking (host/native.BlockCache).
//
// The tree is stored compressed, as runs of consecutive blocks that split
// when a sequence branches inside them, but every block keeps its own
// reference count, stamp and disk id, so it behaves exactly as the
// reference's one node per block (the model test checks it against a
// naive block-per-node cache).
//
// # References
//
// The cache holds one reference on every node and partial block; each
// sequence using a block adds one. [Cache.Lookup] references the matched
// blocks; [Cache.Insert] references the sequence's own new blocks (from
// matched/BlockSize on); [Cache.ReleaseMatched] gives a sequence's
// references back and refuses, changing nothing, to release more than the
// sequences hold ([ErrOverRelease]). [Cache.Evict] frees only leaves that
// no sequence references, least recently used first, leaf-up.
//
// # What the caller does with the results
//
// Add the cache's reference to [Acquired.Blocks] and a disk reference to
// [Acquired.DiskIDs]; drop the references of [Acquired.Released] /
// ReleasedDiskIDs; keep (or free) [Acquired.Unused], the sequence's blocks
// the cache did not adopt; on [Cache.Evict] free [Evicted.Blocks] and
// dereference [Evicted.DiskIDs]. A block id the cache already owns is
// never adopted twice ([ErrBlockInUse]).
//
// # Disk ids, partial blocks, adapters
//
// A node keeps the first real disk id it is given ([NoDisk] means none).
// A sequence ending inside a block stores that block as the last node's
// partial suffix; a different partial replaces (and releases) it, a new
// child drops it. Each adapter id has its own root: adapters never share
// blocks or snapshots.
//
// # Sub-block tail matching (off by default)
//
// With [Config.SubBlockTail] a lookup ending inside a block may match the
// first tokens of a cached block (the following block, or a partial suffix).
// That block is returned without a reference and without copy-on-write:
// if the sequence then decodes into it, it overwrites KV that the cache
// and other readers share. Enable it only when the engine copies such a
// block before writing (SNAPSHOTS.md §8).
//
// # SSM snapshots
//
// The cache owns a [snapshot.Index]; Lookup also returns the deepest
// snapshot within the match, and block eviction never removes one.
package blockcache
