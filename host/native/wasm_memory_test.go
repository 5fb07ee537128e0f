package native

import (
	"testing"

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
