package native

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/core/blockcache"
	"github.com/radixkv/radixkv/core/snapshot"
	"github.com/radixkv/radixkv/workload"
	"github.com/stretchr/testify/require"
)

func nz(v []uint32) []uint32 {
	if len(v) == 0 {
		return nil
	}
	return v
}

func blocksErrName(t *testing.T, err error) string {
	if err == nil {
		return ""
	}
	for _, s := range []error{blockcache.ErrInvalidConfig, blockcache.ErrInvalidArgument, blockcache.ErrBlockInUse,
		blockcache.ErrOverRelease, blockcache.ErrSanity} {
		if errors.Is(err, s) {
			return s.Error()
		}
	}
	return sentinelName(t, err)
}

// TestBlocksEngines_Differential drives the block cache of every engine
// with the same random commands (lookups with their releases, inserts of
// fresh and clashing blocks, stray releases, evictions, snapshots seen
// through lookups, reconfiguration, reset) and requires the same results
// and error sentinels everywhere.
func TestBlocksEngines_Differential(t *testing.T) {
	steps := 500
	if raceEnabled {
		steps = 120
	}
	var engines []Engine
	for _, k := range engineKinds {
		engines = append(engines, newEngine(t, k.new, core.Config{PageSize: 2}))
	}
	rng := rand.New(rand.NewPCG(14, 68))
	base := make([]uint32, 24)
	for i := range base {
		base[i] = uint32(rng.IntN(2))
	}
	next := uint32(0)
	for step := range steps {
		toks := base[:rng.IntN(len(base)+1)]
		adapter := uint64(rng.IntN(2))
		op := rng.IntN(100)
		matched := rng.IntN(len(toks)+3) - 1
		want := rng.IntN(6) - 1
		n := len(toks)/2 + rng.IntN(2)
		table := make([]uint32, n)
		for i := range table {
			if rng.IntN(8) == 0 {
				table[i] = uint32(rng.IntN(int(next) + 1)) // maybe a block the cache holds
			} else {
				table[i] = next
				next++
			}
		}
		var disks []uint32
		for range rng.IntN(n + 1) {
			disks = append(disks, uint32(rng.IntN(3))+100)
		}
		bs, sub := rng.IntN(4), rng.IntN(2) == 0
		var results []any
		var errs []string
		for _, eng := range engines {
			e := eng.(BlocksEngine)
			var res any
			var err error
			switch {
			case op < 30:
				var m blockcache.Match
				m, err = e.BlocksLookup(toks, 0, adapter)
				res = []any{nz(m.Blocks), nz(m.DiskIDs), m.MatchedTokens, m.Snapshot}
			case op < 55:
				var a blockcache.Acquired
				a, err = e.BlocksInsert(toks, table, disks, max(matched, 0), adapter)
				res = []any{nz(a.Blocks), nz(a.DiskIDs), nz(a.Released), nz(a.ReleasedDiskIDs), nz(a.Unused)}
			case op < 75:
				err = e.BlocksRelease(toks, matched, adapter)
			case op < 85:
				var ev blockcache.Evicted
				ev, err = e.BlocksEvict(want)
				res = []any{nz(ev.Blocks), nz(ev.DiskIDs)}
			case op < 89:
				res, err = e.BlocksPeek(toks, adapter)
			case op < 93:
				res, err = e.BlocksStats()
			case op < 96:
				if len(toks) > 0 {
					_, err = eng.(SnapshotEngine).SnapshotInsert(snapshot.Plain, toks, adapter, int32(step), 0)
				}
			case op < 98:
				err = e.BlocksConfigure(bs, sub)
			default:
				err = eng.Reset()
			}
			results = append(results, res)
			errs = append(errs, blocksErrName(t, err))
		}
		for k := 1; k < len(engines); k++ {
			require.Equal(t, results[0], results[k], "step %d op %d: engine %s", step, op, engineKinds[k].name)
			require.Equal(t, errs[0], errs[k], "step %d op %d: engine %s", step, op, engineKinds[k].name)
		}
	}
}

// TestBlocksEngines_Workload replays a generated workload through the
// block cache and snapshot index of every engine the way a block-table
// engine would (lookup, fresh blocks with eviction when the pool is
// short, insert, finish-leaf snapshot with LRU state eviction, release)
// and requires identical block and snapshot statistics at the end.
func TestBlocksEngines_Workload(t *testing.T) {
	gc := workload.DefaultGenConfig()
	gc.Requests = 150
	const bs, states = 16, 24
	poolBlocks := 2000
	if raceEnabled {
		// Fewer requests, and a pool small enough that they still run it short.
		gc.Requests, poolBlocks = 40, 800
	}
	reqs, err := workload.Generate(gc)
	require.NoError(t, err)
	var final []any
	for _, k := range engineKinds {
		eng := newEngine(t, k.new, core.Config{PageSize: bs})
		be, se := eng.(BlocksEngine), eng.(SnapshotEngine)
		free := make([]uint32, 0, poolBlocks)
		for b := poolBlocks - 1; b >= 0; b-- {
			free = append(free, uint32(b))
		}
		var slots []int32
		for s := states - 1; s >= 0; s-- {
			slots = append(slots, int32(s))
		}
		for i := range reqs {
			toks := reqs[i].Tokens
			m, err := be.BlocksLookup(toks, 0, 0)
			require.NoError(t, err)
			full := m.MatchedTokens / bs
			need := (len(toks)+bs-1)/bs - full
			if short := need - len(free); short > 0 {
				ev, err := be.BlocksEvict(short)
				require.NoError(t, err)
				free = append(free, ev.Blocks...)
			}
			require.GreaterOrEqual(t, len(free), need, "%s: request %d", k.name, i)
			table := append(m.Blocks[:full:full], free[len(free)-need:]...)
			free = free[:len(free)-need]
			a, err := be.BlocksInsert(toks, table, nil, m.MatchedTokens, 0)
			require.NoError(t, err)
			adopted := map[uint32]bool{}
			for _, b := range a.Blocks {
				adopted[b] = true
			}
			for _, b := range table[full:] {
				if !adopted[b] {
					free = append(free, b)
				}
			}
			free = append(free, a.Released...)
			if len(slots) == 0 {
				ev, ok, err := se.SnapshotEvict(false, 0)
				require.NoError(t, err)
				require.True(t, ok)
				slots = append(slots, ev.Slot)
			}
			d, err := se.SnapshotInsert(snapshot.Plain, toks, 0, slots[len(slots)-1], 0)
			require.NoError(t, err)
			slots = append(slots[:len(slots)-1], d.Slots...)
			require.NoError(t, be.BlocksRelease(toks, min(len(toks)/bs, len(table))*bs, 0))
		}
		bst, err := be.BlocksStats()
		require.NoError(t, err)
		sst, _, err := se.SnapshotStats()
		require.NoError(t, err)
		require.NotZero(t, bst.EvictedBlocks, "%s: the pool never ran short", k.name)
		require.NotZero(t, sst.Evictions)
		require.Zero(t, bst.Referenced)
		require.Equal(t, poolBlocks, len(free)+bst.Blocks, "%s: blocks lost", k.name)
		final = append(final, []any{bst, sst})
	}
	for i := 1; i < len(final); i++ {
		require.Equal(t, final[0], final[i], "engine %s differs from direct", engineKinds[i].name)
	}
}
