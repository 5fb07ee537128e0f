//go:build cgo && linux

package cuda

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/host/native"
)

// Pools is the native.Pools of one GPU: device pools, pinned host pools,
// and the native.Transport that moves a batch of slots between them on
// the device's non-blocking streams, device to host, host to device and
// device to device each on its own stream, with completion by events.
// It is safe for concurrent use (the controller serialises pool calls;
// completions may be polled from any goroutine).
type Pools struct {
	dev   *Device
	geom  Geometry
	mode  CopyMode
	set   native.PoolSet
	dpool [3]*DevicePool
	hpool [3]*HostPool

	startMu sync.Mutex     // serialises Start
	marks   [3][2][]uint64 // validate's bitmaps, zero between calls

	mu     sync.Mutex // guards events, idx and stats
	events []*Event
	idx    []*HostMem
	stats  TransferStats
	timing bool
	closed bool
	calib  Calibration
}

// Mode is the copy mode in use (CopyAuto's choice once built).
func (ps *Pools) Mode() CopyMode { return ps.mode }

// Calibration returns what CopyAuto measured (zero for other modes).
func (ps *Pools) Calibration() Calibration { return ps.calib }

// calibrate times scattered whole pages device to host and back, per-page
// copies against the kernel, on the fresh pools (no slot is handed out
// yet, so their bytes are nobody's), and picks the faster.
func (ps *Pools) calibrate() Calibration {
	c := Calibration{Chosen: CopyMemcpy}
	dp, hp := ps.dpool[core.Full], ps.hpool[core.Full]
	if hp == nil {
		c.Reason = "no pinned host pool to copy to"
		return c
	}
	l := dp.lay
	if l.pageBytes()%16 != 0 {
		c.Reason = fmt.Sprintf("pages of %d bytes are not a multiple of 16", l.pageBytes())
		return c
	}
	c.Pages = min(dp.Capacity()/l.pageTokens/2, hp.Capacity()/l.pageTokens, 64)
	if c.Pages < 4 {
		c.Reason = fmt.Sprintf("%d pages are too few to measure", c.Pages)
		c.Pages = 0
		return c
	}
	if _, err := ps.dev.loadKernel(); err != nil {
		c.Reason = err.Error()
		c.Pages = 0
		return c
	}
	// Every other device page, to consecutive host pages: nothing coalesces.
	var src, dst []int32
	for p := 0; p < c.Pages; p++ {
		for k := 0; k < l.pageTokens; k++ {
			src = append(src, int32(2*p*l.pageTokens+k))
			dst = append(dst, int32(p*l.pageTokens+k))
		}
	}
	d := end{sl: &dp.slots, base: dp.mem.ptr, dptr: dp.mem.ptr}
	h := end{sl: &hp.slots, base: hp.mem.addr(), dptr: hp.mem.dptr, host: true}
	saved := ps.stats
	measure := func(mode CopyMode) time.Duration {
		best := time.Duration(-1)
		for rep := 0; rep < 4; rep++ {
			t0 := time.Now()
			var pl plan
			pl.runs(kindDtoH, d, h, src, dst, mode)
			pl.runs(kindHtoD, h, d, dst, src, mode)
			comp, err := ps.issue(&pl)
			if err == nil {
				err = comp.Wait()
			}
			if err != nil {
				return -1
			}
			if dt := time.Since(t0); rep > 0 && (best < 0 || dt < best) { // the first run warms up
				best = dt
			}
		}
		return best
	}
	c.Memcpy, c.Kernel = measure(CopyMemcpy), measure(CopyKernel)
	ps.mu.Lock()
	ps.stats = saved
	ps.mu.Unlock()
	switch {
	case c.Memcpy < 0 || c.Kernel < 0:
		c.Reason = "a calibration copy failed"
	case c.Kernel < c.Memcpy:
		c.Chosen = CopyKernel
	}
	return c
}

