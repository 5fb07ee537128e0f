package pooltest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"

	"github.com/radixkv/radixkv/core"
	native "github.com/radixkv/radixkv/host/native"
)

// ErrInjected is the error of every fault this package injects.
var ErrInjected = errors.New("pooltest: injected fault")

// Config selects how a Transport misbehaves. The zero value completes
// every batch at its first Done or Wait.
type Config struct {
	// Seed makes the delays and failures reproducible.
	Seed uint64
	// MaxDelay: each batch completes only after a random number in
	// [0, MaxDelay] of calls to its Done (or a Tick), so batches finish
	// later than started and out of order. Wait completes it at once.
	MaxDelay int
	// FailRate is the fraction of batches whose copy fails: half of their
	// destination slots are overwritten with garbage and the completion
	// reports ErrInjected.
	FailRate float64
	// StartFailRate is the fraction of Start calls refused outright.
	StartFailRate float64
	// Async completes every batch on a goroutine of its own, after a few
	// scheduler yields, instead of on Done; Wait blocks for it.
	Async bool
}

// Stats counts what a Transport did.
type Stats struct {
	Started, Completed, Failed, Refused uint64
	// Reordered counts batches that finished while a batch started
	// before them was still pending.
	Reordered uint64
	// Slots is the number of slot copies of the completed batches.
	Slots uint64
}

// Transport wraps a native.Pools: it implements native.Transport with
// delayed, reordered, asynchronous or failing batches, and hands out its
// pools wrapped so that every use of a slot an in-flight batch names is
// recorded as a violation (Violations). All pool calls and copies are
// serialised by its own mutex, so completions may run on any goroutine.
type Transport struct {
	mu       sync.Mutex
	inner    native.Pools
	cfg      Config
	rng      *rand.Rand
	pools    [2][3]*guarded
	inflight map[slotKey]use
	pending  []*completion
	viol     []string
	stats    Stats
	wg       sync.WaitGroup
}

type slotKey struct {
	comp core.Component
	tier native.Tier
	slot int32
}

// use says how an in-flight batch uses a slot.
type use uint8

const (
	useSrc use = 1 << iota
	useDst
)

// New wraps inner. Pools of inner that are nil stay nil.
func New(inner native.Pools, cfg Config) *Transport {
	t := &Transport{inner: inner, cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		inflight: make(map[slotKey]use)}
	for tier := range t.pools {
		for comp := range t.pools[tier] {
			if p := inner.Pool(core.Component(comp), native.Tier(tier)); p != nil {
				t.pools[tier][comp] = &guarded{t: t, p: p, key: slotKey{comp: core.Component(comp), tier: native.Tier(tier)}}
			}
		}
	}
	return t
}

// Pool returns inner's pool of (c, tier), wrapped.
func (t *Transport) Pool(c core.Component, tier native.Tier) native.Pool {
	if int(c) >= 3 || tier > native.Host {
		return nil
	}
	if g := t.pools[tier][c]; g != nil {
		return g
	}
	return nil
}

// Close waits for asynchronous completions and closes inner.
func (t *Transport) Close() error {
	t.wg.Wait()
	return t.inner.Close()
}

// Start begins a batch; see native.Transport.
func (t *Transport) Start(b *native.Batch) (native.Completion, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := b.Validate(); err != nil {
		return nil, err
	}
	if t.cfg.StartFailRate > 0 && t.rng.Float64() < t.cfg.StartFailRate {
		t.stats.Refused++
		return nil, fmt.Errorf("%w: transfer of %d slots refused at start", ErrInjected, b.Slots())
	}
	// Mark every slot in flight; a slot already in flight is a violation
	// (the controller started two batches over it).
	for k := range b.Segments {
		s := &b.Segments[k]
		for i := range s.Src {
			t.mark(slotKey{s.Component, s.From, s.Src[i]}, useSrc, "read by")
			t.mark(slotKey{s.Component, s.To, s.Dst[i]}, useDst, "written by")
		}
	}
	c := &completion{t: t, b: b, done: make(chan struct{})}
	if t.cfg.MaxDelay > 0 {
		c.delay = t.rng.IntN(t.cfg.MaxDelay + 1)
	}
	c.fail = t.cfg.FailRate > 0 && t.rng.Float64() < t.cfg.FailRate
	t.stats.Started++
	t.pending = append(t.pending, c)
	if t.cfg.Async {
		yields := t.rng.IntN(8)
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			for range yields {
				runtimeYield()
			}
			t.mu.Lock()
			defer t.mu.Unlock()
			t.finish(c)
		}()
	}
	return c, nil
}

