package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/core/flops"
	"github.com/radixkv/radixkv/host/native"
	"github.com/radixkv/radixkv/internal/coresim"
	"github.com/radixkv/radixkv/internal/offline"
)

const replaySynopsis = "replay [--cache tree|blocks] [--engine wasm|inprocess|direct] [--trace FILE | --log FILE | --seed N --requests N] [flags]"

func runReplay(args []string, stdout, stderr io.Writer) error {
	var s settings
	fs := newFlagSet("replay", replaySynopsis, stderr)
	s.workloadFlags(fs, true)
	s.cacheFlags(fs)
	fs.BoolVar(&s.json, "json", false, "print the report as one JSON object")
	fs.BoolVar(&s.quiet, "quiet", false, "draw no progress bar")
	s.gpu.register(fs)
	fs.Float64Var(&s.serviceRate, "service-rate", 0, "also report the device hit rate with scheduler-aware protection: a FIFO server prefilling this many input tokens per second, fed at the workload's timestamps, protects the prefixes of the requests waiting in its queue (a separate pass; 0: off)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the replay loop to `file` (go tool pprof)")
	fs.StringVar(&s.mambaPolicy, "mamba-policy", "lru", "Mamba state policy with mamba in --components: lru (the tree: states at chunk ends, branch points and finish, recency order; --cache blocks: finish-leaf states, the seed's order) or marconi (states only at branch points and finish, evicted by recency + alpha * FLOPs saved per byte)")
	fs.StringVar(&s.model, "hybrid-model", "7b-hybrid", "hybrid model preset for FLOP accounting and marconi: 7b-hybrid (24 SSM / 4 attention / 28 MLP layers, d=4096, n=128)")
	fs.Float64Var(&s.marconiAlpha, "marconi-alpha", -1, "marconi's alpha; -1 tunes it from 0: --cache blocks once, replaying --marconi-window requests from the first state eviction per alpha in 0..2 step 0.1; the tree every --marconi-window requests from the first state eviction, replaying the last window on shadow trees per alpha in 0..2 step 0.25")
	fs.IntVar(&s.marconiWindow, "marconi-window", 500, "requests marconi replays to tune alpha")
	fs.StringVar(&s.cache, "cache", "tree", "cache structure: tree (the unified radix tree through --engine) or blocks (the block-cache facade of the second seed behind --engine: block size --page-size, LRU, with mamba an SSM snapshot index)")
	if err := s.parse(fs, args); err != nil {
		return err
	}
	if !(s.serviceRate >= 0) || math.IsInf(s.serviceRate, 0) {
		return fmt.Errorf("--service-rate %v: must be a finite number of tokens per second ≥ 0", s.serviceRate)
	}
	// A trace or the built-in workload streams: its requests are made
	// ahead of the replay, which starts on the first as soon as it is
	// ready.
	l, err := s.openWorkload()
	if err != nil {
		return err
	}
	defer l.close()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	var rep *report
	switch s.cache {
	case "tree":
		if err := s.checkTreeMamba(); err != nil {
			return err
		}
		rep, err = replay(&s, l, stderr)
	case "blocks":
		if err = l.drain(); err == nil {
			rep, err = replayBlocks(&s, l)
		}
	default:
		err = fmt.Errorf("unknown --cache %q (known: %s)", s.cache, strings.Join(cacheNames, ", "))
	}
	if err != nil {
		return err
	}
	if s.json {
		return rep.writeJSON(stdout)
	}
	return rep.writeText(stdout)
}

// outputToken is the id of the j-th decoded token of request k: a
// deterministic id with the top bit set, so it never equals a generated or
// trace token of a realistic vocabulary.
func outputToken(k, j int) uint32 {
	return 1<<31 | uint32((uint64(k)<<16+uint64(j))&(1<<31-1))
}

