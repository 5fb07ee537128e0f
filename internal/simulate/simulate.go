package simulate

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/radixkv/radixkv/abi"
	"github.com/radixkv/radixkv/core"
	native "github.com/radixkv/radixkv/host/native"
	"github.com/radixkv/radixkv/host/native/pooltest"
)

// Fault is a kind of fault the simulator injects.
type Fault string

// The faults. Each names what it makes go wrong; see the package doc.
const (
	FaultExhaust    Fault = "exhaust"        // small device pools: arrivals and prefills run out of slots
	FaultPool       Fault = "pool"           // device pool calls fail (Alloc, Free, Copy 1 in 50; Read, Write 1 in 2,000)
	FaultDelay      Fault = "delay"          // transfers complete late and out of order
	FaultTransfer   Fault = "transfer"       // transfers fail (garbage in half their destination) or are refused
	FaultHostFull   Fault = "host-full"      // a host pool smaller than the device's: backups find it full
	FaultWriteThru  Fault = "write-through"  // host pool calls fail: backups and write-throughs fail
	FaultAbortLoad  Fault = "abort-loadback" // requests aborted right after an arrival whose load-back is in flight
	FaultGarbage    Fault = "garbage"        // garbage ABI calls into the engine's guest between steps
	FaultGuestTrap  Fault = "trap"           // the engine's guest traps mid-call; the controller replaces it
	defaultFaultSet       = "exhaust,pool,delay,transfer,host-full,write-through,abort-loadback,garbage,trap"
)

// AllFaults lists the faults Run implements, in a fixed order.
var AllFaults = []Fault{FaultExhaust, FaultPool, FaultDelay, FaultTransfer, FaultHostFull, FaultWriteThru, FaultAbortLoad, FaultGarbage, FaultGuestTrap}

// ParseFaults parses a comma-separated fault list; "all" is every fault,
// "none" or "" none.
func ParseFaults(s string) (map[Fault]bool, error) {
	out := map[Fault]bool{}
	if s == "all" {
		s = defaultFaultSet
	}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" || f == "none" {
			continue
		}
		if !slices.Contains(AllFaults, Fault(f)) {
			names := make([]string, len(AllFaults))
			for i, k := range AllFaults {
				names[i] = string(k)
			}
			return nil, fmt.Errorf("unknown fault %q (known: %s, all, none)", f, strings.Join(names, ", "))
		}
		out[Fault(f)] = true
	}
	return out, nil
}

