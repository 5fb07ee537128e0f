package native

import (
	"testing"

	"github.com/radixkv/radixkv/core"
	"github.com/stretchr/testify/require"
)

type poolMaker struct {
	name string
	make func(t *testing.T, capacity, slotBytes int) Pool
}

var poolMakers = []poolMaker{
	{"mem", func(t *testing.T, capacity, slotBytes int) Pool {
		p, err := NewMemPool(capacity, slotBytes)
		require.NoError(t, err)
		return p
	}},
	{"mmap", func(t *testing.T, capacity, slotBytes int) Pool {
		p, err := NewMmapPool(capacity, slotBytes)
		if err != nil {
			require.ErrorIs(t, err, ErrMmapUnavailable)
			t.Skipf("mmap unavailable here: %v", err)
		}
		t.Cleanup(func() { _ = p.Close() })
		return p
	}},
}

func TestPool_AllocFree(t *testing.T) {
	for _, pm := range poolMakers {
		t.Run(pm.name, func(t *testing.T) {
			p := pm.make(t, 8, 4)
			require.Equal(t, 8, p.Capacity())
			require.Equal(t, 8, p.Available())
			require.Equal(t, 4, p.SlotBytes())

			a, err := p.Alloc(nil, 3)
			require.NoError(t, err)
			require.Equal(t, []int32{0, 1, 2}, a)
			a, err = p.Alloc(a, 0)
			require.NoError(t, err)
			require.Len(t, a, 3)
			require.Equal(t, 5, p.Available())

			_, err = p.Alloc(nil, 6)
			require.ErrorIs(t, err, ErrPoolExhausted)
			require.Equal(t, 5, p.Available(), "a failed alloc takes nothing")
			_, err = p.Alloc(nil, -1)
			require.ErrorIs(t, err, ErrInvalidArgument)

			require.NoError(t, p.Free(a[1:2]))
			require.Equal(t, 6, p.Available())
			require.ErrorIs(t, p.Free(a[1:2]), ErrSlotNotAllocated, "double free")
			require.ErrorIs(t, p.Free([]int32{7}), ErrSlotNotAllocated, "never allocated")
			require.ErrorIs(t, p.Free([]int32{8}), ErrSlotRange)
			require.ErrorIs(t, p.Free([]int32{-1}), ErrSlotRange)

			// All or nothing: a bad slot after good ones frees none.
			require.ErrorIs(t, p.Free([]int32{0, 2, 8}), ErrSlotRange)
			require.ErrorIs(t, p.Free([]int32{0, 0}), ErrSlotNotAllocated, "listed twice")
			require.Equal(t, 6, p.Available())
			require.NoError(t, p.Free([]int32{0, 2}))
			require.Equal(t, 8, p.Available())

			all, err := p.Alloc(nil, 8)
			require.NoError(t, err)
			require.ElementsMatch(t, []int32{0, 1, 2, 3, 4, 5, 6, 7}, all)
			require.Equal(t, 0, p.Available())
			require.NoError(t, p.Free(all))
		})
	}
}

func TestPool_ReadWriteCopy(t *testing.T) {
	for _, pm := range poolMakers {
		t.Run(pm.name, func(t *testing.T) {
			p := pm.make(t, 4, 8)
			s, err := p.Alloc(nil, 2)
			require.NoError(t, err)
			require.NoError(t, p.Write(s[0], []byte("abcdefgh")))
			require.NoError(t, p.Write(s[1], []byte("xy")))

			got := make([]byte, 8)
			require.NoError(t, p.Read(s[0], got))
			require.Equal(t, "abcdefgh", string(got))
			require.NoError(t, p.Read(s[1], got[:2]))
			require.Equal(t, "xy", string(got[:2]))

			require.NoError(t, p.Copy(s[1], s[0]))
			require.NoError(t, p.Read(s[1], got))
			require.Equal(t, "abcdefgh", string(got))

			require.ErrorIs(t, p.Write(s[0], make([]byte, 9)), ErrInvalidArgument)
			require.ErrorIs(t, p.Read(s[0], make([]byte, 9)), ErrInvalidArgument)
			require.ErrorIs(t, p.Write(3, []byte("a")), ErrSlotNotAllocated)
			require.ErrorIs(t, p.Read(3, got), ErrSlotNotAllocated)
			require.ErrorIs(t, p.Write(4, []byte("a")), ErrSlotRange)
			require.ErrorIs(t, p.Read(-2, got), ErrSlotRange)
			require.ErrorIs(t, p.Copy(3, s[0]), ErrSlotNotAllocated)
			require.ErrorIs(t, p.Copy(s[0], 9), ErrSlotRange)

			require.NoError(t, p.Free(s))
			require.ErrorIs(t, p.Read(s[0], got), ErrSlotNotAllocated, "read after free")
		})
	}
}