func (t *Transport) mark(k slotKey, u use, how string) {
	if old := t.inflight[k]; old != 0 {
		if old&useDst != 0 || u&useDst != 0 {
			t.violate("%s %s slot %d is %s a second batch while in flight", k.comp, k.tier, k.slot, how)
		}
	}
	t.inflight[k] |= u
}

func (t *Transport) violate(format string, args ...any) {
	if len(t.viol) < 100 {
		t.viol = append(t.viol, fmt.Sprintf(format, args...))
	}
}

// finish runs c's copy (or its failure) and releases its slots; t.mu held.
func (t *Transport) finish(c *completion) {
	if c.finished {
		return
	}
	c.finished = true
	if len(t.pending) > 0 && t.pending[0] != c {
		t.stats.Reordered++ // pending is in start order
	}
	b := c.b
	// The copy itself goes to the inner pools: the guard is for the host.
	var err error
	if c.fail {
		err = fmt.Errorf("%w: transfer of %d slots failed", ErrInjected, b.Slots())
		buf := make([]byte, 0, 64)
		for k := range b.Segments {
			s := &b.Segments[k]
			p := t.inner.Pool(s.Component, s.To)
			if p == nil {
				continue
			}
			if n := p.SlotBytes(); cap(buf) < n {
				buf = make([]byte, n)
			}
			buf = buf[:p.SlotBytes()]
			for i := range buf {
				buf[i] = 0xA5
			}
			for i, d := range s.Dst {
				if i%2 == 0 {
					_ = p.Write(d, buf)
				}
			}
		}
		t.stats.Failed++
	} else if _, cerr := native.CopyBatch(t.inner, b, nil); cerr != nil {
		err = fmt.Errorf("pooltest: copy of a batch: %w", cerr)
		t.violate("a batch could not copy (a slot it names was freed or never allocated?): %v", cerr)
		t.stats.Failed++
	} else {
		t.stats.Completed++
		t.stats.Slots += uint64(b.Slots())
	}
	for k := range b.Segments {
		s := &b.Segments[k]
		for i := range s.Src {
			delete(t.inflight, slotKey{s.Component, s.From, s.Src[i]})
			delete(t.inflight, slotKey{s.Component, s.To, s.Dst[i]})
		}
	}
	// Other batches may share a source slot: mark theirs again.
	for _, o := range t.pending {
		if o == c || o.finished {
			continue
		}
		for k := range o.b.Segments {
			s := &o.b.Segments[k]
			for i := range s.Src {
				t.inflight[slotKey{s.Component, s.From, s.Src[i]}] |= useSrc
			}
		}
	}
	kept := t.pending[:0]
	for _, o := range t.pending {
		if o != c {
			kept = append(kept, o)
		}
	}
	clear(t.pending[len(kept):])
	t.pending = kept
	c.err = err
	c.b = nil
	close(c.done)
}

// Tick advances every pending batch by one step of its delay, completing
// those whose delay ran out (a simulator's clock).
func (t *Transport) Tick() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range append([]*completion(nil), t.pending...) {
		if t.cfg.Async {
			continue
		}
		if c.delay--; c.delay < 0 {
			t.finish(c)
		}
	}
}

// CompleteAll completes every pending batch (and waits for asynchronous
// ones).
func (t *Transport) CompleteAll() {
	t.mu.Lock()
	for _, c := range append([]*completion(nil), t.pending...) {
		if !t.cfg.Async {
			t.finish(c)
		}
	}
	t.mu.Unlock()
	t.wg.Wait()
}

