package native

import (
	"errors"
	"sync"
	"testing"

	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/core/snapshot"
	"github.com/stretchr/testify/require"
)

// The controller serialises the snapshot index and the block cache with
// its lifecycle calls, on every engine.
func TestController_SnapshotsAndBlocks(t *testing.T) {
	forEachEngine(t, func(t *testing.T, ctor engineCtor) {
		eng, err := ctor(core.Config{PageSize: 4})
		require.NoError(t, err)
		kv, err := NewMemPool(4096, CanaryBytes)
		require.NoError(t, err)
		ctl, err := NewController(eng, NewPoolSet(kv), ControllerConfig{Canary: true, VerifyMatches: true})
		require.NoError(t, err)
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 20 {
					toks := []uint32{1, 2, 3, 4, uint32(w), uint32(i), 7, 8}
					r, err := ctl.Arrive(core.Namespace{}, toks)
					if err == nil {
						err = ctl.Prefill(r, r.Pending())
					}
					if err == nil {
						err = ctl.Finish(r)
					}
					if err == nil {
						err = ctl.Snapshots(func(s SnapshotEngine) error {
							_, err := s.SnapshotInsert(snapshot.Plain, toks, 0, int32(w*100+i), 0)
							return err
						})
					}
					if err == nil {
						err = ctl.Blocks(func(b BlocksEngine) error {
							m, err := b.BlocksLookup(toks, 0, 0)
							if err != nil {
								return err
							}
							if m.MatchedTokens == len(toks) {
								return b.BlocksRelease(toks, m.MatchedTokens, 0)
							}
							table := append(m.Blocks, uint32(2*(w*100+i)), uint32(2*(w*100+i)+1))[:2]
							_, err = b.BlocksInsert(toks, table, nil, m.MatchedTokens, 0)
							if err == nil {
								err = b.BlocksRelease(toks, -1, 0) // the lookup's and the insert's references
							}
							return err
						})
					}
					if err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		require.NoError(t, ctl.Snapshots(func(s SnapshotEngine) error {
			st, _, err := s.SnapshotStats()
			require.Equal(t, 80, st.Entries)
			return err
		}))
		require.NoError(t, ctl.Blocks(func(b BlocksEngine) error {
			st, err := b.BlocksStats()
			require.Zero(t, st.Referenced)
			require.Equal(t, 80+1, st.Nodes, "the shared first block once, a second block per sequence")
			return err
		}))
		require.NoError(t, ctl.Audit())
		require.NoError(t, ctl.Close())
		require.True(t, errors.Is(ctl.Snapshots(func(SnapshotEngine) error { return nil }), ErrClosed))
		require.True(t, errors.Is(ctl.Blocks(func(BlocksEngine) error { return nil }), ErrClosed))
	})
}