// FaultList renders a fault set in AllFaults order.
func FaultList(fs map[Fault]bool) string {
	var names []string
	for _, f := range AllFaults {
		if fs[f] {
			names = append(names, string(f))
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ",")
}

// Config configures a run.
type Config struct {
	Seed   uint64
	Ops    int            // scheduler steps (at least 1)
	Faults map[Fault]bool // faults to inject
	Engine string         // direct, inprocess or wasm
	// Components is the component set: full, full,swa, full,mamba or
	// full,swa,mamba.
	Components string
	// WritePolicy is write_through or write_back; "" picks one from the
	// seed.
	WritePolicy string
	// Concurrent runs Workers goroutines on one controller, with
	// transfers completing on goroutines of their own (not deterministic:
	// for the race detector).
	Concurrent bool
	Workers    int
	// TrapEvery is the trap fault's rate: one step in TrapEvery arms a
	// trap (0: 1,500; a replacement empties the cache, so rare traps
	// leave the other faults deep cache states to work on).
	TrapEvery int
	// Check, when set, runs after every serial step's own checks; a
	// non-empty answer is a violation. It lets tests of the reporting and
	// shrinking plant one.
	Check func(step int, faults map[Fault]bool) string
}

// Result is what a run did.
type Result struct {
	Ops           int
	Arrivals      int
	Finished      int
	Aborted       int
	Tolerated     int              // lifecycle calls that failed as the faults allow (the request was aborted)
	Injected      map[string]int64 // faults injected, per kind
	Checks        int              // post-step checks passed
	PageSize      int
	WritePolicy   string
	AsyncLoadBack bool // load-backs stayed in flight across calls
	Stats         native.Stats
}

// Violation is a broken invariant: the step it happened at and why.
type Violation struct {
	Seed   uint64
	Step   int
	Reason string
	// Requests are the requests that arrived up to the step, in order,
	// for a command log that replay --log runs.
	Requests []Prompt
}

func (v *Violation) Error() string {
	return fmt.Sprintf("simulate: seed %d, step %d: %s", v.Seed, v.Step, v.Reason)
}

// Prompt is one request of a run: its namespace (a tenant) and tokens.
type Prompt struct {
	Tenant string
	Tokens []uint32
}

// faultPools hands the controller the transport's pools, wrapped in
// fault pools where faults are on, and passes batches to the transport.
type faultPools struct {
	x     *pooltest.Transport
	pools [2][3]native.Pool
}

func (f *faultPools) Pool(c core.Component, t native.Tier) native.Pool {
	if int(c) >= 3 || t > native.Host {
		return nil
	}
	return f.pools[t][c]
}

func (f *faultPools) Close() error { return f.x.Close() }

func (f *faultPools) Start(b *native.Batch) (native.Completion, error) { return f.x.Start(b) }

// componentConfig is the tree configuration of a component set at a page
// size.
func componentConfig(set string, page int) (core.Config, error) {
	cfg := core.Config{PageSize: page}
	switch set {
	case "full":
	case "full,swa":
		cfg.Components, cfg.SWAWindow = []core.Component{core.Full, core.SWA}, 8
	case "full,mamba":
		cfg.Components, cfg.MambaChunkSize = []core.Component{core.Full, core.Mamba}, page
	case "full,swa,mamba":
		cfg.Components, cfg.SWAWindow, cfg.MambaChunkSize = []core.Component{core.Full, core.SWA, core.Mamba}, 8, page
	default:
		return cfg, fmt.Errorf("components %q: want full, full,swa, full,mamba or full,swa,mamba", set)
	}
	return cfg, nil
}

// tenants are the namespaces requests come from.
var tenants = []string{"", "tenant-a", "tenant-b"}

// sim is one run's state.
type sim struct {
	cfg    Config
	rng    *rand.Rand
	c      *native.Controller
	eng    native.Engine
	x      *pooltest.Transport
	fps    []*pooltest.FaultPool
	page   int
	full   bool // Full-only set: the cache model is exact
	docs   [][]uint32
	model  map[string]map[uint64]bool // tenant -> page-boundary prefix hashes ever cached
	mu     sync.Mutex                 // model and prompts in concurrent mode
	res    Result
	prompt []Prompt
	gbuf   []byte

	tcfg    core.Config // the tree's configuration (a replacement engine's too)
	trapped bool        // a trap is injected and the engine not replaced yet
}

// newEngine makes an engine of the configured kind.
func (s *sim) newEngine() (native.Engine, error) {
	switch s.cfg.Engine {
	case "direct":
		return native.NewDirectEngine(s.tcfg)
	case "inprocess":
		return native.NewInProcessEngine(s.tcfg)
	case "wasm":
		return native.NewWasmEngine(s.tcfg)
	}
	return nil, fmt.Errorf("engine %q: want direct, inprocess or wasm", s.cfg.Engine)
}

// maybeTrap arms a guest trap on one of the engine's next few calls (the
// trap fault, 1 step in Config.TrapEvery).
func (s *sim) maybeTrap() error {
	every := s.cfg.TrapEvery
	if every <= 0 {
		every = 1500
	}
	if !s.cfg.Faults[FaultGuestTrap] || s.trapped || s.rng.IntN(every) != 0 {
		return nil
	}
	s.trapped = true
	s.res.Injected["trap"]++
	return native.InjectTrap(s.eng, s.rng.IntN(12))
}

// recoverEngine replaces the engine once an injected trap fired (a call
// failed with ErrEngineFailed), as a serving host would: a fresh engine
// of the same configuration, every slot back in its pool, the running
// requests failed with ErrEngineReplaced. It reports whether it did.
func (s *sim) recoverEngine() (bool, error) {
	if !s.trapped {
		return false, nil
	}
	if _, err := s.eng.Evictable(core.Full); !errors.Is(err, native.ErrEngineFailed) {
		return false, nil // not fired yet (the probe counted towards it)
	}
	eng, err := s.newEngine()
	if err != nil {
		return false, err
	}
	if err := s.c.ReplaceEngine(eng); err != nil && !tolerated(err) {
		return false, fmt.Errorf("replace engine: %w", err)
	}
	s.eng, s.trapped = eng, false
	s.res.Injected["engine_replaced"]++
	return true, nil
}

// Run simulates cfg.Ops steps of a serving host and checks every
// invariant after each. It returns the result and, on the first broken
// invariant, a *Violation.
func Run(cfg Config) (*Result, error) {
	if cfg.Ops < 1 {
		return nil, fmt.Errorf("ops %d: want at least 1", cfg.Ops)
	}
	s := &sim{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, 0x51a7e)), res: Result{Injected: map[string]int64{}}}
	if err := s.build(); err != nil {
		return nil, err
	}
	defer s.c.Close()
	var err error
	if cfg.Concurrent {
		err = s.runConcurrent()
	} else {
		err = s.runSerial()
	}
	s.res.Stats = s.c.Stats()
	s.countInjected()
	return &s.res, err
}

