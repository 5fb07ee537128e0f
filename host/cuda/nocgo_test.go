//go:build !cgo || !linux

package cuda

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLoad_NoCgo(t *testing.T) {
	require.False(t, Available)
	for _, load := range []func() (*Driver, error){
		Load,
		func() (*Driver, error) { return LoadFrom("/usr/lib/libcuda.so.1") },
		func() (*Driver, error) { return LoadFake(FakeConfig{}) },
	} {
		_, err := load()
		require.ErrorIs(t, err, ErrNoDriver)
		require.Contains(t, err.Error(), "without cgo")
		require.Contains(t, err.Error(), "libcuda.so.1")
	}
	_, err := NewPools(nil, PoolsConfig{})
	require.ErrorIs(t, err, ErrNoDriver)
}
