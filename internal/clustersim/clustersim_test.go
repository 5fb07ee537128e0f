package clustersim

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/radixkv/radixkv/workload"
)

func TestClusterSimBuiltin(t *testing.T) {
	g := workload.DefaultGenConfig()
	g.Requests = 300
	reqs, err := workload.Generate(g)
	require.NoError(t, err)
	rep, err := Run(context.Background(), Config{Workers: 4, PageSize: 16, Capacity: 60000, StoreDir: t.TempDir()}, reqs)
	require.NoError(t, err)
	require.Len(t, rep.Strategies, 3)
	for name, s := range rep.Strategies {
		require.Equal(t, s.BatchesPublished, s.MessagesReceived, name)
		require.Greater(t, s.EventsPublished, s.BatchesPublished/2, name)
		sum := 0
		for _, n := range s.RequestsPerWorker {
			sum += n
		}
		require.Equal(t, len(reqs), sum)
		t.Logf("%s: hit %.3f, max/mean requests %.2f computed %.2f, %d batches, %d events, index %d blocks, %.1fs",
			name, s.HitRate, s.MaxOverMeanRequests, s.MaxOverMeanComputed, s.BatchesPublished, s.EventsPublished, s.IndexBlocks, s.WallSeconds)
	}
	require.Greater(t, rep.Strategies[PrefixAware].HitRate, rep.Strategies[RoundRobin].HitRate)
	_, err = Run(context.Background(), Config{}, reqs)
	require.ErrorIs(t, err, ErrInvalid)
}
