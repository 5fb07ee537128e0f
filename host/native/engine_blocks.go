package native

import (
	"fmt"
	"math"

	"github.com/radixkv/radixkv/abi"
	"github.com/radixkv/radixkv/core/blockcache"
)

// BlocksEngine is the block-cache facade beside an engine's tree (ABI ops
// 0x0068-0x006E, abi/SPEC.md §4.10), on every engine with the same
// results: made on first use with the tree's page size as block size,
// emptied by Reset, its lookups using the engine's snapshot index. The
// Match, Acquired and Evicted values are core/blockcache's; errors unwrap
// to its sentinels. For a block cache without a tree, use BlockCache.
type BlocksEngine interface {
	// BlocksConfigure replaces the block cache with an empty one.
	BlocksConfigure(blockSize int, subBlockTail bool) error
	BlocksLookup(tokens []uint32, session, adapter uint64) (blockcache.Match, error)
	BlocksPeek(tokens []uint32, adapter uint64) (int, error)
	BlocksInsert(tokens, table, disks []uint32, matched int, adapter uint64) (blockcache.Acquired, error)
	// BlocksRelease is ReleaseMatched; matched -1 releases every whole
	// block of tokens (Release).
	BlocksRelease(tokens []uint32, matched int, adapter uint64) error
	BlocksEvict(want int) (blockcache.Evicted, error)
	// BlocksStats returns the cache's own counters (the snapshot part is
	// SnapshotStats').
	BlocksStats() (blockcache.Stats, error)
}

var (
	_ BlocksEngine = (*directEngine)(nil)
	_ BlocksEngine = (*wireEngine)(nil)
)

// blocksSentinel maps the block ops' wire codes to core/blockcache's.
func blocksSentinel(c abi.Code) error {
	switch c {
	case abi.CodeInvalidConfig:
		return blockcache.ErrInvalidConfig
	case abi.CodeInvalidArgument:
		return blockcache.ErrInvalidArgument
	case abi.CodeSanity:
		return blockcache.ErrSanity
	case abi.CodeBlockInUse:
		return blockcache.ErrBlockInUse
	case abi.CodeOverRelease:
		return blockcache.ErrOverRelease
	}
	return nil
}

func checkI32(vals ...int) error {
	for _, v := range vals {
		if v < math.MinInt32 || v > math.MaxInt32 {
			return fmt.Errorf("%w: %d does not fit the wire's i32", blockcache.ErrInvalidArgument, v)
		}
	}
	return nil
}

func (e *directEngine) blockCache() (*blockcache.Cache, error) {
	x, err := e.index()
	if err != nil {
		return nil, err
	}
	if e.blocks == nil {
		cfg := e.blocksCfg
		if cfg.BlockSize == 0 {
			cfg.BlockSize = e.t.PageSize()
		}
		c, err := blockcache.New(cfg)
		if err != nil {
			return nil, err
		}
		c.UseSnapshots(x)
		e.blocks = c
	}
	return e.blocks, nil
}

func (e *directEngine) BlocksConfigure(blockSize int, subBlockTail bool) error {
	x, err := e.index()
	if err != nil {
		return err
	}
	if blockSize < 0 || int64(blockSize) > math.MaxUint32 {
		return fmt.Errorf("%w: block size %d does not fit the wire's u32", blockcache.ErrInvalidConfig, blockSize)
	}
	cfg := blockcache.Config{BlockSize: blockSize, SubBlockTail: subBlockTail}
	c, err := blockcache.New(cfg)
	if err != nil {
		return err
	}
	c.UseSnapshots(x)
	e.blocks, e.blocksCfg = c, cfg
	return nil
}

func (e *directEngine) BlocksLookup(tokens []uint32, session, adapter uint64) (blockcache.Match, error) {
	c, err := e.blockCache()
	if err != nil {
		return blockcache.Match{}, err
	}
	return c.Lookup(tokens, session, adapter)
}

func (e *directEngine) BlocksPeek(tokens []uint32, adapter uint64) (int, error) {
	c, err := e.blockCache()
	if err != nil {
		return 0, err
	}
	return c.Peek(tokens, adapter), nil
}

func (e *directEngine) BlocksInsert(tokens, table, disks []uint32, matched int, adapter uint64) (blockcache.Acquired, error) {
	c, err := e.blockCache()
	if err == nil {
		err = checkI32(matched)
	}
	if err != nil {
		return blockcache.Acquired{}, err
	}
	return c.Insert(tokens, table, disks, matched, adapter)
}

