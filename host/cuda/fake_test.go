//go:build cgo && linux

package cuda

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/host/native"
	"github.com/stretchr/testify/require"
)

// tinyGeom: 2 layers × 1 head × 4 dims × 2 bytes = 8-byte rows, 32 bytes a
// token, pages of 4 tokens (128 bytes, a multiple of 16 for the kernel).
// CanaryBytes is the slot size of the memory pools compared with.
const CanaryBytes = native.CanaryBytes

var tinyGeom = Geometry{Layers: 2, KVHeads: 1, HeadDim: 4, DTypeBytes: 2, PageSize: 4, SWALayers: 1, StateBytes: 48}

// fakeDevice opens device 0 of the fake driver configured with cfg and
// checks at cleanup that everything allocated was freed.
func fakeDevice(t testing.TB, cfg FakeConfig) *Device {
	t.Helper()
	d, err := LoadFake(cfg)
	require.NoError(t, err)
	base := FakeStatsNow().LiveAllocs
	dev, err := d.Open(0)
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, dev.Close())
		require.Equal(t, base, FakeStatsNow().LiveAllocs, "allocations left behind")
		require.Zero(t, FakePending())
		ConfigureFake(FakeConfig{})
	})
	return dev
}

func TestLoadFrom_Missing(t *testing.T) {
	_, err := LoadFrom(filepath.Join(t.TempDir(), "libcuda.so.1"))
	require.ErrorIs(t, err, ErrNoDriver)
	require.Contains(t, err.Error(), "libcuda.so.1")
	require.Contains(t, err.Error(), "dlopen")
}

func TestLoadFrom_NotADriver(t *testing.T) {
	// libc loads but has no cuInit: the message names the missing entry point.
	_, err := LoadFrom("libc.so.6")
	require.ErrorIs(t, err, ErrNoDriver)
	require.Contains(t, err.Error(), "cuInit")
}

// TestLoad_RealDriver runs only where a driver is installed.
func TestLoad_RealDriver(t *testing.T) {
	d, err := Load()
	if errors.Is(err, ErrNoDriver) {
		t.Skipf("no CUDA driver on this machine: %v", err)
	}
	require.NoError(t, err)
	n, err := d.DeviceCount()
	if err != nil || n == 0 {
		t.Skipf("driver %s (version %d) has no device: %v", d.Path(), d.Version(), err)
	}
	dev, err := d.Open(0)
	require.NoError(t, err)
	defer dev.Close()
	t.Logf("device 0: %s, %s, driver %d", dev.Name(), FormatBytes(float64(dev.TotalMem())), d.Version())
}

func TestFake_DeviceErrors(t *testing.T) {
	d, err := LoadFake(FakeConfig{Devices: 2})
	require.NoError(t, err)
	require.True(t, d.Fake())
	n, err := d.DeviceCount()
	require.NoError(t, err)
	require.Equal(t, 2, n)
	_, err = d.Open(2)
	require.ErrorIs(t, err, ErrNoDevice)
	require.Contains(t, err.Error(), "has 2")
	ConfigureFake(FakeConfig{Devices: -1})
	ConfigureFake(FakeConfig{})
}

func TestFake_OutOfMemory(t *testing.T) {
	dev := fakeDevice(t, FakeConfig{MemLimit: 1 << 20})
	g, _ := Preset("llama-3-8b")
	_, err := NewKVPool(dev, g, 1024) // 128 MiB on a 1 MiB device
	require.True(t, IsOutOfMemory(err), "%v", err)
	require.Contains(t, err.Error(), "CUDA_ERROR_OUT_OF_MEMORY")
	require.Contains(t, err.Error(), "device KV pool of 128 MiB")

	// A set whose third allocation fails frees the first two.
	ConfigureFake(FakeConfig{FailAllocAt: 3})
	_, err = NewPools(dev, PoolsConfig{Geometry: tinyGeom, Tokens: 16, SWATokens: 16, States: 4, HostTokens: 16})
	require.True(t, IsOutOfMemory(err), "%v", err)
}

func TestPools_Config(t *testing.T) {
	dev := fakeDevice(t, FakeConfig{})
	_, err := NewPools(dev, PoolsConfig{Geometry: tinyGeom, Tokens: 6}) // not whole pages
	require.ErrorIs(t, err, ErrGeometry)
	_, err = NewPools(dev, PoolsConfig{Geometry: tinyGeom})
	require.ErrorIs(t, err, ErrGeometry)
	g := tinyGeom
	g.SWALayers = 0
	_, err = NewSWAPool(dev, g, 8)
	require.ErrorIs(t, err, ErrGeometry)
	_, err = NewKVPool(nil, tinyGeom, 8)
	require.ErrorIs(t, err, native.ErrInvalidArgument)
}