// NewPools allocates the pools cfg asks for on dev. On error nothing stays
// allocated.
func NewPools(dev *Device, cfg PoolsConfig) (*Pools, error) {
	if err := cfg.Geometry.Validate(); err != nil {
		return nil, err
	}
	if cfg.Tokens <= 0 {
		return nil, fmt.Errorf("%w: a device KV pool of %d tokens", ErrGeometry, cfg.Tokens)
	}
	g := cfg.Geometry
	ps := &Pools{dev: dev, geom: g, mode: cfg.Mode, timing: cfg.Timing}
	fail := func(err error) (*Pools, error) {
		ps.Close()
		return nil, err
	}
	var err error
	if ps.dpool[core.Full], err = NewKVPool(dev, g, cfg.Tokens); err != nil {
		return fail(err)
	}
	if cfg.SWATokens > 0 {
		if ps.dpool[core.SWA], err = NewSWAPool(dev, g, cfg.SWATokens); err != nil {
			return fail(err)
		}
	}
	if cfg.States > 0 {
		if ps.dpool[core.Mamba], err = NewStatePool(dev, g.StateBytes, cfg.States); err != nil {
			return fail(err)
		}
	}
	if cfg.HostTokens > 0 {
		if ps.hpool[core.Full], err = NewHostKVPool(dev, g, cfg.HostTokens); err != nil {
			return fail(err)
		}
	}
	if cfg.HostSWATokens > 0 {
		if ps.hpool[core.SWA], err = NewHostSWAPool(dev, g, cfg.HostSWATokens); err != nil {
			return fail(err)
		}
	}
	if cfg.HostStates > 0 {
		if ps.hpool[core.Mamba], err = NewHostStatePool(dev, g.StateBytes, cfg.HostStates); err != nil {
			return fail(err)
		}
	}
	if cfg.Mode == CopyAuto {
		ps.calib = ps.calibrate()
		ps.mode = ps.calib.Chosen
	}
	for c := range ps.dpool {
		if ps.dpool[c] != nil {
			ps.set.Set(core.Component(c), native.Device, ps.dpool[c])
		}
		if ps.hpool[c] != nil {
			ps.set.Set(core.Component(c), native.Host, ps.hpool[c])
		}
	}
	return ps, nil
}

// Pool returns the pool of component c on tier t, or nil.
func (ps *Pools) Pool(c core.Component, t native.Tier) native.Pool { return ps.set.Pool(c, t) }

// DevicePool returns the device pool of c, or nil.
func (ps *Pools) DevicePool(c core.Component) *DevicePool {
	if int(c) >= len(ps.dpool) {
		return nil
	}
	return ps.dpool[c]
}

// HostPool returns the pinned host pool of c, or nil.
func (ps *Pools) HostPool(c core.Component) *HostPool {
	if int(c) >= len(ps.hpool) {
		return nil
	}
	return ps.hpool[c]
}

// Geometry is the KV geometry the pools were laid out for.
func (ps *Pools) Geometry() Geometry { return ps.geom }

// Stats returns the transfer counters.
func (ps *Pools) Stats() TransferStats {
	ps.mu.Lock()
	st := ps.stats
	ps.mu.Unlock()
	for _, p := range ps.dpool {
		if p != nil {
			b, c, d := p.SyncStats()
			st.SyncBytes += b
			st.SyncCalls += c
			st.SyncTime += d
		}
	}
	return st
}

