package native

import (
	"testing"

	"github.com/radixkv/radixkv/core"

	"github.com/stretchr/testify/require"
)

func TestGuestMemory_Mapped(t *testing.T) {
	lm := guestMemory{}.Allocate(1<<16, 1<<24)
	defer lm.Free()
	b := lm.Reallocate(1 << 16)
	require.Len(t, b, 1<<16)
	b[100] = 7
	grown := lm.Reallocate(1 << 20)
	require.Len(t, grown, 1<<20)
	require.Equal(t, byte(7), grown[100], "growing keeps the contents")
	require.Equal(t, make([]byte, 1<<10), grown[1<<19:1<<19+1<<10], "new pages are zero")
	require.Nil(t, lm.Reallocate(1<<25), "past the maximum")
}

func TestGuestMemory_Doubling(t *testing.T) {
	m := &doublingMemory{max: 1 << 20, buf: make([]byte, 0, 16)}
	b := m.Reallocate(10)
	b[3] = 9
	for size := uint64(11); size <= 1<<20; size = size*3/2 + 1 {
		b = m.Reallocate(size)
		require.Len(t, b, int(size))
		require.Equal(t, byte(9), b[3])
		require.Zero(t, b[size-1])
	}
	require.Nil(t, m.Reallocate(1<<20+1))
	m.Free()
}

// TestWarmPool: a kept mapping comes back zeroed where the instance
// before used it, only for the same maximum, and the pool holds at most
// its count and bytes.
func TestWarmPool(t *testing.T) {
	p := warmPool{maxMaps: 2, maxBytes: 3 << 20}
	alloc := func(max uint64) *mappedMemory {
		if m := p.take(max); m != nil {
			return m
		}
		mem, err := reserveAnon(max)
		if err != nil {
			t.Skip(err)
		}
		return &mappedMemory{mem: mem}
	}
	a := alloc(1 << 24)
	b := a.Reallocate(1 << 20)
	for i := range b {
		b[i] = byte(i) | 1
	}
	require.True(t, p.keep(a))
	require.Nil(t, p.take(1<<25), "another maximum")
	again := p.take(1 << 24)
	require.NotNil(t, again)
	require.Equal(t, make([]byte, 1<<20), again.Reallocate(1<<20), "a kept mapping reads as zero")
	require.Zero(t, again.used>>21)

	big := alloc(1 << 24)
	big.Reallocate(4 << 20)
	require.False(t, p.keep(big), "over the pool's bytes")
	require.NoError(t, unmapAnon(big.mem))
	m1, m2 := alloc(1<<24), alloc(1<<24)
	for _, m := range []*mappedMemory{m1, m2} {
		m.Reallocate(1 << 16)
		require.True(t, p.keep(m))
	}
	require.False(t, p.keep(again), "over the pool's count")
	require.NoError(t, unmapAnon(again.mem))
	for m := p.take(1 << 24); m != nil; m = p.take(1 << 24) {
		require.NoError(t, unmapAnon(m.mem))
	}
	require.Zero(t, p.holding)
}

// TestGuestMemory_Reused: an engine made after another one closed starts
// on zeroed memory and works.
func TestGuestMemory_Reused(t *testing.T) {
	for range 3 {
		c, _ := newCtlOn(t, NewWasmEngine, 64, core.Config{PageSize: 2}, canaryOn)
		run(t, c, core.Namespace{}, seq(1, 20))
		r, err := c.Arrive(core.Namespace{}, seq(1, 20))
		require.NoError(t, err)
		require.Equal(t, 20, r.CachedLen())
		require.NoError(t, c.Finish(r))
		require.NoError(t, c.Close())
	}
}