func (e *directEngine) BlocksRelease(tokens []uint32, matched int, adapter uint64) error {
	c, err := e.blockCache()
	if err == nil {
		err = checkI32(matched)
	}
	if err != nil {
		return err
	}
	if matched == -1 {
		return c.Release(tokens, adapter)
	}
	return c.ReleaseMatched(tokens, matched, adapter)
}

func (e *directEngine) BlocksEvict(want int) (blockcache.Evicted, error) {
	c, err := e.blockCache()
	if err == nil {
		err = checkI32(want)
	}
	if err != nil {
		return blockcache.Evicted{}, err
	}
	if want < 0 {
		return blockcache.Evicted{}, fmt.Errorf("%w: evict want %d is negative", blockcache.ErrInvalidArgument, want)
	}
	return c.Evict(want), nil
}

func (e *directEngine) BlocksStats() (blockcache.Stats, error) {
	c, err := e.blockCache()
	if err != nil {
		return blockcache.Stats{}, err
	}
	st := c.Stats()
	st.Snapshots = blockcache.Stats{}.Snapshots
	return st, nil
}

// blocksTrip sends the block request b as op and returns the result.
func (e *wireEngine) blocksTrip(op abi.Op, b abi.BlocksRequest) (abi.BlocksResult, error) {
	if err := e.usable(); err != nil {
		return abi.BlocksResult{}, err
	}
	e.q.Blocks = b
	err := e.roundTrip(op)
	e.q.Blocks = abi.BlocksRequest{}
	return e.r.Blocks, err
}

func (e *wireEngine) BlocksConfigure(blockSize int, subBlockTail bool) error {
	if blockSize < 0 || int64(blockSize) > math.MaxUint32 {
		return fmt.Errorf("%w: block size %d does not fit the wire's u32", blockcache.ErrInvalidConfig, blockSize)
	}
	_, err := e.blocksTrip(abi.OpBlocksConfigure, abi.BlocksRequest{BlockSize: uint32(blockSize), SubBlockTail: subBlockTail})
	return err
}

func (e *wireEngine) BlocksLookup(tokens []uint32, session, adapter uint64) (blockcache.Match, error) {
	r, err := e.blocksTrip(abi.OpBlocksLookup, abi.BlocksRequest{Tokens: tokens, Session: session, Adapter: adapter})
	if err != nil {
		return blockcache.Match{}, err
	}
	return r.Match, nil
}

func (e *wireEngine) BlocksPeek(tokens []uint32, adapter uint64) (int, error) {
	r, err := e.blocksTrip(abi.OpBlocksPeek, abi.BlocksRequest{Tokens: tokens, Adapter: adapter})
	return r.Match.MatchedTokens, err
}

func (e *wireEngine) BlocksInsert(tokens, table, disks []uint32, matched int, adapter uint64) (blockcache.Acquired, error) {
	if err := checkI32(matched); err != nil {
		return blockcache.Acquired{}, err
	}
	r, err := e.blocksTrip(abi.OpBlocksInsert, abi.BlocksRequest{Tokens: tokens, Table: table, Disks: disks, Matched: int32(matched), Adapter: adapter})
	if err != nil {
		return blockcache.Acquired{}, err
	}
	return r.Acquired, nil
}

func (e *wireEngine) BlocksRelease(tokens []uint32, matched int, adapter uint64) error {
	if err := checkI32(matched); err != nil {
		return err
	}
	_, err := e.blocksTrip(abi.OpBlocksRelease, abi.BlocksRequest{Tokens: tokens, Matched: int32(matched), Adapter: adapter})
	return err
}

func (e *wireEngine) BlocksEvict(want int) (blockcache.Evicted, error) {
	if err := checkI32(want); err != nil {
		return blockcache.Evicted{}, err
	}
	r, err := e.blocksTrip(abi.OpBlocksEvict, abi.BlocksRequest{Want: int32(want)})
	if err != nil {
		return blockcache.Evicted{}, err
	}
	return r.Evicted, nil
}

func (e *wireEngine) BlocksStats() (blockcache.Stats, error) {
	r, err := e.blocksTrip(abi.OpBlocksStats, abi.BlocksRequest{})
	return r.Stats, err
}