func (s *sim) build() error {
	rng := s.rng
	s.page = []int{1, 2, 4}[rng.IntN(3)]
	tcfg, err := componentConfig(s.cfg.Components, s.page)
	if err != nil {
		return err
	}
	s.full = len(tcfg.Components) == 0
	wp := core.WriteThrough
	switch s.cfg.WritePolicy {
	case "":
		if rng.IntN(2) == 0 {
			wp = core.WriteBack
		}
	case "write_through":
	case "write_back":
		wp = core.WriteBack
	default:
		return fmt.Errorf("write policy %q: want write_through or write_back", s.cfg.WritePolicy)
	}
	tcfg.HostTier, tcfg.WritePolicy = true, wp
	s.res.PageSize, s.res.WritePolicy = s.page, wp.String()
	s.tcfg = tcfg
	eng, err := s.newEngine()
	if err != nil {
		return err
	}
	s.eng = eng
	f := s.cfg.Faults
	dev := [3]int{512, 384, 40}
	if f[FaultExhaust] {
		dev = [3]int{96, 80, 10}
	}
	host := [3]int{768, 512, 48}
	if f[FaultHostFull] {
		host = [3]int{48, 40, 6}
	}
	set := &native.PoolSet{}
	comps := append([]core.Component{core.Full}, tcfg.Components...)
	if len(tcfg.Components) > 0 {
		comps = tcfg.Components
	}
	for _, comp := range comps {
		for _, tier := range []native.Tier{native.Device, native.Host} {
			size := dev[comp]
			if tier == native.Host {
				size = host[comp]
			}
			mp, err := native.NewMemPool(size, native.CanaryBytes)
			if err != nil {
				return err
			}
			if err := set.Set(comp, tier, mp); err != nil {
				return err
			}
		}
	}
	xcfg := pooltest.Config{Seed: s.cfg.Seed}
	if f[FaultDelay] {
		xcfg.MaxDelay = 4
	}
	if f[FaultTransfer] {
		xcfg.FailRate, xcfg.StartFailRate = 0.1, 0.03
	}
	if f[FaultWriteThru] {
		// A write-through is a host Alloc and a transfer: both fail.
		xcfg.FailRate = max(xcfg.FailRate, 0.05)
	}
	xcfg.Async = s.cfg.Concurrent
	s.x = pooltest.New(set, xcfg)
	// The controller's own pool calls fail above the transport (whose
	// copies go to the pools underneath: a failing copy is its FailRate).
	fpools := &faultPools{x: s.x}
	for _, comp := range comps {
		for _, tier := range []native.Tier{native.Device, native.Host} {
			var p native.Pool = s.x.Pool(comp, tier)
			var rates pooltest.Rates
			if tier == native.Device && f[FaultPool] {
				rates = pooltest.Rates{Alloc: 0.02, Free: 0.02, Copy: 0.02, Read: 0.0005, Write: 0.0005}
			}
			if tier == native.Host && f[FaultWriteThru] {
				rates = pooltest.Rates{Alloc: 0.05, Free: 0.01, Write: 0.001}
			}
			if s.cfg.Concurrent {
				// The scheduler goroutine audits (which reads slots)
				// while requests run, so faults cannot be switched off
				// around it: no Read or Write faults.
				rates.Read, rates.Write = 0, 0
			}
			if rates != (pooltest.Rates{}) {
				fp := pooltest.NewFaultPool(p, rates, s.cfg.Seed*31+uint64(comp)*7+uint64(tier))
				s.fps = append(s.fps, fp)
				p = fp
			}
			fpools.pools[tier][comp] = p
		}
	}
	// Load-backs in flight across calls with the abort-loadback fault,
	// whose aborts land in the middle of them. (The simulator found a
	// defect here, fixed since and kept as TestRun_LoadBackHostRead: a
	// write-back demotion's host eviction poisoned a host slot an
	// in-flight load-back still read.)
	async := f[FaultAbortLoad]
	s.res.AsyncLoadBack = async
	c, err := native.NewController(eng, fpools, native.ControllerConfig{Canary: true, VerifyMatches: true, AsyncLoadBack: async})
	if err != nil {
		eng.Close()
		return err
	}
	s.c = c
	for range 8 {
		d := make([]uint32, 8+rng.IntN(57))
		for i := range d {
			d[i] = uint32(rng.IntN(5))
		}
		s.docs = append(s.docs, d)
	}
	s.model = map[string]map[uint64]bool{}
	for _, t := range tenants {
		s.model[t] = map[uint64]bool{}
	}
	return nil
}