// TestDevicePool_Slots: the accounting is native's (all-or-nothing,
// double free detected), and Read/Write/Copy move a slot's rows.
func TestDevicePool_Slots(t *testing.T) {
	dev := fakeDevice(t, FakeConfig{})
	p, err := NewKVPool(dev, tinyGeom, 8)
	require.NoError(t, err)
	defer p.Close()
	require.Equal(t, 32, p.SlotBytes())
	require.Equal(t, 2*128, p.Bytes())
	s, err := p.Alloc(nil, 3)
	require.NoError(t, err)
	_, err = p.Alloc(nil, 6)
	require.ErrorIs(t, err, native.ErrPoolExhausted)
	require.Equal(t, 5, p.Available())

	full := bytes.Repeat([]byte{0}, 32)
	for i := range full {
		full[i] = byte(i + 1)
	}
	require.NoError(t, p.Write(s[1], full))
	got := make([]byte, 32)
	require.NoError(t, p.Read(s[1], got))
	require.Equal(t, full, got)
	// A partial row, a partial read.
	require.NoError(t, p.Write(s[0], []byte{9, 9, 9}))
	part := make([]byte, 11)
	require.NoError(t, p.Read(s[1], part))
	require.Equal(t, full[:11], part)
	require.NoError(t, p.Copy(s[2], s[1]))
	require.NoError(t, p.Read(s[2], got))
	require.Equal(t, full, got)

	require.ErrorIs(t, p.Write(s[0], make([]byte, 33)), native.ErrInvalidArgument)
	require.ErrorIs(t, p.Read(7, got), native.ErrSlotNotAllocated)
	require.ErrorIs(t, p.Write(8, nil), native.ErrSlotRange)
	require.ErrorIs(t, p.Free([]int32{s[0], s[0]}), native.ErrSlotNotAllocated)
	require.Equal(t, 5, p.Available(), "a failed free changes nothing")
	require.NoError(t, p.Free(s))
	require.NoError(t, p.Close())
	require.NoError(t, p.Close())
	_, err = p.Alloc(nil, 1)
	require.ErrorIs(t, err, native.ErrClosed)
	require.ErrorIs(t, p.Write(0, nil), native.ErrClosed)
}

// model is the naive reference of the transfer tests: the bytes of every
// slot of every (component, tier) pool.
type model map[[3]int32][]byte

func key(c core.Component, t native.Tier, s int32) [3]int32 { return [3]int32{int32(c), int32(t), s} }

// fill writes a distinct pattern into every slot of p and records it.
func fill(t testing.TB, m model, rng *rand.Rand, c core.Component, tier native.Tier, p native.Pool, slots []int32) {
	for _, s := range slots {
		b := make([]byte, p.SlotBytes())
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		require.NoError(t, p.Write(s, b))
		m[key(c, tier, s)] = b
	}
}

// check reads every slot of the model back.
func check(t testing.TB, m model, ps *Pools) {
	t.Helper()
	for k, want := range m {
		p := ps.Pool(core.Component(k[0]), native.Tier(k[1]))
		got := make([]byte, len(want))
		require.NoError(t, p.Read(k[2], got))
		require.Equal(t, want, got, "component %d tier %d slot %d", k[0], k[1], k[2])
	}
}

// slotList picks n distinct slots of all (shuffled, or runs of contiguous
// slots at random page phases, so the coalescing paths all run).
func slotList(rng *rand.Rand, all []int32, n int, contiguous bool) []int32 {
	if contiguous {
		start := rng.IntN(len(all) - n + 1)
		out := append([]int32(nil), all[start:start+n]...)
		if rng.IntN(2) == 0 {
			slices.Reverse(out) // descending, as a LIFO free list hands slots back
		}
		return out
	}
	perm := rng.Perm(len(all))[:n]
	out := make([]int32, n)
	for i, k := range perm {
		out[i] = all[k]
	}
	// Sometimes keep runs together.
	if rng.IntN(2) == 0 {
		for i := 1; i < n; i++ {
			if rng.IntN(3) > 0 && out[i-1]+1 < int32(len(all)) {
				out[i] = out[i-1] + 1
			}
		}
		out = dedupe(out)
	}
	return out
}