// Close waits for the device's streams, then frees every pool and cached
// event and index buffer (not the Device). Closing twice is not an error.
func (ps *Pools) Close() error {
	ps.mu.Lock()
	if ps.closed {
		ps.mu.Unlock()
		return nil
	}
	ps.closed = true
	evs, idx := ps.events, ps.idx
	ps.events, ps.idx = nil, nil
	ps.mu.Unlock()
	var first error
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	for _, s := range []*Stream{ps.dev.d2h, ps.dev.h2d, ps.dev.d2d} {
		if s != nil && s.s != nil {
			keep(s.Synchronize())
		}
	}
	for _, e := range evs {
		keep(e.Destroy())
	}
	for _, m := range idx {
		keep(m.Free())
	}
	for c := range ps.dpool {
		if ps.dpool[c] != nil {
			keep(ps.dpool[c].Close())
		}
		if ps.hpool[c] != nil {
			keep(ps.hpool[c].Close())
		}
	}
	return first
}

// end is one side of a segment: a pool's base address in the copy's
// address space and the pool.
type end struct {
	sl   *slots
	base uint64 // device pointer, or host address for memcpy, or the host's device mapping for kernels
	dptr uint64 // device-visible address (kernels)
	host bool
}

func (ps *Pools) endOf(c core.Component, t native.Tier) (end, error) {
	if int(c) < len(ps.dpool) {
		if t == native.Device && ps.dpool[c] != nil {
			p := ps.dpool[c]
			return end{sl: &p.slots, base: p.mem.ptr, dptr: p.mem.ptr}, nil
		}
		if t == native.Host && ps.hpool[c] != nil {
			p := ps.hpool[c]
			return end{sl: &p.slots, base: p.mem.addr(), dptr: p.mem.dptr, host: true}, nil
		}
	}
	return end{}, fmt.Errorf("%w: no %s pool on %s", native.ErrNoPool, c, t)
}

// plan is the driver work of one batch, per stream.
type plan struct {
	ops     [3]copyBatch // by kind: HtoD, DtoH, DtoD
	bytes   [3]uint64
	pages   [3][]uint32 // kernel page pairs by kind: dst0, src0, dst1, src1 ...
	kdst    [3]uint64
	ksrc    [3]uint64
	kbytes  [3]int
	hostCpy int // host-to-host slots copied at once
}

// runs splits one segment into copies, coalescing slots that are
// contiguous on both sides: whole pages at the same in-page phase become
// one plain copy, the rest one 2D copy per piece that stays inside a page
// on both sides.
func (pl *plan) runs(kind int, src, dst end, s []int32, d []int32, mode CopyMode) {
	l := src.sl.lay
	pt, pb := l.pageTokens, l.pageBytes()
	var kpages []uint32
	one := func(so, do int32, k int) {
		if l.rows == 1 || k == pt {
			n := k * l.rowBytes * l.rows
			if k != pt {
				n = k * l.rowBytes
			}
			pl.ops[kind] = append(pl.ops[kind], copyOp(kind, dst.base+uint64(l.rowOff(do, 0)), src.base+uint64(l.rowOff(so, 0)), n, 1, n, n))
		} else {
			pl.ops[kind] = append(pl.ops[kind], copyOp(kind, dst.base+uint64(l.rowOff(do, 0)), src.base+uint64(l.rowOff(so, 0)),
				k*l.rowBytes, l.rows, l.pitch(), l.pitch()))
		}
		pl.bytes[kind] += uint64(k * l.slotBytes())
	}
	for i := 0; i < len(s); {
		a, b := s[i], d[i]
		k := 1
		for i+k < len(s) && s[i+k] == a+int32(k) && d[i+k] == b+int32(k) {
			k++
		}
		if k == 1 {
			// A run descending on both sides (what a LIFO free list hands
			// back after frees) is the same copy as the ascending run from
			// its last pair.
			for i+k < len(s) && s[i+k] == a-int32(k) && d[i+k] == b-int32(k) {
				k++
			}
			a, b = s[i+k-1], d[i+k-1]
		}
		i += k
		ao, bo := int(a)%pt, int(b)%pt
		if ao == bo {
			h := min((pt-ao)%pt, k)
			if h > 0 {
				one(a, b, h)
			}
			a, b, k = a+int32(h), b+int32(h), k-h
			if w := k / pt; w > 0 {
				if w == 1 && mode == CopyKernel && pb%16 == 0 {
					kpages = append(kpages, uint32(int(b)/pt), uint32(int(a)/pt))
				} else {
					n := w * pb
					pl.ops[kind] = append(pl.ops[kind], copyOp(kind, dst.base+uint64(l.rowOff(b, 0)), src.base+uint64(l.rowOff(a, 0)), n, 1, n, n))
				}
				pl.bytes[kind] += uint64(w * pt * l.slotBytes())
				a, b, k = a+int32(w*pt), b+int32(w*pt), k-w*pt
			}
			if k > 0 {
				one(a, b, k)
			}
			continue
		}
		for k > 0 {
			n := min(k, pt-int(a)%pt, pt-int(b)%pt)
			one(a, b, n)
			a, b, k = a+int32(n), b+int32(n), k-n
		}
	}
	if len(kpages) > 0 {
		if len(kpages) == 2 || (pl.pages[kind] != nil && (pl.kdst[kind] != dst.dptr || pl.ksrc[kind] != src.dptr)) {
			// One page, or a second pool pair in the same direction: a plain copy.
			for j := 0; j < len(kpages); j += 2 {
				dp, sp := int32(kpages[j])*int32(pt), int32(kpages[j+1])*int32(pt)
				pl.ops[kind] = append(pl.ops[kind], copyOp(kind, dst.base+uint64(l.rowOff(dp, 0)), src.base+uint64(l.rowOff(sp, 0)), pb, 1, pb, pb))
			}
			return
		}
		pl.pages[kind] = append(pl.pages[kind], kpages...)
		pl.kdst[kind], pl.ksrc[kind], pl.kbytes[kind] = dst.dptr, src.dptr, pb
	}
}