// newPrompt is a document prefix (shared across requests) and a fresh
// tail.
func (s *sim) newPrompt(rng *rand.Rand) Prompt {
	d := s.docs[rng.IntN(len(s.docs))]
	p := append([]uint32(nil), d[:rng.IntN(len(d)+1)]...)
	for range rng.IntN(17) {
		p = append(p, uint32(rng.IntN(7)))
	}
	if len(p) == 0 {
		p = append(p, 1)
	}
	return Prompt{Tenant: tenants[rng.IntN(len(tenants))], Tokens: p}
}

func ns(tenant string) core.Namespace { return core.Namespace{CacheSalt: tenant} }

// tolerated reports whether a lifecycle error is one the injected faults
// allow: the request then fails cleanly (it is aborted).
func tolerated(err error) bool {
	return errors.Is(err, native.ErrPoolExhausted) || errors.Is(err, native.ErrTransfer) ||
		errors.Is(err, pooltest.ErrInjected) ||
		errors.Is(err, native.ErrEngineFailed) || errors.Is(err, native.ErrEngineReplaced) ||
		(errors.Is(err, native.ErrInvalidArgument) && strings.Contains(err.Error(), "a chunk must end at least a window"))
}

// prefixHash is a chained hash over tokens, one value per page boundary
// appended to out.
func prefixHashes(out []uint64, tokens []uint32, page int) []uint64 {
	h := uint64(14695981039346656037)
	for i, t := range tokens {
		h ^= uint64(t) + 1
		h *= 1099511628211
		if (i+1)%page == 0 {
			out = append(out, h)
		}
	}
	return out
}

// cached records that the first n tokens of p are in the cache.
func (s *sim) cached(p Prompt, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.model[p.Tenant]
	for _, h := range prefixHashes(nil, p.Tokens[:n], s.page) {
		m[h] = true
	}
}