func dedupe(s []int32) []int32 {
	seen := map[int32]bool{}
	out := s[:0]
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// TestPools_TransferModel drives random batches (backups, load-backs,
// forks; scattered, contiguous and partial-page lists) through the fake
// driver with late completions, against the naive model, in both copy
// modes.
func TestPools_TransferModel(t *testing.T) {
	for _, mode := range []CopyMode{CopyMemcpy, CopyKernel} {
		t.Run(mode.String(), func(t *testing.T) {
			transferModel(t, fakeDevice(t, FakeConfig{QueryDelay: 2}), mode, 200)
		})
	}
}

// transferModel is the body of the transfer model test, on any device.
func transferModel(t *testing.T, dev *Device, mode CopyMode, steps int) {
	ps, err := NewPools(dev, PoolsConfig{Geometry: tinyGeom, Tokens: 64, SWATokens: 32, States: 8,
		HostTokens: 64, HostSWATokens: 32, HostStates: 8, Mode: mode, Timing: true})
	require.NoError(t, err)
	defer ps.Close()
	rng := rand.New(rand.NewPCG(uint64(mode)+1, 7))
	m := model{}
	all := map[[2]int][]int32{}
	for c := range 3 {
		for tier := range 2 {
			p := ps.Pool(core.Component(c), native.Tier(tier))
			s, err := p.Alloc(nil, p.Capacity())
			require.NoError(t, err)
			all[[2]int{c, tier}] = s
			fill(t, m, rng, core.Component(c), native.Tier(tier), p, s)
		}
	}
	var moved uint64
	for step := 0; step < steps; step++ {
		var b native.Batch
		want := model{}
		for seg := 0; seg < 1+rng.IntN(3); seg++ {
			c := core.Component(rng.IntN(3))
			from, to := native.Tier(rng.IntN(2)), native.Tier(rng.IntN(2))
			if from == native.Host && to == native.Host {
				to = native.Device
			}
			capy := len(all[[2]int{int(c), 0}])
			n := 1 + rng.IntN(min(capy/2, 12))
			src := slotList(rng, all[[2]int{int(c), int(from)}], n, rng.IntN(2) == 0)
			dst := slotList(rng, all[[2]int{int(c), int(to)}], len(src), rng.IntN(2) == 0)
			if len(dst) < len(src) {
				src = src[:len(dst)]
			}
			b.Add(c, from, to, src, dst)
			if b.Validate() != nil {
				b.Segments = b.Segments[:len(b.Segments)-1]
				continue
			}
			for i := range src {
				want[key(c, to, dst[i])] = m[key(c, from, src[i])]
				moved += uint64(ps.Pool(c, from).SlotBytes())
			}
		}
		if len(b.Segments) == 0 {
			continue
		}
		comp, err := ps.Start(&b)
		require.NoError(t, err)
		if rng.IntN(2) == 0 {
			for !comp.Done() {
			}
		}
		require.NoError(t, comp.Wait())
		require.True(t, comp.Done())
		for k, v := range want {
			m[k] = v
		}
		if step%20 == 0 {
			check(t, m, ps)
		}
	}
	check(t, m, ps)
	st := ps.Stats()
	require.Equal(t, moved, st.Bytes())
	require.Zero(t, st.Failed)
	require.Zero(t, st.InFlight)
	if mode == CopyKernel {
		require.NotZero(t, st.Kernels)
	}
	t.Logf("%+v", st)
	for k, s := range all {
		require.NoError(t, ps.Pool(core.Component(k[0]), native.Tier(k[1])).Free(s))
	}
}

// TestPools_Coalescing: whole contiguous pages move in one copy, a
// partial page in one 2D copy.
func TestPools_Coalescing(t *testing.T) {
	dev := fakeDevice(t, FakeConfig{})
	ps, err := NewPools(dev, PoolsConfig{Geometry: tinyGeom, Tokens: 32, HostTokens: 32})
	require.NoError(t, err)
	defer ps.Close()
	d, err := ps.Pool(core.Full, native.Device).Alloc(nil, 32)
	require.NoError(t, err)
	h, err := ps.Pool(core.Full, native.Host).Alloc(nil, 32)
	require.NoError(t, err)
	for _, tc := range []struct {
		name     string
		src, dst []int32
		copies   uint64
	}{
		{"three whole pages", d[4:16], h[8:20], 1},
		{"partial page", d[1:3], h[5:7], 1},
		{"phase differs", d[1:7], h[2:8], 3}, // split where either side crosses a page
		{"scattered pages", append(append([]int32{}, d[0:4]...), d[12:16]...), h[0:8], 2},
		{"descending both sides", reversed(d[20:28]), reversed(h[20:28]), 1},
		{"descending one side", reversed(d[0:2]), h[0:2], 2},
	} {
		before := ps.Stats().Copies
		var b native.Batch
		b.Add(core.Full, native.Device, native.Host, tc.src, tc.dst)
		c, err := ps.Start(&b)
		require.NoError(t, err)
		require.NoError(t, c.Wait())
		require.Equal(t, tc.copies, ps.Stats().Copies-before, tc.name)
	}
	// The host pool's bytes are page-major: slot s's row r at the layout's offset.
	hp := ps.HostPool(core.Full)
	require.NoError(t, ps.DevicePool(core.Full).Write(d[5], bytes.Repeat([]byte{0xee}, 32)))
	var b native.Batch
	b.Add(core.Full, native.Device, native.Host, d[5:6], h[9:10])
	c, err := ps.Start(&b)
	require.NoError(t, err)
	require.NoError(t, c.Wait())
	raw := hp.mem.Bytes()
	for r := 0; r < 4; r++ {
		off := hp.lay.rowOff(9, r)
		require.Equal(t, bytes.Repeat([]byte{0xee}, 8), raw[off:off+8], "row %d", r)
	}
	require.NoError(t, ps.Pool(core.Full, native.Device).Free(d))
	require.NoError(t, ps.Pool(core.Full, native.Host).Free(h))
}

func reversed(s []int32) []int32 {
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}

// TestPools_Completion: a batch completes only after its events do; until
// then the destination holds its old bytes.
func TestPools_Completion(t *testing.T) {
	dev := fakeDevice(t, FakeConfig{QueryDelay: 3})
	ps, err := NewPools(dev, PoolsConfig{Geometry: tinyGeom, Tokens: 8, HostTokens: 8})
	require.NoError(t, err)
	defer ps.Close()
	d, _ := ps.Pool(core.Full, native.Device).Alloc(nil, 4)
	h, _ := ps.Pool(core.Full, native.Host).Alloc(nil, 4)
	for _, s := range d {
		require.NoError(t, ps.Pool(core.Full, native.Device).Write(s, bytes.Repeat([]byte{byte(s + 1)}, 32)))
	}
	for _, s := range h {
		require.NoError(t, ps.Pool(core.Full, native.Host).Write(s, make([]byte, 32)))
	}
	var b native.Batch
	b.Add(core.Full, native.Device, native.Host, d, h)
	c, err := ps.Start(&b)
	require.NoError(t, err)
	require.Equal(t, int64(1), ps.Stats().InFlight)
	for i := 0; i < 3; i++ {
		require.False(t, c.Done(), "poll %d", i)
		got := make([]byte, 32)
		require.NoError(t, ps.Pool(core.Full, native.Host).Read(h[0], got))
		require.Equal(t, make([]byte, 32), got, "copied before completion")
	}
	require.True(t, c.Done())
	require.NoError(t, c.Wait())
	got := make([]byte, 32)
	require.NoError(t, ps.Pool(core.Full, native.Host).Read(h[3], got))
	require.Equal(t, bytes.Repeat([]byte{4}, 32), got)
	require.Zero(t, ps.Stats().InFlight)
	require.Equal(t, uint64(4*32), ps.Stats().BytesD2H)
}

// TestPools_Faults: a copy the driver refuses mid-batch fails Start with
// the driver's name for the code and leaves nothing running; a copy that
// fails while it runs fails the Completion; a batch naming a free slot or
// a missing pool is refused before anything is issued.
func TestPools_Faults(t *testing.T) {
	dev := fakeDevice(t, FakeConfig{})
	ps, err := NewPools(dev, PoolsConfig{Geometry: tinyGeom, Tokens: 32, HostTokens: 32})
	require.NoError(t, err)
	defer ps.Close()
	d, _ := ps.Pool(core.Full, native.Device).Alloc(nil, 32)
	h, _ := ps.Pool(core.Full, native.Host).Alloc(nil, 16)
	scattered := []int32{d[0], d[5], d[10], d[15], d[20]} // five copies
	var b native.Batch
	b.Add(core.Full, native.Device, native.Host, scattered, h[:5])

	base := FakeStatsNow().CopiesIssued
	ConfigureFake(FakeConfig{FailIssueAt: int(base) + 3})
	_, err = ps.Start(&b)
	require.ErrorIs(t, err, native.ErrTransfer)
	require.ErrorIs(t, err, InvalidValue)
	require.Contains(t, err.Error(), "CUDA_ERROR_INVALID_VALUE")
	require.Contains(t, err.Error(), "copy 3 of a batch of 5")
	require.Zero(t, FakePending(), "a refused batch leaves nothing running")
	require.Equal(t, uint64(1), ps.Stats().Failed)

	ConfigureFake(FakeConfig{FailRunAt: 4, FailRunCode: IllegalAddress, QueryDelay: 1})
	c, err := ps.Start(&b)
	require.NoError(t, err)
	require.False(t, c.Done())
	require.True(t, c.Done())
	err = c.Wait()
	require.ErrorIs(t, err, native.ErrTransfer)
	require.ErrorIs(t, err, IllegalAddress)
	require.Contains(t, err.Error(), "CUDA_ERROR_ILLEGAL_ADDRESS")
	require.Equal(t, err, c.Wait(), "Wait repeats the result")
	require.Equal(t, uint64(2), ps.Stats().Failed)
	require.Zero(t, ps.Stats().BytesD2H, "a failed batch moves no counted bytes")

	// The stream is usable again afterwards.
	ConfigureFake(FakeConfig{})
	c, err = ps.Start(&b)
	require.NoError(t, err)
	require.NoError(t, c.Wait())

	before := FakeStatsNow().CopiesIssued
	var bad native.Batch
	bad.Add(core.Full, native.Device, native.Host, []int32{d[0], d[1]}, []int32{h[0], 20}) // 20 is free
	_, err = ps.Start(&bad)
	require.ErrorIs(t, err, native.ErrSlotNotAllocated)
	bad.Reset()
	bad.Add(core.Mamba, native.Device, native.Host, []int32{0}, []int32{0})
	_, err = ps.Start(&bad)
	require.ErrorIs(t, err, native.ErrNoPool)
	require.Equal(t, before, FakeStatsNow().CopiesIssued, "nothing issued for a refused batch")
	require.NoError(t, ps.Pool(core.Full, native.Device).Free(d))
	require.NoError(t, ps.Pool(core.Full, native.Host).Free(h))
}

// TestPools_ConcurrentPolls: completions polled from other goroutines
// (run with -race).
func TestPools_ConcurrentPolls(t *testing.T) {
	dev := fakeDevice(t, FakeConfig{QueryDelay: 5})
	ps, err := NewPools(dev, PoolsConfig{Geometry: tinyGeom, Tokens: 64, HostTokens: 64})
	require.NoError(t, err)
	defer ps.Close()
	d, _ := ps.Pool(core.Full, native.Device).Alloc(nil, 64)
	h, _ := ps.Pool(core.Full, native.Host).Alloc(nil, 64)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				k := (g*50 + i) % 16
				var b native.Batch
				b.Add(core.Full, native.Device, native.Host, d[4*k:4*k+4], h[4*k:4*k+4])
				c, err := ps.Start(&b)
				if err != nil {
					t.Error(err)
					return
				}
				done := make(chan struct{})
				go func() {
					for !c.Done() {
					}
					close(done)
				}()
				<-done
				if err := c.Wait(); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	require.Zero(t, ps.Stats().InFlight)
	require.Equal(t, uint64(200), ps.Stats().Batches)
}

// TestController_OnCUDAPools runs the native controller's randomized
// workload (arrivals over shared prefixes, prefill, finish, aborts, the
// host tier with both write policies) on CUDA pools over the fake driver,
// with the canary verifying every match and Audit after every step.
func TestController_OnCUDAPools(t *testing.T) {
	steps := 300
	if testing.Short() {
		steps = 80
	}
	for _, set := range controllerSets {
		for _, wp := range []core.WritePolicy{core.WriteThrough, core.WriteBack} {
			for _, host := range []bool{false, true} {
				name := set.name + "/" + wp.String()
				if !host {
					if wp == core.WriteBack {
						continue
					}
					name = set.name + "/device-only"
				}
				t.Run(name, func(t *testing.T) {
					for _, mode := range []CopyMode{CopyMemcpy, CopyKernel} {
						t.Run(mode.String(), func(t *testing.T) {
							controllerOn(t, fakeDevice(t, FakeConfig{QueryDelay: 1}), set.cfg, host, wp, mode, uint64(len(name)), steps)
						})
					}
				})
			}
		}
	}
}

var controllerSets = []struct {
	name string
	cfg  core.Config
}{
	{"full", core.Config{PageSize: 2}},
	{"full+swa", core.Config{PageSize: 2, Components: []core.Component{core.Full, core.SWA}, SWAWindow: 6}},
	{"full+mamba", core.Config{PageSize: 2, Components: []core.Component{core.Full, core.Mamba}, MambaChunkSize: 4}},
}

// controllerOn runs the controller workload on CUDA pools of dev.
func controllerOn(t *testing.T, dev *Device, cfg core.Config, host bool, wp core.WritePolicy, mode CopyMode, seed uint64, steps int) {
	g := tinyGeom
	g.PageSize = cfg.PageSize
	g.HeadDim = 8 // 16-byte rows: 64-byte pages of 2 tokens, so the kernel takes whole pages
	pc := PoolsConfig{Geometry: g, Tokens: 64, Mode: mode}
	if has(cfg, core.SWA) {
		pc.SWATokens = 64
	}
	if has(cfg, core.Mamba) {
		pc.States = 10
	}
	if host {
		cfg.HostTier, cfg.WritePolicy = true, wp
		pc.HostTokens = 96
		if has(cfg, core.SWA) {
			pc.HostSWATokens = 64
		}
		if has(cfg, core.Mamba) {
			pc.HostStates = 12
		}
	}
	c, ps := newCanaryController(t, dev, pc, cfg)
	workload(t, c, seed, steps)
	st := c.Stats()
	require.Zero(t, st.CanaryMismatches)
	require.NotZero(t, st.CanaryChecked)
	require.NotZero(t, st.MatchedTokens+st.HostHitTokens, "%+v", st)
	if host {
		require.NotZero(t, st.Backups)
	}
	t.Logf("controller %+v", st)
	t.Logf("transfers %+v", ps.Stats())
	require.NoError(t, c.Close())
}

func has(cfg core.Config, comp core.Component) bool {
	for _, c := range cfg.Components {
		if c == comp {
			return true
		}
	}
	return false
}

// workload runs steps random request lifecycles over a few shared
// prefixes, two requests in flight at a time, auditing after each step.
func workload(t *testing.T, c *native.Controller, seed uint64, steps int) {
	rng := rand.New(rand.NewPCG(seed, 99))
	prefixes := make([][]uint32, 5)
	for i := range prefixes {
		p := make([]uint32, 4+2*rng.IntN(8))
		for k := range p {
			p[k] = uint32(1 + rng.IntN(50))
		}
		prefixes[i] = p
	}
	var running []*native.Request
	finish := func(r *native.Request) {
		if rng.IntN(8) == 0 {
			require.NoError(t, c.Abort(r))
		} else {
			require.NoError(t, c.Finish(r))
		}
	}
	for step := 0; step < steps; step++ {
		tokens := append([]uint32(nil), prefixes[rng.IntN(len(prefixes))]...)
		for k := rng.IntN(10); k > 0; k-- {
			tokens = append(tokens, uint32(1+rng.IntN(50)))
		}
		ns := core.Namespace{}
		if rng.IntN(4) == 0 {
			ns.CacheSalt = "tenant-b"
		}
		r, err := c.Arrive(ns, tokens)
		require.NoError(t, err, "step %d", step)
		if err := c.Prefill(r, r.Pending()); err != nil {
			require.ErrorIs(t, err, native.ErrPoolExhausted, "step %d", step)
			require.NoError(t, c.Abort(r))
		} else {
			require.NoError(t, c.Verify(r))
			running = append(running, r)
		}
		if len(running) > 2 {
			finish(running[0])
			running = running[1:]
		}
		require.NoError(t, c.Audit(), "step %d", step)
	}
	for _, r := range running {
		finish(r)
	}
	require.NoError(t, c.Audit())
}

func TestMain(m *testing.M) {
	code := m.Run()
	if n := FakePending(); n != 0 {
		fmt.Fprintf(os.Stderr, "fake driver: %d operations still queued\n", n)
		code = 1
	}
	os.Exit(code)
}

// TestPools_ValidateMatchesNative: Start's linear-time batch check accepts
// and refuses exactly the batches native.Batch.Validate does (slots in
// range), and leaves its bitmaps clear.
func TestPools_ValidateMatchesNative(t *testing.T) {
	dev := fakeDevice(t, FakeConfig{})
	ps, err := NewPools(dev, PoolsConfig{Geometry: tinyGeom, Tokens: 16, SWATokens: 16, HostTokens: 16, HostSWATokens: 16})
	require.NoError(t, err)
	defer ps.Close()
	rng := rand.New(rand.NewPCG(5, 5))
	refused := 0
	for i := 0; i < 2000; i++ {
		var b native.Batch
		for seg := 0; seg < 1+rng.IntN(3); seg++ {
			n := 1 + rng.IntN(4)
			src, dst := make([]int32, n), make([]int32, n)
			for k := range src {
				src[k], dst[k] = int32(rng.IntN(16)), int32(rng.IntN(16))
			}
			b.Add(core.Component(rng.IntN(2)), native.Tier(rng.IntN(2)), native.Tier(rng.IntN(2)), src, dst)
		}
		want := b.Validate()
		ps.startMu.Lock()
		got := ps.validate(&b)
		ps.startMu.Unlock()
		require.Equal(t, want == nil, got == nil, "native: %v, cuda: %v, batch %+v", want, got, b)
		if got != nil {
			refused++
			require.ErrorIs(t, got, native.ErrInvalidArgument)
		}
		for c := range ps.marks {
			for tr := range ps.marks[c] {
				for _, w := range ps.marks[c][tr] {
					require.Zero(t, w)
				}
			}
		}
	}
	require.NotZero(t, refused)
	var b native.Batch
	b.Add(core.Full, native.Device, native.Host, []int32{0}, []int32{16})
	_, err = ps.Start(&b)
	require.ErrorIs(t, err, native.ErrSlotRange)
}

// TestPools_CopyAuto: CopyAuto times both ways on the fresh pools, picks
// one, and leaves the pools untouched (no slot taken, no traffic counted).
func TestPools_CopyAuto(t *testing.T) {
	dev := fakeDevice(t, FakeConfig{})
	ps, err := NewPools(dev, PoolsConfig{Geometry: tinyGeom, Tokens: 64, HostTokens: 32, Mode: CopyAuto})
	require.NoError(t, err)
	c := ps.Calibration()
	require.Empty(t, c.Reason)
	require.Equal(t, 8, c.Pages)
	require.Positive(t, c.Memcpy)
	require.Positive(t, c.Kernel)
	require.Equal(t, c.Chosen, ps.Mode())
	require.NotEqual(t, CopyAuto, ps.Mode())
	require.Equal(t, TransferStats{}, ps.Stats())
	require.Equal(t, 64, ps.Pool(core.Full, native.Device).Available())
	require.NoError(t, ps.Close())

	ps, err = NewPools(dev, PoolsConfig{Geometry: tinyGeom, Tokens: 64, Mode: CopyAuto})
	require.NoError(t, err)
	require.Contains(t, ps.Calibration().Reason, "no pinned host pool")
	require.Equal(t, CopyMemcpy, ps.Mode())
	require.NoError(t, ps.Close())
}

// TestController_FaultyDriver: the controller's workload on CUDA pools
// whose driver fails every n-th copy, when issued or while it runs (the
// copies of backups, load-backs and forks, and the staging copies of the
// canary). Every failure surfaces as an error of the call or a rolled-back
// transfer; the accounting audits clean every 10 steps and at the end, and
// the canary never reports a mismatch.
func TestController_FaultyDriver(t *testing.T) {
	for _, set := range controllerSets {
		for _, wp := range []core.WritePolicy{core.WriteThrough, core.WriteBack} {
			t.Run(set.name+"/"+wp.String(), func(t *testing.T) {
				dev := fakeDevice(t, FakeConfig{QueryDelay: 1})
				faulty := FakeConfig{QueryDelay: 1, FailIssueEvery: 53, FailRunEvery: 37}
				ConfigureFake(faulty)
				cfg := set.cfg
				cfg.HostTier, cfg.WritePolicy = true, wp
				g := tinyGeom
				g.PageSize = cfg.PageSize
				pc := PoolsConfig{Geometry: g, Tokens: 64, HostTokens: 96}
				if has(cfg, core.SWA) {
					pc.SWATokens, pc.HostSWATokens = 64, 64
				}
				if has(cfg, core.Mamba) {
					pc.States, pc.HostStates = 10, 12
				}
				c, ps := newCanaryController(t, dev, pc, cfg)
				// Audit reads slots (the canary) too: run it on a healthy driver,
				// every 10 steps (reconfiguring restarts the fault counts).
				audit := func(step int) {
					if step%10 != 9 {
						return
					}
					ConfigureFake(FakeConfig{QueryDelay: 1})
					require.NoError(t, c.Audit(), "step %d", step)
					ConfigureFake(faulty)
				}
				failed := faultyWorkload(t, c, 7, 300, audit)
				st := c.Stats()
				require.Zero(t, st.CanaryMismatches)
				require.NotZero(t, failed+int(ps.Stats().Failed), "no fault reached the controller")
				t.Logf("%d calls failed; transfers %+v", failed, ps.Stats())
				ConfigureFake(FakeConfig{QueryDelay: 1})
				require.NoError(t, c.Audit())
			})
		}
	}
}

// faultyWorkload is workload tolerating driver failures: a call that fails
// must fail with a driver error, and the request is aborted.
func faultyWorkload(t *testing.T, c *native.Controller, seed uint64, steps int, audit func(step int)) (failed int) {
	rng := rand.New(rand.NewPCG(seed, 3))
	prefixes := make([][]uint32, 5)
	for i := range prefixes {
		p := make([]uint32, 4+2*rng.IntN(8))
		for k := range p {
			p[k] = uint32(1 + rng.IntN(50))
		}
		prefixes[i] = p
	}
	driverErr := func(err error) bool {
		var e *Error
		return errors.As(err, &e) || errors.Is(err, native.ErrTransfer)
	}
	for step := 0; step < steps; step++ {
		tokens := append([]uint32(nil), prefixes[rng.IntN(len(prefixes))]...)
		for k := rng.IntN(10); k > 0; k-- {
			tokens = append(tokens, uint32(1+rng.IntN(50)))
		}
		r, err := c.Arrive(core.Namespace{}, tokens)
		if err != nil {
			require.True(t, driverErr(err), "step %d: %v", step, err)
			require.NotErrorIs(t, err, native.ErrCanaryMismatch)
			failed++
			audit(step)
			continue
		}
		err = c.Prefill(r, r.Pending())
		if err == nil {
			err = c.Finish(r)
		}
		if err != nil {
			require.True(t, driverErr(err) || errors.Is(err, native.ErrPoolExhausted), "step %d: %v", step, err)
			require.NotErrorIs(t, err, native.ErrCanaryMismatch)
			failed++
			if !r.Done() {
				if err := c.Abort(r); err != nil {
					require.True(t, driverErr(err), "step %d abort: %v", step, err)
				}
			}
		}
		audit(step)
	}
	return failed
}

// TestController_SameAsMemPools: with completions that are ready at the
// first poll (QueryDelay 0), the controller on CUDA pools makes exactly the
// decisions it makes on native's synchronous memory pools: the same
// counters for the same workload (but the bytes moved, which count slot
// sizes).
func TestController_SameAsMemPools(t *testing.T) {
	for _, set := range controllerSets {
		for _, wp := range []core.WritePolicy{core.WriteThrough, core.WriteBack} {
			t.Run(set.name+"/"+wp.String(), func(t *testing.T) {
				cfg := set.cfg
				cfg.HostTier, cfg.WritePolicy = true, wp
				sizes := map[[2]int]int{{0, 0}: 64, {0, 1}: 96}
				if has(cfg, core.SWA) {
					sizes[[2]int{1, 0}], sizes[[2]int{1, 1}] = 64, 64
				}
				if has(cfg, core.Mamba) {
					sizes[[2]int{2, 0}], sizes[[2]int{2, 1}] = 10, 12
				}
				run := func(pools native.Pools) native.Stats {
					eng, err := native.NewDirectEngine(cfg)
					require.NoError(t, err)
					c, err := native.NewController(eng, pools, native.ControllerConfig{Canary: true, VerifyMatches: true})
					require.NoError(t, err)
					workload(t, c, 21, 300)
					require.NoError(t, c.Close())
					st := c.Stats()
					st.BytesMoved = 0
					return st
				}
				mem := &native.PoolSet{}
				for k, n := range sizes {
					page := 1
					if k[0] != int(core.Mamba) {
						page = cfg.PageSize
					}
					p, err := native.NewPagedMemPool(n, CanaryBytes, page)
					require.NoError(t, err)
					require.NoError(t, mem.Set(core.Component(k[0]), native.Tier(k[1]), p))
				}
				want := run(mem)

				dev := fakeDevice(t, FakeConfig{})
				g := tinyGeom
				g.PageSize = cfg.PageSize
				ps, err := NewPools(dev, PoolsConfig{Geometry: g, Tokens: sizes[[2]int{0, 0}], HostTokens: sizes[[2]int{0, 1}],
					SWATokens: sizes[[2]int{1, 0}], HostSWATokens: sizes[[2]int{1, 1}], States: sizes[[2]int{2, 0}], HostStates: sizes[[2]int{2, 1}]})
				require.NoError(t, err)
				t.Cleanup(func() { require.NoError(t, ps.Close()) })
				require.Equal(t, want, run(ps))
				require.NotZero(t, ps.Stats().Batches)
			})
		}
	}
}

// TestPools_KernelChunks: a segment of more scattered whole pages than one
// launch's grid takes is split over launches.
func TestPools_KernelChunks(t *testing.T) {
	dev := fakeDevice(t, FakeConfig{})
	g := Geometry{Layers: 1, KVHeads: 1, HeadDim: 4, DTypeBytes: 2, PageSize: 1} // 16-byte pages
	const n = maxKernelPages + 100
	ps, err := NewPools(dev, PoolsConfig{Geometry: g, Tokens: 2 * n, HostTokens: n, Mode: CopyKernel})
	require.NoError(t, err)
	defer ps.Close()
	d, _ := ps.Pool(core.Full, native.Device).Alloc(nil, 2*n)
	h, _ := ps.Pool(core.Full, native.Host).Alloc(nil, n)
	src := make([]int32, n)
	checked := []int{0, maxKernelPages - 1, maxKernelPages, n - 1}
	for i := range src {
		src[i] = d[2*i]
	}
	for _, i := range checked {
		require.NoError(t, ps.Pool(core.Full, native.Device).Write(src[i], []byte(fmt.Sprintf("%016d", i))))
	}
	var b native.Batch
	b.Add(core.Full, native.Device, native.Host, src, h)
	c, err := ps.Start(&b)
	require.NoError(t, err)
	require.NoError(t, c.Wait())
	require.Equal(t, uint64(2), ps.Stats().Kernels)
	got := make([]byte, 16)
	for _, i := range checked {
		require.NoError(t, ps.Pool(core.Full, native.Host).Read(h[i], got))
		require.Equal(t, fmt.Sprintf("%016d", i), string(got))
	}
}

// newCanaryController is a controller on a direct engine over the CUDA
// pools it returns, built from pc, with the canary writing and verifying every slot; the
// pools and the controller close when the test ends.
func newCanaryController(t *testing.T, dev *Device, pc PoolsConfig, cfg core.Config) (*native.Controller, *Pools) {
	t.Helper()
	ps, err := NewPools(dev, pc)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, ps.Close()) })
	eng, err := native.NewDirectEngine(cfg)
	require.NoError(t, err)
	c, err := native.NewController(eng, ps, native.ControllerConfig{Canary: true, VerifyMatches: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c, ps
}

// TestController_ReplaceEngineOnCUDAPools: after a guest trap, a
// controller over CUDA pools replaces its engine (the pools list their
// slots), every slot of every pool goes back, the request that was
// running fails with ErrEngineReplaced, and the cache fills and hits
// again, on each component set, with and without the host tier.
func TestController_ReplaceEngineOnCUDAPools(t *testing.T) {
	for _, set := range controllerSets {
		for _, host := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/host=%v", set.name, host), func(t *testing.T) {
				cfg := set.cfg
				g := tinyGeom
				g.PageSize = cfg.PageSize
				pc := PoolsConfig{Geometry: g, Tokens: 64}
				if has(cfg, core.SWA) {
					pc.SWATokens = 64
				}
				if has(cfg, core.Mamba) {
					pc.States = 10
				}
				if host {
					cfg.HostTier, cfg.WritePolicy = true, core.WriteThrough
					pc.HostTokens = 96
					if has(cfg, core.SWA) {
						pc.HostSWATokens = 64
					}
					if has(cfg, core.Mamba) {
						pc.HostStates = 12
					}
				}
				c, ps := newCanaryController(t, fakeDevice(t, FakeConfig{QueryDelay: 1}), pc, cfg)
				workload(t, c, 11, 40)
				held, err := c.Arrive(core.Namespace{}, []uint32{1, 2, 3, 4, 5, 6})
				require.NoError(t, err)
				require.NoError(t, c.Prefill(held, held.Pending()))

				require.NoError(t, native.InjectTrap(c.Engine(), 0))
				_, err = c.Arrive(core.Namespace{}, []uint32{9, 8, 7, 6})
				require.ErrorIs(t, err, native.ErrEngineFailed)

				fresh, err := native.NewDirectEngine(c.Engine().Config())
				require.NoError(t, err)
				require.NoError(t, c.ReplaceEngine(fresh))
				require.NoError(t, c.Audit())
				for comp := range 3 {
					if d := ps.dpool[comp]; d != nil {
						require.Equal(t, d.Capacity(), d.Available(), "%s device pool", core.Component(comp))
					}
					if h := ps.hpool[comp]; h != nil {
						require.Equal(t, h.Capacity(), h.Available(), "%s host pool", core.Component(comp))
					}
				}
				require.ErrorIs(t, c.Prefill(held, 1), native.ErrEngineReplaced)
				workload(t, c, 12, 40)
				require.Zero(t, c.Stats().CanaryMismatches)
				require.NotZero(t, c.Stats().MatchedTokens+c.Stats().HostHitTokens)
			})
		}
	}
}
