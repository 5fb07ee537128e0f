//go:build !cgo || !linux

package cuda

import (
	"fmt"
	"runtime"

	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/host/native"
)

// Available reports whether this build can load a driver at all: false
// here (built without cgo, or not on Linux), so every constructor returns
// ErrNoDriver.
const Available = false

// DefaultLibrary is the driver library a cgo build opens.
const DefaultLibrary = "libcuda.so.1"

func errNoCgo() error {
	return fmt.Errorf("%w: this binary was built without cgo for %s/%s, so it cannot dlopen %s; rebuild with CGO_ENABLED=1 on Linux",
		ErrNoDriver, runtime.GOOS, runtime.GOARCH, DefaultLibrary)
}

// Driver is a loaded CUDA driver; without cgo there is none.
type Driver struct{}

// Load returns ErrNoDriver in a build without cgo.
func Load() (*Driver, error) { return nil, errNoCgo() }

// LoadFrom returns ErrNoDriver in a build without cgo.
func LoadFrom(string) (*Driver, error) { return nil, errNoCgo() }

// LoadFake returns ErrNoDriver in a build without cgo (the fake lives in
// the C shim).
func LoadFake(FakeConfig) (*Driver, error) { return nil, errNoCgo() }

// Path is empty without cgo.
func (d *Driver) Path() string { return "" }

// Version is 0 without cgo.
func (d *Driver) Version() int { return 0 }

// Fake is false without cgo.
func (d *Driver) Fake() bool { return false }

// DeviceCount returns ErrNoDriver.
func (d *Driver) DeviceCount() (int, error) { return 0, errNoCgo() }

// Open returns ErrNoDriver.
func (d *Driver) Open(int) (*Device, error) { return nil, errNoCgo() }

// Device is a GPU; without cgo there is none.
type Device struct{}

// Name is empty without cgo.
func (dv *Device) Name() string { return "" }

// Ordinal is 0 without cgo.
func (dv *Device) Ordinal() int { return 0 }

// TotalMem is 0 without cgo.
func (dv *Device) TotalMem() uint64 { return 0 }

// Driver is nil without cgo.
func (dv *Device) Driver() *Driver { return nil }

// Close does nothing without cgo.
func (dv *Device) Close() error { return nil }

// Pools is the CUDA pool set; without cgo it cannot be built.
type Pools struct{}

// NewPools returns ErrNoDriver.
func NewPools(*Device, PoolsConfig) (*Pools, error) { return nil, errNoCgo() }

// Pool returns nil without cgo.
func (ps *Pools) Pool(core.Component, native.Tier) native.Pool { return nil }

// Start returns ErrNoDriver.
func (ps *Pools) Start(*native.Batch) (native.Completion, error) { return nil, errNoCgo() }

// Stats is empty without cgo.
func (ps *Pools) Stats() TransferStats { return TransferStats{} }

// Geometry is empty without cgo.
func (ps *Pools) Geometry() Geometry { return Geometry{} }

// Close does nothing without cgo.
func (ps *Pools) Close() error { return nil }

// ConfigureFake does nothing without cgo.
func ConfigureFake(FakeConfig) {}

// FakeStatsNow is empty without cgo.
func FakeStatsNow() FakeStats { return FakeStats{} }

// Mode is CopyMemcpy without cgo.
func (ps *Pools) Mode() CopyMode { return CopyMemcpy }

// Calibration is empty without cgo.
func (ps *Pools) Calibration() Calibration { return Calibration{} }