// checkMatch: a matched prefix must be one some request cached in the
// same namespace (no phantom hits, no cross-tenant hits).
func (s *sim) checkMatch(p Prompt, n int) error {
	if n == 0 {
		return nil
	}
	if n > len(p.Tokens) {
		return fmt.Errorf("matched %d tokens of a %d-token prompt", n, len(p.Tokens))
	}
	hs := prefixHashes(nil, p.Tokens[:n], s.page)
	if n%s.page != 0 || len(hs) == 0 {
		return fmt.Errorf("matched %d tokens, not a whole number of %d-token pages", n, s.page)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.model[p.Tenant][hs[len(hs)-1]] {
		return fmt.Errorf("matched %d tokens in namespace %q that no request of it ever cached", n, p.Tenant)
	}
	return nil
}

// check runs the post-step invariants: the controller's Audit (the tree's
// sanity check and every slot accounted), no slot used while a transfer
// names it, a clean canary.
func (s *sim) check() error {
	for _, fp := range s.fps {
		fp.Off = true
	}
	defer func() {
		for _, fp := range s.fps {
			fp.Off = false
		}
	}()
	if _, err := s.recoverEngine(); err != nil {
		return err
	}
	err := s.c.Audit()
	if errors.Is(err, native.ErrEngineFailed) && s.trapped {
		// The trap fired inside the audit's own calls: recover, audit again.
		if _, err = s.recoverEngine(); err == nil {
			err = s.c.Audit()
		}
	}
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	if v := s.x.Violations(); len(v) > 0 {
		return fmt.Errorf("transport: %s", v[0])
	}
	if n := s.c.Stats().CanaryMismatches; n > 0 {
		return fmt.Errorf("%d canary mismatches", n)
	}
	s.res.Checks++
	return nil
}

// running is a request in flight and what it is made of.
type running struct {
	r *native.Request
	p Prompt
}

// runSerial is the deterministic scheduler: one step at a time, requests
// interleaved at random points of their lifecycles.
func (s *sim) runSerial() error {
	rng := s.rng
	var run []running
	fail := func(step int, format string, args ...any) error {
		return &Violation{Seed: s.cfg.Seed, Step: step, Reason: fmt.Sprintf(format, args...), Requests: s.prompt}
	}
	// end retires run[k] after err: tolerated errors abort it.
	end := func(step, k int, what string, err error) error {
		ru := run[k]
		if err != nil {
			if !tolerated(err) {
				return fail(step, "%s: %v", what, err)
			}
			s.res.Tolerated++
			if !ru.r.Done() {
				if aerr := s.c.Abort(ru.r); aerr != nil && !tolerated(aerr) {
					return fail(step, "abort after %s failed: %v", what, aerr)
				}
			}
		}
		if ru.r.Done() {
			run = append(run[:k], run[k+1:]...)
		}
		return nil
	}
	for step := 1; step <= s.cfg.Ops; step++ {
		s.res.Ops++
		if err := s.maybeTrap(); err != nil {
			return fail(step, "inject a trap: %v", err)
		}
		switch op := rng.IntN(100); {
		case len(run) == 0 || (len(run) < 12 && op < 18):
			p := s.newPrompt(rng)
			s.prompt = append(s.prompt, p)
			r, err := s.c.Arrive(ns(p.Tenant), p.Tokens)
			if err != nil {
				if !tolerated(err) {
					return fail(step, "arrive: %v", err)
				}
				s.res.Tolerated++
				break
			}
			s.res.Arrivals++
			if r.Loading() {
				s.res.Injected["loading_arrivals"]++
				if s.cfg.Faults[FaultAbortLoad] && rng.IntN(2) == 0 {
					s.res.Injected["abort-loadback"]++
					if err := s.c.Abort(r); err != nil && !tolerated(err) {
						return fail(step, "abort in the middle of a load-back: %v", err)
					}
					s.res.Aborted++
					break
				}
				if rng.IntN(2) == 0 {
					// Otherwise the request's next lifecycle call awaits.
					if err := s.c.Await(r); err != nil {
						if !tolerated(err) {
							return fail(step, "await: %v", err)
						}
						s.res.Tolerated++
						break
					}
				}
			}
			if !r.Loading() {
				if err := s.checkMatch(p, r.CachedLen()); err != nil {
					return fail(step, "arrive: %v", err)
				}
			}
			run = append(run, running{r, p})
		case op < 55: // a chunk of prefill, or a decoded token
			k := rng.IntN(len(run))
			if err := s.settle(step, run[k]); err != nil {
				if err := end(step, k, "await", err); err != nil {
					return err
				}
				break
			}
			ru := run[k]
			var err error
			what := "prefill"
			if ru.r.Pending() > 0 {
				err = s.c.Prefill(ru.r, 1+rng.IntN(ru.r.Pending()))
			} else {
				what = "extend"
				tok := uint32(rng.IntN(7))
				err = s.c.Extend(ru.r, tok)
				if err == nil {
					run[k].p.Tokens = append(slices.Clip(ru.p.Tokens), tok)
				}
			}
			if err := end(step, k, what, err); err != nil {
				return err
			}
		case op < 63: // cache what is computed so far
			k := rng.IntN(len(run))
			if err := s.settle(step, run[k]); err != nil {
				if err := end(step, k, "await", err); err != nil {
					return err
				}
				break
			}
			ru := run[k]
			upto := ru.r.Computed()
			// The model learns what a call may cache before the call: a
			// call that fails after its insert (a backup's fault) still
			// cached it.
			s.cached(ru.p, upto/s.page*s.page)
			err := s.c.FinishChunk(ru.r, upto)
			if err := end(step, k, "finish_chunk", err); err != nil {
				return err
			}
		case op < 68:
			k := rng.IntN(len(run))
			err := s.c.Verify(run[k].r)
			if errors.Is(err, native.ErrCanaryMismatch) {
				return fail(step, "verify: %v", err)
			}
			if err := end(step, k, "verify", err); err != nil {
				return err
			}
		case op < 75:
			k := rng.IntN(len(run))
			err := s.c.Abort(run[k].r)
			if err == nil {
				s.res.Aborted++
			}
			if err := end(step, k, "abort", err); err != nil {
				return err
			}
		case op < 90: // finish: prefill the rest, cache it
			k := rng.IntN(len(run))
			if err := s.settle(step, run[k]); err != nil {
				if err := end(step, k, "await", err); err != nil {
					return err
				}
				break
			}
			ru := run[k]
			err := s.c.Prefill(ru.r, ru.r.Pending())
			if err == nil {
				n := len(ru.p.Tokens) / s.page * s.page
				s.cached(ru.p, n)
				err = s.c.Finish(ru.r)
				if err == nil {
					s.res.Finished++
					if err := s.checkFinished(ru.p, n); err != nil {
						return fail(step, "after finish: %v", err)
					}
				}
			}
			if err := end(step, k, "finish", err); err != nil {
				return err
			}
		case op < 95: // a scheduler tick: transfers progress
			s.x.Tick()
			if err := s.c.Poll(); err != nil && !tolerated(err) {
				return fail(step, "poll: %v", err)
			}
		default:
			if s.cfg.Faults[FaultGarbage] {
				if err := s.garbage(); err != nil {
					return fail(step, "garbage call: %v", err)
				}
			} else {
				p := s.newPrompt(rng)
				got, err := s.c.Match(nil, ns(p.Tenant), p.Tokens)
				if err != nil && !tolerated(err) {
					return fail(step, "match: %v", err)
				}
				if err == nil {
					if err := s.checkMatch(p, len(got)); err != nil {
						return fail(step, "match: %v", err)
					}
				}
			}
		}
		if err := s.check(); err != nil {
			return fail(step, "%v", err)
		}
		if s.cfg.Check != nil {
			if why := s.cfg.Check(step, s.cfg.Faults); why != "" {
				return fail(step, "%s", why)
			}
		}
	}
	// Wind down: finish or abort what runs, drain the transfers.
	if _, err := s.recoverEngine(); err != nil {
		return fail(s.cfg.Ops, "%v", err)
	}
	for len(run) > 0 {
		ru := run[0]
		err := s.settle(s.cfg.Ops, ru)
		if err == nil {
			err = s.c.Prefill(ru.r, ru.r.Pending())
		}
		if err == nil {
			s.cached(ru.p, len(ru.p.Tokens)/s.page*s.page)
			err = s.c.Finish(ru.r)
		}
		if err := end(s.cfg.Ops, 0, "finish at the end", err); err != nil {
			return err
		}
		if len(run) > 0 && run[0].r == ru.r {
			run = run[1:]
		}
	}
	s.x.CompleteAll()
	if err := s.c.Drain(); err != nil && !tolerated(err) {
		return fail(s.cfg.Ops, "drain: %v", err)
	}
	if err := s.check(); err != nil {
		return fail(s.cfg.Ops, "at the end: %v", err)
	}
	if s.c.InFlight() != 0 {
		return fail(s.cfg.Ops, "%d transfers still in flight after Drain", s.c.InFlight())
	}
	return nil
}

// settle awaits a loading request's load-back (its Pending and slots are
// final only then) and checks its arrival's match.
func (s *sim) settle(step int, ru running) error {
	if !ru.r.Loading() {
		return nil
	}
	if err := s.c.Await(ru.r); err != nil {
		return err
	}
	if err := s.checkMatch(ru.p, ru.r.CachedLen()); err != nil {
		return &Violation{Seed: s.cfg.Seed, Step: step, Reason: "arrive (awaited): " + err.Error(), Requests: s.prompt}
	}
	return nil
}

// checkFinished: right after a Finish of a Full-only tree the whole-page
// prefix is cached (nothing evicts between the two calls) and reads back
// with its canary.
func (s *sim) checkFinished(p Prompt, n int) error {
	got, err := s.c.Match(nil, ns(p.Tenant), p.Tokens)
	if err != nil {
		if tolerated(err) {
			return nil
		}
		return err
	}
	if s.full && len(got) < n && !s.cfg.Faults[FaultWriteThru] {
		// A write-back demotion may move a finished prefix to the host
		// before the match; device length can then be shorter.
		if s.res.WritePolicy != core.WriteBack.String() {
			return fmt.Errorf("finished %d tokens, but a match finds only %d", n, len(got))
		}
	}
	if err := s.checkMatch(p, len(got)); err != nil {
		return err
	}
	if err := s.c.VerifyMatch(ns(p.Tenant), p.Tokens[:len(got)], got); err != nil && !tolerated(err) {
		return err
	}
	return nil
}

// garbage sends one malformed or hostile call to the engine's guest; it
// must be refused with a well-formed error, and the engine's own instance
// left alone (the next step's audit checks that).
func (s *sim) garbage() error {
	rc, ok := s.eng.(native.RawCaller)
	if !ok {
		return nil // the direct engine has no wire
	}
	s.res.Injected["garbage"]++
	rng := s.rng
	own := rc.Instance()
	other := own + 1 + uint32(rng.IntN(1<<20))
	b := s.gbuf[:0]
	switch rng.IntN(5) {
	case 0: // random bytes
		for range rng.IntN(48) {
			b = append(b, byte(rng.Uint32()))
		}
	case 1: // a valid header, garbage body, another (unknown) instance
		b = abi.AppendRequest(b, &abi.Request{Op: abi.OpInsert, Instance: other})[:24]
		for range rng.IntN(32) {
			b = append(b, byte(rng.Uint32()))
		}
	case 2: // bad magic
		b = abi.AppendRequest(b, &abi.Request{Op: abi.OpStats, Instance: own})
		b[0] ^= 0xff
	case 3: // the engine's own instance, truncated body
		b = abi.AppendRequest(b, &abi.Request{Op: abi.OpMatch, Instance: own, Insert: core.InsertParams{Tokens: []uint32{1, 2, 3}}})
		b = b[:len(b)-1-rng.IntN(8)]
	default: // unknown op on the engine's instance
		b = abi.AppendRequest(b, &abi.Request{Op: abi.OpVersion})
		b[6], b[7] = 0x7e, 0x7e
		b[8] = byte(own)
	}
	s.gbuf = b
	out, err := rc.RawCall(b)
	if err != nil {
		if s.trapped && errors.Is(err, native.ErrEngineFailed) {
			return nil // the injected trap fired on this call: the check recovers
		}
		return err
	}
	var r abi.Response
	if err := abi.DecodeResponse(&r, out); err != nil {
		return fmt.Errorf("answer does not decode: %v", err)
	}
	if r.Status != abi.StatusError || r.Code == abi.CodeInternal {
		return fmt.Errorf("garbage %x answered status %v code %v", b, r.Status, r.Code)
	}
	return nil
}

// countInjected fills Result.Injected from the fault pools and the
// transport.
func (s *sim) countInjected() {
	in := s.res.Injected
	for _, fp := range s.fps {
		in["pool_alloc"] += int64(fp.Counts.Alloc)
		in["pool_free"] += int64(fp.Counts.Free)
		in["pool_read"] += int64(fp.Counts.Read)
		in["pool_write"] += int64(fp.Counts.Write)
		in["pool_copy"] += int64(fp.Counts.Copy)
	}
	xs := s.x.Stats()
	in["transfer_failed"] += int64(xs.Failed)
	in["transfer_refused"] += int64(xs.Refused)
	if s.cfg.Faults[FaultDelay] {
		in["transfer_delayed"] += int64(xs.Completed)
	}
	st := s.res.Stats
	in["backups_refused"] += int64(st.BackupsRefused)
	for k, v := range in {
		if v == 0 {
			delete(in, k)
		}
	}
}

// InjectedText renders the fault counts sorted by name.
func (r *Result) InjectedText() string {
	names := make([]string, 0, len(r.Injected))
	for k := range r.Injected {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	for i, k := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", k, r.Injected[k])
	}
	if b.Len() == 0 {
		return "none"
	}
	return b.String()
}

// Report writes the result in a fixed, timing-free form (the same seed
// gives the same bytes).
func (r *Result) Report(w io.Writer) {
	fmt.Fprintf(w, "ops %d: %d arrivals, %d finished, %d aborted, %d failed as the faults allow; %d checks passed\n",
		r.Ops, r.Arrivals, r.Finished, r.Aborted, r.Tolerated, r.Checks)
	fmt.Fprintf(w, "page %d, write policy %s, load-backs in flight across calls %v\n", r.PageSize, r.WritePolicy, r.AsyncLoadBack)
	fmt.Fprintf(w, "faults injected: %s\n", r.InjectedText())
	st := r.Stats
	fmt.Fprintf(w, "controller: %d matched tokens, %d computed, %d evicted nodes, %d backups (%d failed), %d load-backs (%d failed), %d canary slots checked, %d mismatches\n",
		st.MatchedTokens, st.ComputedTokens, st.EvictedNodes, st.Backups, st.BackupsFailed, st.LoadBacks, st.LoadBacksFailed, st.CanaryChecked, st.CanaryMismatches)
}

// runConcurrent runs Workers goroutines of request lifecycles on the one
// controller while transfers complete on goroutines of their own and a
// scheduler goroutine polls and audits. Timing decides the interleaving,
// so a run is not reproducible; it exists for the race detector and for
// the invariants under real concurrency.
func (s *sim) runConcurrent() error {
	workers := max(s.cfg.Workers, 2)
	per := max(s.cfg.Ops/workers, 1)
	var wg sync.WaitGroup
	errs := make([]error, workers)
	var counts sync.Mutex
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(s.cfg.Seed+uint64(w)+1, 0xc0c0))
			errs[w] = s.worker(rng, per, &counts)
		}()
	}
	stop := make(chan struct{})
	var poller sync.WaitGroup
	var pollErr error
	poller.Add(1)
	go func() {
		defer poller.Done()
		prng := rand.New(rand.NewPCG(s.cfg.Seed, 0x7a9))
		for {
			select {
			case <-stop:
				return
			default:
			}
			if s.cfg.Faults[FaultGuestTrap] && prng.IntN(200) == 0 {
				// The trap fault here: the engine is replaced while workers
				// run requests on it and completions arrive on other
				// goroutines (a restart: injecting a trap would race with
				// the workers' calls, which only the controller serialises).
				eng, err := s.newEngine()
				if err == nil {
					err = s.c.ReplaceEngine(eng)
				}
				if err != nil && !tolerated(err) {
					pollErr = fmt.Errorf("replace engine: %w", err)
					return
				}
				counts.Lock()
				s.res.Injected["engine_restarted"]++
				counts.Unlock()
			}
			if err := s.c.Poll(); err != nil && !tolerated(err) {
				pollErr = fmt.Errorf("poll: %w", err)
				return
			}
			if err := s.c.Audit(); err != nil {
				pollErr = fmt.Errorf("audit while requests run: %w", err)
				return
			}
			counts.Lock()
			s.res.Checks++
			counts.Unlock()
			s.x.Tick()
		}
	}()
	wg.Wait()
	close(stop)
	poller.Wait()
	if err := errors.Join(append(errs, pollErr)...); err != nil {
		return &Violation{Seed: s.cfg.Seed, Step: s.res.Ops, Reason: err.Error()}
	}
	if err := s.c.Drain(); err != nil && !tolerated(err) {
		return &Violation{Seed: s.cfg.Seed, Step: s.res.Ops, Reason: "drain: " + err.Error()}
	}
	if err := s.c.Audit(); err != nil {
		return &Violation{Seed: s.cfg.Seed, Step: s.res.Ops, Reason: "audit at the end: " + err.Error()}
	}
	if v := s.x.Violations(); len(v) > 0 {
		return &Violation{Seed: s.cfg.Seed, Step: s.res.Ops, Reason: "transport: " + v[0]}
	}
	if n := s.c.Stats().CanaryMismatches; n > 0 {
		return &Violation{Seed: s.cfg.Seed, Step: s.res.Ops, Reason: fmt.Sprintf("%d canary mismatches", n)}
	}
	return nil
}