// replay runs every request of l through a controller built from s and
// returns the report. Nothing is written to stdout here, so a failure
// leaves no partial report. A streamed trace is read as the replay goes:
// a request too large for the pools, or a bad line, fails the replay when
// it is reached, naming the request and its line, and nothing is reported;
// what needs the whole workload (the totals, the offline bound, the
// queue-protection pass) runs after the timed loop.
func replay(s *settings, l *loaded, stderr io.Writer) (*report, error) {
	cfg, err := s.coreConfig()
	if err != nil {
		return nil, err
	}
	if s.has(core.Mamba) && s.mambaPolicy == "marconi" {
		cfg.MambaPolicy, cfg.MambaModel, cfg.MambaAlpha = "marconi", flops.Presets[s.model], max(s.marconiAlpha, 0)
	}
	s.resolveCapacity(l)
	if err := s.checkMambaFits(); err != nil {
		return nil, err
	}
	if err := s.checkMemory(); err != nil {
		return nil, err
	}
	rep := &report{Engine: s.engine, Workload: l.source}
	eng, err := newEngine(s.engine, cfg, s.wasmCache)
	if err != nil {
		return nil, err
	}
	var pools native.Pools
	var gpu *gpuSet
	if s.gpu.pools != "mem" {
		if s.gpu.pools != "cuda" && s.gpu.pools != "cuda-fake" {
			eng.Close()
			return nil, fmt.Errorf("--pools %q: want mem, cuda or cuda-fake", s.gpu.pools)
		}
		if gpu, err = s.newGPUPools(cfg); err != nil {
			eng.Close()
			return nil, err
		}
		pools = gpu.pools
		defer gpu.close()
	} else if pools, err = s.memPools(cfg); err != nil {
		eng.Close()
		return nil, err
	}
	var tuner *treeTuner
	if cfg.MambaPolicy == "marconi" && s.marconiAlpha < 0 {
		setter, ok := underlying(eng).(native.MambaAlphaSetter)
		if !ok || s.mambaCapacity < 3 {
			eng.Close()
			pools.Close()
			return nil, fmt.Errorf("tuning marconi's alpha needs an engine that sets it and --mamba-capacity of at least 3 (got %d); or fix --marconi-alpha", s.mambaCapacity)
		}
		tuner = &treeTuner{setter: setter, window: s.marconiWindow, next: -1, at: -1,
			cfg: coresim.MambaConfig{Capacity: s.capacity, PageSize: s.pageSize, States: s.mambaCapacity,
				Policy: "marconi", Admission: "branch", Model: cfg.MambaModel}}
	}
	var lat struct{ arrive, prefill, extend, finish, evict latency }
	ctl, err := native.NewController(&timedEngine{Engine: eng, evict: &lat.evict}, pools,
		native.ControllerConfig{Canary: s.canary, VerifyMatches: s.canary})
	if err != nil {
		eng.Close()
		if gpu == nil {
			pools.Close()
		}
		return nil, err
	}
	defer ctl.Close()

	var inputTokens, outputTokens int64
	// The bar counts tokens, or, while a workload streams (its tokens are
	// not known before the end), the trace's bytes or the requests.
	var bar *progress
	byBytes := l.stream != nil && l.generated == 0
	switch {
	case byBytes:
		bar = newProgress(s, stderr, "replay", l.size, "bytes", minProgressBytes)
	case l.stream != nil:
		bar = newProgress(s, stderr, "replay", int64(l.generated), "requests", minProgressRequests)
	default:
		var total int64
		for k := range l.reqs {
			total += int64(len(l.reqs[k].Tokens))
		}
		bar = newProgress(s, stderr, "replay", total, "tokens", minProgressTokens)
	}
	var ops int64
	var outBuf []uint32
	var mambaHits int64
	var mambaFLOPs float64
	var start time.Time
	for k := 0; ; k++ {
		req, err := l.fetch(k)
		if err == io.EOF {
			break
		}
		if err == nil {
			err = s.checkFit(l, k)
		}
		if err != nil {
			bar.abandon()
			return nil, err
		}
		t0 := time.Now()
		if k == 0 {
			// The time to the first request: from the process start to
			// its Arrive.
			start = t0
			rep.Throughput.StartupSeconds = start.Sub(processStart).Seconds()
			rep.Throughput.FirstRequestUnixNano = start.UnixNano()
		}
		inputTokens += int64(len(req.Tokens))
		// The trace's tokens are never written (the reader hands each
		// request its own, kept in l.reqs), so the controller reads them
		// in place instead of copying them.
		r, err := ctl.ArriveBorrowing(nil, namespace(req.Namespace), req.Tokens)
		t1 := time.Now()
		lat.arrive.add(t1.Sub(t0))
		if err != nil {
			bar.abandon()
			return nil, s.lifecycleError(l, k, "arrive", err)
		}
		if n := r.CachedLen(); n > 0 && s.has(core.Mamba) {
			// A Mamba tree's match ends on a state: the request resumes
			// there and skips the whole model's prefill of n tokens.
			mambaHits++
			mambaFLOPs += flops.Presets[s.model].PrefillFLOPs(n)
		}
		err = ctl.Prefill(r, r.Pending())
		t2 := time.Now()
		lat.prefill.add(t2.Sub(t1))
		ops += 2
		if err != nil {
			bar.abandon()
			return nil, s.lifecycleError(l, k, "prefill", err)
		}
		if s.outputTokens {
			outBuf = outBuf[:0]
			for j := range req.OutputLength {
				outBuf = append(outBuf, outputToken(k, j))
			}
			// One Extend per decoded token, as a decoder would call it.
			for j := range outBuf {
				t0 := time.Now()
				err := ctl.Extend(r, outBuf[j])
				lat.extend.add(time.Since(t0))
				ops++
				if err != nil {
					bar.abandon()
					return nil, s.lifecycleError(l, k, "extend", err)
				}
			}
			outputTokens += int64(req.OutputLength)
		}
		t0 = time.Now()
		err = ctl.Finish(r)
		lat.finish.add(time.Since(t0))
		ops++
		if err != nil {
			bar.abandon()
			return nil, fmt.Errorf("%s: finish: %w", l.describe(k), err)
		}
		if tuner != nil {
			tuner.reqs = l.reqs
			if err := tuner.after(k, ctl.Stats().MambaEvicted > 0); err != nil {
				bar.abandon()
				return nil, fmt.Errorf("%s: tuning marconi's alpha: %w", l.describe(k), err)
			}
		}
		switch {
		case byBytes:
			bar.set(l.offset)
		case l.generated > 0:
			bar.add(1)
		default:
			bar.add(int64(len(req.Tokens)))
		}
	}
	elapsed := time.Since(start)
	bar.finish()

	st := ctl.Stats()
	rep.Settings.Components = s.components
	if s.has(core.SWA) {
		rep.Settings.SWAWindow, rep.Settings.SWACapacity = s.swaWindow, s.swaCapacity
	}
	if s.has(core.Mamba) {
		rep.Settings.MambaChunk, rep.Settings.MambaCap, rep.Settings.MambaCapacity = s.mambaChunk, s.mambaCap, s.mambaCapacity
	}
	rep.Settings.PageSize = cfg.PageSize
	rep.Settings.Capacity = s.capacity
	rep.Settings.HostCapacity = s.hostCapacity
	rep.Settings.Policy = cfg.Policy
	if t, err := core.New(cfg); err == nil {
		rep.Settings.Policy = t.Policy() // normalised name
	}
	rep.Settings.WritePolicy = cfg.WritePolicy.String()
	rep.Settings.Canary = s.canary
	rep.Settings.OutputTokens = s.outputTokens

	rep.Requests = len(l.reqs)
	rep.InputTokens = inputTokens
	rep.OutputTokens = outputTokens
	rep.ComputedTokens = int64(st.ComputedTokens)
	h := &rep.Hits
	h.DeviceTokens = int64(st.MatchedTokens)
	h.HostTokens = int64(st.HostHitTokens)
	h.TotalTokens = h.DeviceTokens + h.HostTokens
	if inputTokens > 0 {
		h.DeviceRate = float64(h.DeviceTokens) / float64(inputTokens)
		h.HostRate = float64(h.HostTokens) / float64(inputTokens)
		h.TotalRate = float64(h.TotalTokens) / float64(inputTokens)
	}
	h.HostNote = hostOffNote
	if cfg.HostTier {
		h.HostNote = hostOnNote
		ht := &hostReport{
			LoadBacks:        int64(st.LoadBacks),
			LoadedTokens:     int64(st.LoadedTokens),
			LoadBacksSkipped: int64(st.LoadBacksSkipped),
			Backups:          int64(st.Backups),
			BackedUpTokens:   int64(st.BackedUpTokens),
			WriteThroughs:    int64(st.WriteThroughs),
			BackupsRefused:   int64(st.BackupsRefused),
			Demoted:          int64(st.Demoted),
			Dropped:          int64(st.Dropped),
			HostEvictions:    int64(st.HostEvictions),
			HostFreedTokens:  int64(st.HostFreedTokens),
			CachedHostTokens: int64(ctl.HostHeld(core.Full)),
		}
		if s.has(core.SWA) {
			rep.Settings.HostSWACapacity = s.hostPoolCapacity(core.SWA)
		}
		if s.has(core.Mamba) {
			rep.Settings.HostMambaCapacity = s.hostPoolCapacity(core.Mamba)
		}
		rep.HostTier = ht
	}
	rep.HitRate = h.TotalRate
	rep.PrefillTokensSaved = h.TotalTokens
	rep.Evictions.Calls = len(lat.evict.ns)
	rep.Evictions.Nodes = int64(st.EvictedNodes)
	rep.Evictions.Tokens = int64(st.EvictedTokens)
	rep.Bytes.Written = int64(st.BytesWritten)
	rep.Bytes.Moved = int64(st.BytesMoved)
	if gpu != nil {
		rep.GPU = gpu.report(s)
	}
	full, err := ctl.Engine().Evictable(core.Full)
	if err != nil {
		return nil, err
	}
	prot, err := ctl.Engine().Protected(core.Full)
	if err != nil {
		return nil, err
	}
	rep.CachedTokens = full + prot
	if s.has(core.SWA) || s.has(core.Mamba) {
		hy := &hybridReport{
			SWAWindowFreed:   int64(st.SWAWindowFreed),
			SWAEarlyReleases: int64(st.SWAEarlyReleases),
			SWAEvicted:       int64(st.SWAEvictedSlots),
			MambaForks:       int64(st.MambaForks),
			MambaDonated:     int64(st.MambaDonated),
			MambaEvicted:     int64(st.MambaEvicted),
		}
		if s.has(core.Mamba) {
			hy.MambaPolicy, hy.MambaAlpha, hy.Model, hy.MambaTunedAt = s.mambaPolicy, cfg.MambaAlpha, s.model, -1
			if tuner != nil {
				hy.MambaAlpha, hy.MambaTunes, hy.MambaTunedAt = tuner.alpha, tuner.tunes, tuner.at
			}
			hy.MambaHits, hy.MambaFLOPsSaved = mambaHits, mambaFLOPs
			hy.MambaChunksSkipped = int64(st.MambaChunksSkipped)
		}
		for _, c := range []struct {
			comp core.Component
			dst  *int64
		}{{core.SWA, &hy.CachedSWATokens}, {core.Mamba, &hy.CachedMambaStates}} {
			if !s.has(c.comp) {
				continue
			}
			ev, err := ctl.Engine().Evictable(c.comp)
			if err != nil {
				return nil, err
			}
			pr, err := ctl.Engine().Protected(c.comp)
			if err != nil {
				return nil, err
			}
			*c.dst = int64(ev + pr)
		}
		rep.Hybrid = hy
	}

	// The audit (tree sanity check plus slot accounting) runs once, after
	// the timed loop.
	if err := ctl.Audit(); err != nil {
		return nil, fmt.Errorf("after the replay: %w", err)
	}
	// The offline bound: a separate pass over the same input tokens.
	if b, err := offline.Belady(offline.Config{Capacity: s.capacity, PageSize: cfg.PageSize}, l.reqs); err == nil {
		rep.OfflineBound = &boundReport{DeviceRate: b.HitRate, Note: boundNote}
	}
	// Scheduler-aware protection: a separate pass on the core alone (Full
	// only, like the bound), reported apart from the policy's own rate.
	if s.serviceRate > 0 && s.components == "full" {
		q, err := coresim.Run(coresim.Config{Capacity: s.capacity, PageSize: cfg.PageSize, Policy: cfg.Policy, ServiceRate: s.serviceRate}, l.reqs)
		if err != nil {
			return nil, fmt.Errorf("protected pass: %w", err)
		}
		rep.Protected = &protectedReport{DeviceRate: q.HitRate, ServiceRate: s.serviceRate, QueueMean: q.QueueMean, QueueMax: q.QueueMax,
			Note: fmt.Sprintf(protectedNote, s.serviceRate, q.QueueMean, q.QueueMax)}
	}
	c := &rep.Canary
	c.Enabled = s.canary
	c.Checked, c.Mismatches = int64(st.CanaryChecked), int64(st.CanaryMismatches)
	switch {
	case !s.canary:
		c.Verdict = "off"
	case c.Mismatches == 0:
		c.Verdict = "ok"
	default:
		c.Verdict = "FAILED"
	}

	t := &rep.Throughput
	t.Seconds = elapsed.Seconds()
	t.Ops = ops
	if t.Seconds > 0 {
		t.OpsPerSec = float64(ops) / t.Seconds
		t.TokensPerSec = float64(inputTokens+outputTokens) / t.Seconds
	}
	rep.Latency = map[string]latencySummary{
		"arrive":  lat.arrive.summary(),
		"prefill": lat.prefill.summary(),
		"finish":  lat.finish.summary(),
		"evict":   lat.evict.summary(),
	}
	if s.outputTokens {
		rep.Latency["extend"] = lat.extend.summary()
	}
	return rep, nil
}