func TestPool_Close(t *testing.T) {
	for _, pm := range poolMakers {
		t.Run(pm.name, func(t *testing.T) {
			p := pm.make(t, 4, 16)
			s, err := p.Alloc(nil, 1)
			require.NoError(t, err)
			require.NoError(t, p.Close())
			require.NoError(t, p.Close(), "closing twice is fine")
			require.Equal(t, 0, p.Available())
			_, err = p.Alloc(nil, 1)
			require.ErrorIs(t, err, ErrClosed)
			require.ErrorIs(t, p.Free(s), ErrClosed)
			require.ErrorIs(t, p.Write(s[0], []byte("x")), ErrClosed)
			require.ErrorIs(t, p.Read(s[0], make([]byte, 1)), ErrClosed)
			require.ErrorIs(t, p.Copy(s[0], s[0]), ErrClosed)
		})
	}
}

func TestPool_Constructors(t *testing.T) {
	_, err := NewMemPool(-1, 4)
	require.ErrorIs(t, err, ErrInvalidArgument)
	_, err = NewMemPool(4, -1)
	require.ErrorIs(t, err, ErrInvalidArgument)
	p, err := NewMemPool(4, 0) // an allocator without storage
	require.NoError(t, err)
	s, err := p.Alloc(nil, 1)
	require.NoError(t, err)
	require.NoError(t, p.Write(s[0], nil))
	require.ErrorIs(t, p.Write(s[0], []byte{1}), ErrInvalidArgument)

	_, err = NewMmapPool(0, 16)
	require.ErrorIs(t, err, ErrInvalidArgument)
	_, err = NewMmapPool(4, 0)
	require.ErrorIs(t, err, ErrInvalidArgument)
	if ^uint(0)>>63 == 1 { // 64-bit: 2^60 bytes cannot be mapped
		_, err = NewMmapPool(1<<20, 1<<40)
		require.ErrorIs(t, err, ErrMmapUnavailable)
	}
}

func TestPoolSet(t *testing.T) {
	kv, err := NewMemPool(4, 16)
	require.NoError(t, err)
	host, err := NewMemPool(4, 16)
	require.NoError(t, err)
	s := NewPoolSet(kv)
	require.Equal(t, Pool(kv), s.Pool(core.Full, Device))
	require.Nil(t, s.Pool(core.Full, Host))
	require.NoError(t, s.Set(core.Full, Host, host))
	require.Equal(t, Pool(host), s.Pool(core.Full, Host))
	require.ErrorIs(t, s.Set(core.Component(7), Device, host), ErrInvalidArgument)
	require.Nil(t, s.Pool(core.Component(7), Device))
	require.Nil(t, s.Pool(core.Full, Tier(5)))
	require.NoError(t, s.Close())
	_, err = kv.Alloc(nil, 1)
	require.ErrorIs(t, err, ErrClosed)
	_, err = host.Alloc(nil, 1)
	require.ErrorIs(t, err, ErrClosed)
	require.Equal(t, "device", Device.String())
	require.Equal(t, "host", Host.String())
}