// Start implements native.Transport: it checks the batch (shape, pools,
// every slot allocated, layouts equal), issues its copies on the
// direction's streams in one cgo call per stream, records an event on each
// stream used and returns a Completion that polls them. A batch the driver
// refuses part way is synchronised before Start returns its error, so
// nothing it issued is still running (its destination slots may hold any
// bytes). Errors wrap native.ErrTransfer (and the driver's *Error).
func (ps *Pools) Start(b *native.Batch) (native.Completion, error) {
	ps.startMu.Lock()
	defer ps.startMu.Unlock()
	ps.mu.Lock()
	closed := ps.closed
	ps.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("%w: CUDA pools", errClosed)
	}
	if err := ps.validate(b); err != nil {
		return nil, err
	}
	var pl plan
	for k := range b.Segments {
		sg := &b.Segments[k]
		src, _ := ps.endOf(sg.Component, sg.From)
		dst, _ := ps.endOf(sg.Component, sg.To)
		if src.sl.lay != dst.sl.lay {
			return nil, fmt.Errorf("%w: %w: %s (%+v) and %s (%+v)", native.ErrTransfer, ErrLayout, src.sl.name, src.sl.lay, dst.sl.name, dst.sl.lay)
		}
		for i := range sg.Src {
			if err := src.sl.check(sg.Src[i]); err != nil {
				return nil, fmt.Errorf("%w: segment %d source: %w", native.ErrTransfer, k, err)
			}
			if err := dst.sl.check(sg.Dst[i]); err != nil {
				return nil, fmt.Errorf("%w: segment %d destination: %w", native.ErrTransfer, k, err)
			}
		}
		if src.host && dst.host {
			pl.hostCpy += len(sg.Src)
			continue
		}
		kind := kindDtoD
		switch {
		case src.host:
			kind = kindHtoD
		case dst.host:
			kind = kindDtoH
		}
		pl.runs(kind, src, dst, sg.Src, sg.Dst, ps.mode)
	}
	// Host-to-host segments (no tier pair needs them today) copy now.
	if pl.hostCpy > 0 {
		for k := range b.Segments {
			sg := &b.Segments[k]
			if sg.From == native.Host && sg.To == native.Host {
				hp := ps.hpool[sg.Component]
				for i := range sg.Src {
					if err := hp.Copy(sg.Dst[i], sg.Src[i]); err != nil {
						return nil, fmt.Errorf("%w: %w", native.ErrTransfer, err)
					}
				}
			}
		}
	}
	return ps.issue(&pl)
}