// memPools builds the Go-memory pools of a replay: a slot holds the
// canary record only.
func (s *settings) memPools(cfg core.Config) (native.Pools, error) {
	slotBytes := 0
	if s.canary {
		slotBytes = native.CanaryBytes
	}
	// The device KV pool allocates whole pages of the tree's page size
	// (without SWA, whose slots the controller maps one by one).
	page := max(s.pageSize, 1)
	if s.has(core.SWA) {
		page = 1
	}
	pool, err := native.NewPagedMemPool(s.capacity, slotBytes, page)
	if err != nil {
		return nil, err
	}
	pools := native.NewPoolSet(pool)
	type poolSpec struct {
		comp     core.Component
		tier     native.Tier
		capacity int
	}
	var specs []poolSpec
	for _, aux := range []poolSpec{{core.SWA, native.Device, s.swaCapacity}, {core.Mamba, native.Device, s.mambaCapacity}} {
		if s.has(aux.comp) {
			specs = append(specs, aux)
		}
	}
	if cfg.HostTier {
		for _, comp := range cfg.Components {
			specs = append(specs, poolSpec{comp, native.Host, s.hostPoolCapacity(comp)})
		}
	}
	for _, ps := range specs {
		p, err := native.NewMemPool(ps.capacity, slotBytes)
		if err == nil {
			err = pools.Set(ps.comp, ps.tier, p)
		}
		if err != nil {
			pools.Close()
			return nil, err
		}
	}
	return pools, nil
}

// lifecycleError explains a failed allocation in terms of the flags.
func (s *settings) lifecycleError(l *loaded, k int, op string, err error) error {
	if errors.Is(err, native.ErrPoolExhausted) {
		flags := fmt.Sprintf("--capacity %d", s.capacity)
		if s.has(core.SWA) {
			flags += fmt.Sprintf(", --swa-capacity %d", s.swaCapacity)
		}
		if s.has(core.Mamba) {
			flags += fmt.Sprintf(", --mamba-capacity %d", s.mambaCapacity)
		}
		return fmt.Errorf("capacity too small: %s: %s: %w (%s)", l.describe(k), op, err, flags)
	}
	return fmt.Errorf("%s: %s: %w", l.describe(k), op, err)
}
