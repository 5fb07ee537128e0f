package main

import (
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/host/cuda"
	"github.com/radixkv/radixkv/host/native"
)

// gpuFlags are replay's --pools flags: where the KV pools live and the KV
// geometry that sizes their slots on a GPU.
type gpuFlags struct {
	pools      string // mem, cuda or cuda-fake
	device     int
	model      string
	layers     int
	kvHeads    int
	headDim    int
	dtypeBytes int
	swaLayers  int
	stateBytes int
	copyMode   string
}

func (g *gpuFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&g.pools, "pools", "mem", "where the pools live: mem (Go memory, slots hold canary records only), cuda (device memory of an NVIDIA GPU through the CUDA driver, pinned host memory for the host tier; slots are full KV of the --model geometry) or cuda-fake (the same code on host-memory fake driver, for machines without a GPU)")
	fs.IntVar(&g.device, "cuda-device", 0, "CUDA device `index` (with --pools cuda)")
	fs.StringVar(&g.model, "model", "", "KV geometry preset with --pools cuda: "+strings.Join(cuda.PresetNames(), ", ")+" (default llama-3-8b; tiny with cuda-fake); the flags below override its fields")
	fs.IntVar(&g.layers, "layers", 0, "attention layers with full KV (overrides --model)")
	fs.IntVar(&g.kvHeads, "kv-heads", 0, "KV heads (overrides --model)")
	fs.IntVar(&g.headDim, "head-dim", 0, "head dimension (overrides --model)")
	fs.IntVar(&g.dtypeBytes, "dtype-bytes", 0, "bytes per KV element, 2 for bf16 (overrides --model)")
	fs.IntVar(&g.swaLayers, "swa-layers", 0, "sliding-window layers, sizing the SWA pool's slots (with swa in --components; default: --layers)")
	fs.IntVar(&g.stateBytes, "state-bytes", 0, "bytes of one Mamba state (with mamba in --components; default 64 KiB, 4 KiB with cuda-fake)")
	fs.StringVar(&g.copyMode, "cuda-copy", "memcpy", "how scattered whole pages move with --pools cuda: memcpy (one cuMemcpyAsync per run of pages), kernel (the gather/scatter PTX kernel) or auto (time both on the fresh pools and keep the faster)")
}

// gpuSet is an open GPU (or fake) with its pools.
type gpuSet struct {
	dev   *cuda.Device
	pools *cuda.Pools
	geom  cuda.Geometry
	mode  cuda.CopyMode
}

func (g *gpuSet) close() {
	if g.pools != nil {
		g.pools.Close()
	}
	if g.dev != nil {
		g.dev.Close()
	}
}

// geometry resolves --model and the field flags.
func (s *settings) geometry() (cuda.Geometry, error) {
	f := &s.gpu
	name := f.model
	if name == "" {
		name = "llama-3-8b"
		if f.pools == "cuda-fake" {
			name = "tiny"
		}
	}
	g, err := cuda.Preset(name)
	if err != nil {
		return g, err
	}
	for _, o := range []struct{ flag, dst *int }{{&f.layers, &g.Layers}, {&f.kvHeads, &g.KVHeads}, {&f.headDim, &g.HeadDim}, {&f.dtypeBytes, &g.DTypeBytes}} {
		if *o.flag != 0 {
			*o.dst = *o.flag
		}
	}
	g.PageSize = s.pageSize
	if s.has(core.SWA) {
		g.SWALayers = g.Layers
		if f.swaLayers != 0 {
			g.SWALayers = f.swaLayers
		}
	}
	if s.has(core.Mamba) {
		g.StateBytes = 64 << 10
		if f.pools == "cuda-fake" {
			g.StateBytes = 4 << 10
		}
		if f.stateBytes != 0 {
			g.StateBytes = f.stateBytes
		}
		if g.StateBytes < native.CanaryBytes {
			return g, fmt.Errorf("--state-bytes %d: a state must hold the %d-byte canary record", g.StateBytes, native.CanaryBytes)
		}
	}
	return g, g.Validate()
}

// newGPUPools opens the driver and device and allocates the pools the
// replay needs, sized as the mem pools would be.
func (s *settings) newGPUPools(cfg core.Config) (*gpuSet, error) {
	f := &s.gpu
	g, err := s.geometry()
	if err != nil {
		return nil, err
	}
	set := &gpuSet{geom: g}
	switch f.copyMode {
	case "memcpy":
	case "kernel":
		set.mode = cuda.CopyKernel
	case "auto":
		set.mode = cuda.CopyAuto
	default:
		return nil, fmt.Errorf("--cuda-copy %q: want memcpy, kernel or auto", f.copyMode)
	}
	pc := cuda.PoolsConfig{Geometry: g, Tokens: s.capacity, Mode: set.mode, Timing: true}
	if s.has(core.SWA) {
		pc.SWATokens = s.swaCapacity
	}
	if s.has(core.Mamba) {
		pc.States = s.mambaCapacity
	}
	if cfg.HostTier {
		pc.HostTokens = s.hostPoolCapacity(core.Full)
		if s.has(core.SWA) {
			pc.HostSWATokens = s.hostPoolCapacity(core.SWA)
		}
		if s.has(core.Mamba) {
			pc.HostStates = s.hostPoolCapacity(core.Mamba)
		}
	}
	for _, c := range []struct {
		name string
		n    int
	}{{"--capacity", pc.Tokens}, {"--swa-capacity", pc.SWATokens}, {"--host-capacity", pc.HostTokens}} {
		if c.n%g.PageSize != 0 {
			return nil, fmt.Errorf("%s %d: CUDA pools hold whole pages; use a multiple of --page-size %d", c.name, c.n, g.PageSize)
		}
	}
	var drv *cuda.Driver
	switch f.pools {
	case "cuda":
		drv, err = cuda.Load()
	case "cuda-fake":
		drv, err = cuda.LoadFake(cuda.FakeConfig{QueryDelay: 1})
	}
	if err != nil {
		return nil, err
	}
	if set.dev, err = drv.Open(f.device); err != nil {
		return nil, err
	}
	if set.pools, err = cuda.NewPools(set.dev, pc); err != nil {
		set.close()
		return nil, fmt.Errorf("allocating the CUDA pools (%s; --capacity %d, --host-capacity %d): %w", g, s.capacity, s.hostCapacity, err)
	}
	set.mode = set.pools.Mode()
	return set, nil
}