// validate checks what native.Batch.Validate checks (known components and
// tiers, equal lengths, no negative slot, no slot written twice or both
// read and written within a pool) in time linear in the batch, with a
// bitmap per pool, and that every segment's pools exist. Call with
// startMu held.
func (ps *Pools) validate(b *native.Batch) error {
	for k := range b.Segments {
		sg := &b.Segments[k]
		if int(sg.Component) >= 3 || sg.From > native.Host || sg.To > native.Host {
			return fmt.Errorf("%w: segment %d: component %s from %s to %s", native.ErrInvalidArgument, k, sg.Component, sg.From, sg.To)
		}
		if len(sg.Src) != len(sg.Dst) {
			return fmt.Errorf("%w: segment %d: %d sources for %d destinations", native.ErrInvalidArgument, k, len(sg.Src), len(sg.Dst))
		}
		for _, t := range [2]native.Tier{sg.From, sg.To} {
			if _, err := ps.endOf(sg.Component, t); err != nil {
				return fmt.Errorf("%w: segment %d: %w", native.ErrTransfer, k, err)
			}
		}
	}
	// Bits: 2*slot is "read", 2*slot+1 "written", per (component, tier).
	marks := func(c core.Component, t native.Tier) []uint64 {
		m := &ps.marks[c][t]
		n := (2*ps.Pool(c, t).Capacity() + 63) / 64
		if len(*m) < n {
			*m = make([]uint64, n)
		}
		return *m
	}
	set := func(m []uint64, bit int) { m[bit>>6] |= 1 << (uint(bit) & 63) }
	get := func(m []uint64, bit int) bool { return m[bit>>6]&(1<<(uint(bit)&63)) != 0 }
	var err error
	fail := func(e error) {
		if err == nil {
			err = e
		}
	}
	capOf := func(c core.Component, t native.Tier) int { return ps.Pool(c, t).Capacity() }
	for k := range b.Segments {
		sg := &b.Segments[k]
		m, n := marks(sg.Component, sg.From), capOf(sg.Component, sg.From)
		for _, s := range sg.Src {
			if s < 0 || int(s) >= n {
				fail(fmt.Errorf("%w: segment %d: source slot %d outside the %s %s pool of %d: %w", native.ErrTransfer, k, s, sg.Component, sg.From, n, native.ErrSlotRange))
				continue
			}
			set(m, 2*int(s))
		}
	}
	for k := range b.Segments {
		sg := &b.Segments[k]
		m, n := marks(sg.Component, sg.To), capOf(sg.Component, sg.To)
		for _, s := range sg.Dst {
			switch {
			case s < 0 || int(s) >= n:
				fail(fmt.Errorf("%w: segment %d: destination slot %d outside the %s %s pool of %d: %w", native.ErrTransfer, k, s, sg.Component, sg.To, n, native.ErrSlotRange))
				continue
			case get(m, 2*int(s)+1):
				fail(fmt.Errorf("%w: %s %s slot %d is written twice", native.ErrInvalidArgument, sg.Component, sg.To, s))
			case get(m, 2*int(s)):
				fail(fmt.Errorf("%w: %s %s slot %d is both read and written", native.ErrInvalidArgument, sg.Component, sg.To, s))
			}
			set(m, 2*int(s)+1)
		}
	}
	// Clear what was marked, so the bitmaps are zero for the next batch.
	for k := range b.Segments {
		sg := &b.Segments[k]
		for _, side := range [2]struct {
			t native.Tier
			s []int32
		}{{sg.From, sg.Src}, {sg.To, sg.Dst}} {
			m, n := marks(sg.Component, side.t), capOf(sg.Component, side.t)
			for _, s := range side.s {
				if s >= 0 && int(s) < n {
					m[s>>5] = 0
				}
			}
		}
	}
	return err
}

