//go:build cgo && linux

package cuda

import (
	"errors"
	"testing"

	"github.com/radixkv/radixkv/core"
	"github.com/stretchr/testify/require"
)

// realDevice opens device 0 of the installed driver, or skips saying why.
func realDevice(t testing.TB) *Device {
	t.Helper()
	d, err := Load()
	if errors.Is(err, ErrNoDriver) {
		t.Skipf("GPU test skipped: %v", err)
	}
	require.NoError(t, err)
	dev, err := d.Open(0)
	if errors.Is(err, ErrNoDevice) {
		t.Skipf("GPU test skipped: %v", err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, dev.Close()) })
	return dev
}

// TestGPU_Kernel loads the page copy kernel's PTX on a real device: the
// check that the JIT accepts it, which no machine without a GPU can make.
func TestGPU_Kernel(t *testing.T) {
	dev := realDevice(t)
	_, err := dev.loadKernel()
	require.NoError(t, err)
}

// TestGPU_TransferModel is the transfer model test on a real GPU, both
// copy modes.
func TestGPU_TransferModel(t *testing.T) {
	dev := realDevice(t)
	for _, mode := range []CopyMode{CopyMemcpy, CopyKernel} {
		t.Run(mode.String(), func(t *testing.T) { transferModel(t, dev, mode, gpuSteps()) })
	}
}

// TestGPU_Controller is the controller's randomized workload (backups,
// load-backs, Mamba forks) on real GPU pools, canary verified on every
// match: 0 mismatches required.
func TestGPU_Controller(t *testing.T) {
	dev := realDevice(t)
	for _, set := range controllerSets {
		for _, wp := range []core.WritePolicy{core.WriteThrough, core.WriteBack} {
			t.Run(set.name+"/"+wp.String(), func(t *testing.T) {
				for _, mode := range []CopyMode{CopyMemcpy, CopyKernel} {
					t.Run(mode.String(), func(t *testing.T) { controllerOn(t, dev, set.cfg, true, wp, mode, 11, gpuSteps()) })
				}
			})
		}
	}
}

// gpuSteps is the length of the GPU workloads: short under -test.short
// (compute-sanitizer slows every call down).
func gpuSteps() int {
	if testing.Short() {
		return 60
	}
	return 400
}