// gpuReport is what the CUDA pools did (--pools cuda or cuda-fake only).
type gpuReport struct {
	Pools        string  `json:"pools"`
	Device       string  `json:"device"`
	Driver       string  `json:"driver"`
	Geometry     string  `json:"geometry"`
	TokenBytes   int     `json:"token_bytes"`
	CopyMode     string  `json:"copy_mode"`
	CopyChoice   string  `json:"copy_choice,omitempty"` // what --cuda-copy auto measured
	Batches      uint64  `json:"batches"`
	Failed       uint64  `json:"failed_batches"`
	Copies       uint64  `json:"copies"`
	Kernels      uint64  `json:"kernels"`
	BytesD2H     uint64  `json:"bytes_d2h"`
	BytesH2D     uint64  `json:"bytes_h2d"`
	BytesD2D     uint64  `json:"bytes_d2d"`
	DeviceSecs   float64 `json:"device_seconds"` // CUDA event time of the batches
	BatchGBps    float64 `json:"batch_gbps"`     // batch bytes / device time
	SyncBytes    uint64  `json:"sync_bytes"`     // synchronous slot copies (staging reads/writes, forks)
	SyncCalls    uint64  `json:"sync_calls"`
	SyncSecs     float64 `json:"sync_seconds"`
	SyncGBps     float64 `json:"sync_gbps"`
	FakeNote     string  `json:"note,omitempty"`
	BytesInTotal uint64  `json:"bytes_total"`
}

func (g *gpuSet) report(s *settings) *gpuReport {
	st := g.pools.Stats()
	drv := g.dev.Driver()
	r := &gpuReport{
		Pools:      s.gpu.pools,
		Device:     fmt.Sprintf("%d: %s (%s)", g.dev.Ordinal(), g.dev.Name(), cuda.FormatBytes(float64(g.dev.TotalMem()))),
		Driver:     fmt.Sprintf("%s, CUDA %d.%d", drv.Path(), drv.Version()/1000, drv.Version()%1000/10),
		Geometry:   g.geom.String(),
		TokenBytes: g.geom.TokenBytes(),
		CopyMode:   g.mode.String(),
		Batches:    st.Batches, Failed: st.Failed, Copies: st.Copies, Kernels: st.Kernels,
		BytesD2H: st.BytesD2H, BytesH2D: st.BytesH2D, BytesD2D: st.BytesD2D,
		DeviceSecs: st.DeviceTime.Seconds(), BatchGBps: cuda.GBps(st.Bytes(), st.DeviceTime),
		SyncBytes: st.SyncBytes, SyncCalls: st.SyncCalls, SyncSecs: st.SyncTime.Seconds(), SyncGBps: cuda.GBps(st.SyncBytes, st.SyncTime),
		BytesInTotal: st.Bytes() + st.SyncBytes,
	}
	if c := g.pools.Calibration(); s.gpu.copyMode == "auto" {
		if c.Reason != "" {
			r.CopyChoice = "auto: memcpy, not measured: " + c.Reason
		} else {
			r.CopyChoice = fmt.Sprintf("auto: %s (%d scattered pages each way: memcpy %s, kernel %s)", c.Chosen, c.Pages, c.Memcpy, c.Kernel)
		}
	}
	if drv.Fake() {
		r.FakeNote = "fake driver: host memory, no GPU; bandwidths are not GPU figures"
	}
	return r
}

// lines renders the report's GPU section for writeText.
func (r *gpuReport) lines(p func(format string, args ...any)) {
	p("pools\t%s\t(device %s; %s)", r.Pools, r.Device, r.Driver)
	p("  geometry\t%s", r.Geometry)
	p("  batched copies\t%s bytes\t(%s batches, %s failed; d2h %s, h2d %s, d2d %s; %s copy calls, %s kernels, mode %s)",
		count(int64(r.BytesD2H+r.BytesH2D+r.BytesD2D)), count(int64(r.Batches)), count(int64(r.Failed)),
		cuda.FormatBytes(float64(r.BytesD2H)), cuda.FormatBytes(float64(r.BytesH2D)), cuda.FormatBytes(float64(r.BytesD2D)),
		count(int64(r.Copies)), count(int64(r.Kernels)), r.CopyMode)
	if r.CopyChoice != "" {
		p("  copy mode\t%s", r.CopyChoice)
	}
	if r.DeviceSecs > 0 {
		p("  batch bandwidth\t%.2f GB/s\t(%.3fs of CUDA event time)", r.BatchGBps, r.DeviceSecs)
	} else {
		p("  batch bandwidth\t-\t(no batch was timed on a device)")
	}
	p("  synchronous copies\t%s bytes\t(%s slot reads, writes and forks through pinned staging, %.2f GB/s over %s)",
		count(int64(r.SyncBytes)), count(int64(r.SyncCalls)), r.SyncGBps, time.Duration(r.SyncSecs*float64(time.Second)).Round(time.Millisecond))
	if r.FakeNote != "" {
		p("  note\t%s", r.FakeNote)
	}
}