// InFlight returns the number of batches started and not completed.
func (t *Transport) InFlight() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.pending)
}

// Violations returns what the host did to in-flight slots (nil: nothing).
func (t *Transport) Violations() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.viol...)
}

// Stats returns the counters.
func (t *Transport) Stats() Stats {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stats
}

// completion is one batch's Completion.
type completion struct {
	t        *Transport
	b        *native.Batch
	delay    int
	fail     bool
	finished bool // guarded by t.mu
	err      error
	done     chan struct{}
}

func (c *completion) Done() bool {
	select {
	case <-c.done:
		return true
	default:
	}
	if c.t.cfg.Async {
		return false
	}
	c.t.mu.Lock()
	defer c.t.mu.Unlock()
	if !c.finished {
		if c.delay--; c.delay < 0 {
			c.t.finish(c)
		}
	}
	return c.finished
}

func (c *completion) Wait() error {
	if !c.t.cfg.Async {
		c.t.mu.Lock()
		c.t.finish(c)
		c.t.mu.Unlock()
	}
	<-c.done
	return c.err
}

// guarded is a pool of a Transport: every call is serialised with the
// completions and checked against the slots in flight.
type guarded struct {
	t   *Transport
	p   native.Pool
	key slotKey
}

func (g *guarded) check(slot int32, what string, readOK bool) {
	k := g.key
	k.slot = slot
	if u := g.t.inflight[k]; u != 0 && (!readOK || u&useDst != 0) {
		g.t.violate("%s %s slot %d %s while a batch is in flight over it", k.comp, k.tier, slot, what)
	}
}

func (g *guarded) Alloc(dst []int32, n int) ([]int32, error) {
	g.t.mu.Lock()
	defer g.t.mu.Unlock()
	k := len(dst)
	dst, err := g.p.Alloc(dst, n)
	if err == nil {
		for _, s := range dst[k:] {
			g.check(s, "allocated", false)
		}
	}
	return dst, err
}

func (g *guarded) Free(slots []int32) error {
	g.t.mu.Lock()
	defer g.t.mu.Unlock()
	for _, s := range slots {
		g.check(s, "freed", false)
	}
	return g.p.Free(slots)
}

func (g *guarded) Write(slot int32, data []byte) error {
	g.t.mu.Lock()
	defer g.t.mu.Unlock()
	g.check(slot, "written", false)
	return g.p.Write(slot, data)
}

func (g *guarded) Read(slot int32, dst []byte) error {
	g.t.mu.Lock()
	defer g.t.mu.Unlock()
	g.check(slot, "read", true)
	return g.p.Read(slot, dst)
}

func (g *guarded) Copy(dst, src int32) error {
	g.t.mu.Lock()
	defer g.t.mu.Unlock()
	g.check(dst, "copied into", false)
	g.check(src, "copied from", true)
	return g.p.Copy(dst, src)
}

func (g *guarded) Capacity() int  { return g.p.Capacity() }
func (g *guarded) SlotBytes() int { return g.p.SlotBytes() }

func (g *guarded) Available() int {
	g.t.mu.Lock()
	defer g.t.mu.Unlock()
	return g.p.Available()
}

func (g *guarded) Close() error { return nil } // Transport.Close closes inner

var (
	_ native.Pools     = (*Transport)(nil)
	_ native.Transport = (*Transport)(nil)
	_ native.Pool      = (*guarded)(nil)
)

// Allocated implements native.SlotLister when the wrapped pool does.
func (g *guarded) Allocated(dst []int32) ([]int32, error) {
	g.t.mu.Lock()
	defer g.t.mu.Unlock()
	l, ok := g.p.(native.SlotLister)
	if !ok {
		return dst, fmt.Errorf("%w: the wrapped %T cannot list its slots", native.ErrInvalidArgument, g.p)
	}
	return l.Allocated(dst)
}
