package cuda

import "time"

// CopyMode chooses how whole scattered pages move.
type CopyMode uint8

const (
	// CopyMemcpy issues one cuMemcpyAsync per run of contiguous whole
	// pages and one cuMemcpy2DAsync per partial run.
	CopyMemcpy CopyMode = iota
	// CopyKernel gathers or scatters the whole pages of a segment that are
	// not contiguous with one launch of the page copy kernel (CopyPagesPTX)
	// reading or writing pinned host memory through its device mapping;
	// partial runs still use cuMemcpy2DAsync.
	CopyKernel
	// CopyAuto measures both on the fresh pools when they are built
	// (scattered whole pages each way, timed by the wall clock) and keeps
	// the faster; Pools.Calibration says what was measured.
	CopyAuto
)

// String names the mode as the flags spell it.
func (m CopyMode) String() string {
	switch m {
	case CopyKernel:
		return "kernel"
	case CopyAuto:
		return "auto"
	}
	return "memcpy"
}

// Calibration is what CopyAuto measured: the time of the same scattered
// page lists (Pages whole pages device to host, then back) with per-page
// copies and with the kernel, best of a few runs, and the mode chosen.
// Reason says why no measurement was made (no host pool, too few pages,
// pages not a multiple of 16 bytes, the kernel did not load).
type Calibration struct {
	Chosen         CopyMode
	Pages          int
	Memcpy, Kernel time.Duration
	Reason         string
}

// PoolsConfig sizes a Pools set. Zero sizes leave a pool out.
type PoolsConfig struct {
	Geometry Geometry
	// Device pools, in slots: KV and SWA tokens (whole pages), Mamba states.
	Tokens, SWATokens, States int
	// Pinned host pools of the host tier.
	HostTokens, HostSWATokens, HostStates int
	// Mode chooses memcpy or the kernel for scattered whole pages.
	Mode CopyMode
	// Timing records CUDA timing events around every batch, so Stats has
	// the time the copies took on the device (TransferStats.DeviceTime).
	Timing bool
}

// TransferStats counts the traffic of a Pools set.
type TransferStats struct {
	Batches, Failed              uint64 // batches started; batches that failed
	Copies, Kernels              uint64 // driver copy calls and kernel launches issued
	BytesD2H, BytesH2D, BytesD2D uint64 // bytes moved by completed batches
	DeviceTime                   time.Duration
	Wall                         time.Duration // Start to observed completion, summed
	InFlight                     int64         // batches started and not yet seen complete
	// Synchronous slot traffic of the device pools (Read and Write through
	// the staging buffer, Copy): bytes, calls and the time they took.
	SyncBytes, SyncCalls         uint64
	SyncTime                     time.Duration
	TimedBatches, UntimedBatches uint64 // batches with and without a device time (Timing)
}

// Bytes is every byte moved.
func (s TransferStats) Bytes() uint64 { return s.BytesD2H + s.BytesH2D + s.BytesD2D }

// GBps is bytes per second in GB/s (10^9) over d, 0 when d is 0.
func GBps(bytes uint64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(bytes) / d.Seconds() / 1e9
}