func (ps *Pools) streamOf(kind int) *Stream {
	switch kind {
	case kindHtoD:
		return ps.dev.h2d
	case kindDtoH:
		return ps.dev.d2h
	}
	return ps.dev.d2d
}

// issue hands pl to the driver and returns its completion.
func (ps *Pools) issue(pl *plan) (native.Completion, error) {
	c := &completion{ps: ps, started: time.Now()}
	var used []*Stream
	fail := func(err error) (native.Completion, error) {
		for _, s := range used {
			s.Synchronize() // nothing of a refused batch keeps running
		}
		c.release()
		ps.mu.Lock()
		ps.stats.Batches++
		ps.stats.Failed++
		ps.mu.Unlock()
		return nil, fmt.Errorf("%w: %w", native.ErrTransfer, err)
	}
	var copies, kernels uint64
	for kind := 0; kind < 3; kind++ {
		if len(pl.ops[kind]) == 0 && len(pl.pages[kind]) == 0 {
			continue
		}
		s := ps.streamOf(kind)
		used = append(used, s)
		var start *Event
		if ps.timing {
			var err error
			if start, err = ps.event(); err != nil {
				return fail(err)
			}
			c.events = append(c.events, start)
			if err := start.Record(s); err != nil {
				return fail(err)
			}
		}
		if err := s.issue(pl.ops[kind]); err != nil {
			return fail(err)
		}
		copies += uint64(len(pl.ops[kind]))
		if n := len(pl.pages[kind]) / 2; n > 0 {
			m, err := ps.indexBuf(n)
			if err != nil {
				return fail(err)
			}
			c.idx = append(c.idx, m)
			list := m.Bytes()
			for i := 0; i < n; i++ {
				putU32(list[4*i:], pl.pages[kind][2*i])
				putU32(list[4*(n+i):], pl.pages[kind][2*i+1])
			}
			// One launch takes up to 65535 pages (one grid row each).
			for lo := 0; lo < n; lo += maxKernelPages {
				k := min(n-lo, maxKernelPages)
				if err := ps.dev.launchCopyPages(s, pl.kdst[kind], pl.ksrc[kind], m.dptr+uint64(4*lo), m.dptr+uint64(4*(n+lo)), pl.kbytes[kind], k); err != nil {
					return fail(err)
				}
				kernels++
			}
		}
		ev, err := ps.event()
		if err != nil {
			return fail(err)
		}
		c.events = append(c.events, ev)
		if err := ev.Record(s); err != nil {
			return fail(err)
		}
		c.ends = append(c.ends, ev)
		c.starts = append(c.starts, start)
	}
	c.bytes = pl.bytes
	ps.mu.Lock()
	ps.stats.Batches++
	ps.stats.Copies += copies
	ps.stats.Kernels += kernels
	ps.stats.InFlight++
	ps.mu.Unlock()
	c.inflight = true
	if len(c.ends) == 0 {
		c.finish(nil)
	}
	return c, nil
}

// maxKernelPages is the most pages one kernel launch copies (grid rows).
const maxKernelPages = 65535

func putU32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}

// event takes an event from the free list or creates one (with timing
// when the set records it: every event of the list is made alike).
func (ps *Pools) event() (*Event, error) {
	ps.mu.Lock()
	if len(ps.events) > 0 {
		e := ps.events[len(ps.events)-1]
		ps.events = ps.events[:len(ps.events)-1]
		ps.mu.Unlock()
		return e, nil
	}
	ps.mu.Unlock()
	return ps.dev.NewEvent(ps.timing)
}

