//go:build cgo && linux

package cuda

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
)

func (c FakeConfig) c() C.rkv_fake_config {
	return C.rkv_fake_config{
		devices: C.int(c.Devices), mem_limit: C.size_t(c.MemLimit), query_delay: C.int(c.QueryDelay),
		fail_enqueue_at: C.long(c.FailIssueAt), fail_enqueue_code: C.int(c.FailIssueCode),
		fail_exec_at: C.long(c.FailRunAt), fail_exec_code: C.int(c.FailRunCode),
		fail_alloc_at: C.int(c.FailAllocAt), fail_enqueue_every: C.long(c.FailIssueEvery), fail_exec_every: C.long(c.FailRunEvery),
	}
}

// LoadFake returns the fake driver: the same function table as a real
// driver, implemented on host memory by the shim (fake.c), with one
// device. Copies are queued per stream and run when an event or stream is
// synchronized, or after an event has been queried QueryDelay times, so
// every asynchronous path of the pools runs without a GPU. It is for
// tests and CPU-only runs; bandwidth figures from it mean nothing. The
// fake's state is process-wide: every fake Driver shares it.
func LoadFake(cfg FakeConfig) (*Driver, error) {
	if cfg.Devices == 0 {
		cfg.Devices = 1
	}
	if cfg.Devices < 0 {
		return nil, fmt.Errorf("%w: fake driver with %d devices", ErrGeometry, cfg.Devices)
	}
	t := (*C.rkv_cu)(C.calloc(1, C.sizeof_rkv_cu))
	if t == nil {
		return nil, fmt.Errorf("%w: out of memory for the function table", ErrNoDriver)
	}
	cc := cfg.c()
	C.rkv_fake_install(t, &cc)
	return initDriver(t, "fake", true)
}

// ConfigureFake changes the fake's configuration and resets its counters
// (allocations stay). It is for tests.
func ConfigureFake(cfg FakeConfig) {
	if cfg.Devices == 0 {
		cfg.Devices = 1
	}
	cc := cfg.c()
	C.rkv_fake_configure(&cc)
}

// FakeStatsNow returns the fake's counters.
func FakeStatsNow() FakeStats {
	var s C.rkv_fake_stats
	C.rkv_fake_get_stats(&s)
	return FakeStats{
		CopiesIssued: int64(s.copies_issued), CopiesRun: int64(s.copies_run), KernelsRun: int64(s.kernels_run),
		EventsRecorded: int64(s.events_recorded), LiveAllocs: int64(s.live_allocs),
		DeviceBytes: uint64(s.device_bytes), HostBytes: uint64(s.host_bytes), BytesCopied: uint64(s.bytes_copied),
	}
}

// FakePending is the number of operations queued on the fake's streams.
func FakePending() int { return int(C.rkv_fake_pending()) }

// FakeRunAll runs every queued operation of the fake (as if the GPU caught
// up).
func FakeRunAll() { C.rkv_fake_run_all() }