// worker runs request lifecycles for about ops steps.
func (s *sim) worker(rng *rand.Rand, ops int, counts *sync.Mutex) error {
	bump := func(f func()) { counts.Lock(); f(); counts.Unlock() }
	for done := 0; done < ops; {
		p := s.newPrompt(rng)
		done++
		bump(func() { s.res.Ops++ })
		r, err := s.c.Arrive(ns(p.Tenant), p.Tokens)
		if err != nil {
			if !tolerated(err) {
				return fmt.Errorf("arrive: %w", err)
			}
			bump(func() { s.res.Tolerated++ })
			continue
		}
		bump(func() { s.res.Arrivals++ })
		var lerr error
		if r.Loading() {
			if rng.IntN(3) == 0 {
				lerr = s.c.Abort(r) // in the middle of its load-back
			} else {
				lerr = s.c.Await(r)
			}
		}
		if lerr == nil && !r.Done() {
			if err := s.checkMatch(p, r.CachedLen()); err != nil {
				return fmt.Errorf("arrive: %w", err)
			}
		}
		for lerr == nil && !r.Done() && done < ops {
			done++
			bump(func() { s.res.Ops++ })
			switch op := rng.IntN(10); {
			case op < 6 && r.Pending() > 0:
				lerr = s.c.Prefill(r, 1+rng.IntN(r.Pending()))
			case op < 7:
				// The model learns first: another worker may match the
				// prefix as soon as it is in the tree.
				s.cached(p, r.Computed()/s.page*s.page)
				lerr = s.c.FinishChunk(r, r.Computed())
			case op < 8:
				if lerr = s.c.Abort(r); lerr == nil {
					bump(func() { s.res.Aborted++ })
				}
			default:
				if lerr = s.c.Prefill(r, r.Pending()); lerr == nil {
					s.cached(p, len(p.Tokens)/s.page*s.page)
					if lerr = s.c.Finish(r); lerr == nil {
						bump(func() { s.res.Finished++ })
					}
				}
			}
		}
		if lerr != nil {
			if !tolerated(lerr) {
				return lerr
			}
			bump(func() { s.res.Tolerated++ })
		}
		if !r.Done() {
			if err := s.c.Abort(r); err != nil && !tolerated(err) {
				return fmt.Errorf("abort: %w", err)
			}
		}
	}
	return nil
}