// indexBuf takes a pinned page-list buffer of at least n page pairs.
func (ps *Pools) indexBuf(n int) (*HostMem, error) {
	ps.mu.Lock()
	for i, m := range ps.idx {
		if m.size >= 8*n {
			ps.idx = append(ps.idx[:i], ps.idx[i+1:]...)
			ps.mu.Unlock()
			return m, nil
		}
	}
	ps.mu.Unlock()
	return ps.dev.AllocHost(max(8*n, 4096), "kernel page list")
}

// completion is a started batch: the events recorded after its copies.
type completion struct {
	ps       *Pools
	started  time.Time
	mu       sync.Mutex
	ends     []*Event // one per stream used
	starts   []*Event // timing events (nil entries without timing)
	events   []*Event // every event to give back
	idx      []*HostMem
	bytes    [3]uint64
	done     atomic.Bool
	inflight bool
	err      error
}

// Done polls the batch's events without blocking (cuEventQuery).
func (c *completion) Done() bool {
	if c.done.Load() {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done.Load() {
		return true
	}
	var first error
	for _, e := range c.ends {
		ok, err := e.Query()
		if !ok {
			return false
		}
		if err != nil && first == nil {
			first = err
		}
	}
	c.finishLocked(first)
	return true
}

// Wait blocks until the batch has finished (cuEventSynchronize) and
// returns its result.
func (c *completion) Wait() error {
	if c.done.Load() {
		return c.err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done.Load() {
		return c.err
	}
	var first error
	for _, e := range c.ends {
		if err := e.Synchronize(); err != nil && first == nil {
			first = err
		}
	}
	c.finishLocked(first)
	return c.err
}

func (c *completion) finish(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.finishLocked(err)
}

// finishLocked records the outcome, counts the traffic and gives the
// events and index buffers back.
func (c *completion) finishLocked(err error) {
	if err != nil {
		c.err = fmt.Errorf("%w: %w", native.ErrTransfer, err)
	}
	var dt time.Duration
	timed := true
	for i, e := range c.ends {
		if c.starts[i] == nil {
			timed = false
			continue
		}
		if ms, err := e.ElapsedMs(c.starts[i]); err == nil {
			dt += time.Duration(float64(ms) * float64(time.Millisecond))
		} else {
			timed = false
		}
	}
	wall := time.Since(c.started)
	c.done.Store(true)
	ps := c.ps
	ps.mu.Lock()
	if c.inflight {
		ps.stats.InFlight--
	}
	if err != nil {
		ps.stats.Failed++
	} else {
		ps.stats.BytesH2D += c.bytes[kindHtoD]
		ps.stats.BytesD2H += c.bytes[kindDtoH]
		ps.stats.BytesD2D += c.bytes[kindDtoD]
	}
	ps.stats.Wall += wall
	if ps.timing && len(c.ends) > 0 {
		if timed {
			ps.stats.DeviceTime += dt
			ps.stats.TimedBatches++
		} else {
			ps.stats.UntimedBatches++
		}
	}
	ps.mu.Unlock()
	c.release()
}

// release gives the completion's events and index buffers back.
func (c *completion) release() {
	ps := c.ps
	ps.mu.Lock()
	closed := ps.closed
	var drop []*Event
	for _, e := range c.events {
		if e != nil {
			if closed || len(ps.events) >= 256 {
				drop = append(drop, e)
			} else {
				ps.events = append(ps.events, e)
			}
		}
	}
	var dropIdx []*HostMem
	if closed {
		dropIdx = c.idx
	} else {
		ps.idx = append(ps.idx, c.idx...)
	}
	c.events, c.idx = nil, nil
	ps.mu.Unlock()
	for _, e := range drop {
		e.Destroy()
	}
	for _, m := range dropIdx {
		m.Free()
	}
}

var (
	_ native.Pools     = (*Pools)(nil)
	_ native.Transport = (*Pools)(nil)
	_                  = errors.New
)
