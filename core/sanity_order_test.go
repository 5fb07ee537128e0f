package core

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The violations of a sanity check come in sorted order, whatever the
// order in which Go ranges over the maps they come from (receipts,
// load-backs): the message leaves through the ABI and must be the same
// on every call and in every engine.
func TestSanityCheck_ViolationOrderIsDeterministic(t *testing.T) {
	tr := apiTree(t, Config{PageSize: 1, HostTier: true, WritePolicy: WriteBack})
	var anchors []int32
	for k := range uint32(40) {
		res, _, err := tr.Insert(InsertParams{Tokens: []uint32{1000 + k, 1}, Slots: apiSlots(int32(10*k), 2)})
		require.NoError(t, err)
		_, err = tr.Lock(res.LastDevice, 0)
		require.NoError(t, err)
		i, err := tr.resolve(res.LastDevice)
		require.NoError(t, err)
		anchors = append(anchors, i)
	}
	// Corrupt: load-backs on anchors of a later generation (map-ranged),
	// and receipts whose lock counts the nodes do not carry.
	for _, i := range anchors {
		tr.loadBacks[i] = tr.nodes[i].gen + 1
		tr.nodes[i].lock[Full]--
	}
	first := tr.SanityCheck()
	require.True(t, errors.Is(first, ErrSanity))
	lines := strings.Split(first.Error(), "\n  ")[1:]
	require.Greater(t, len(lines), 80)
	require.True(t, slices.IsSorted(lines), "violations are sorted")
	for range 20 {
		require.Equal(t, first.Error(), tr.SanityCheck().Error())
	}
}
