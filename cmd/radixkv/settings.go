package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/workload"
)

// Default device capacities (tokens) when --capacity is not given: the
// built-in workload's default 2000 requests hold about 600k distinct
// tokens, so 200k makes the cache evict; traces are usually far larger.
const (
	defaultGenCapacity   = 200_000
	defaultTraceCapacity = 1_000_000
)

// settings are the flags shared by replay, record and sweep.
type settings struct {
	cache string // replay only: tree or blocks
	// --cache blocks with mamba: the snapshot policy.
	mambaPolicy   string
	model         string
	marconiAlpha  float64
	marconiWindow int
	engine        string
	components    string
	pageSize      int
	capacity      int // 0: the default for the workload's source
	hostCapacity  int
	policy        string
	serviceRate   float64 // replay: tokens/s of the modelled queue (0: off)
	writePolicy   string
	canary        bool
	outputTokens  bool
	wasmCache     string // compilation cache directory; "off" or "": none

	// Hybrid models (--components with swa and/or mamba).
	swaWindow     int
	swaCapacity   int // 0: --capacity
	mambaChunk    int
	mambaCap      int
	mambaCapacity int // 0: --capacity / --page-size + 2

	trace    string
	logFile  string
	seed     uint64
	requests int
	tenants  int

	json  bool
	quiet bool

	gpu gpuFlags // replay --pools

	explicit map[string]bool // flags given on the command line
	// capacitySet is where a capacity was given explicitly (on the
	// command line or by a log's set line): 0 there is refused, not
	// taken for the default.
	capacitySet string
	// requestLimit bounds a request's input tokens while a workload is
	// read (the device pool's size, known before reading or from a log's
	// set line), so a file claiming more fails before its tokens are
	// allocated; 0: none yet.
	requestLimit int64
	sweeping     bool // sweep: a log's capacity does not bound its requests
	// capacityFlag names the flag that sets the device capacity in
	// messages: --capacity, or --capacities for sweep.
	capacityFlag string
}

// checkCapacitySet refuses a capacity given explicitly as 0 (or out of
// range) instead of taking it for the default.
func (s *settings) checkCapacitySet() error {
	if s.capacitySet == "" {
		return nil
	}
	if s.capacity == 0 {
		return fmt.Errorf("%s 0: the device pool needs at least one slot (leave --capacity out for the default: %d tokens for the built-in workload, %d for traces)",
			s.capacitySet, defaultGenCapacity, defaultTraceCapacity)
	}
	if s.capacity < 0 || int64(s.capacity) > 1<<31-1 {
		return fmt.Errorf("%s %d out of range [1, 2^31-1]", s.capacitySet, s.capacity)
	}
	return nil
}

// capFlag is the device capacity's flag name for messages.
func (s *settings) capFlag() string {
	if s.capacityFlag == "" {
		return "--capacity"
	}
	return s.capacityFlag
}

// newFlagSet returns a flag set that reports errors (with usage) to stderr
// and leaves exiting to run.
func newFlagSet(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: radixkv %s\n\nflags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// workloadFlags registers the flags that choose the workload.
func (s *settings) workloadFlags(fs *flag.FlagSet, withLog bool) {
	fs.StringVar(&s.trace, "trace", "", "Mooncake-format JSONL `file` to replay instead of the built-in workload")
	if withLog {
		fs.StringVar(&s.logFile, "log", "", "command log `file` written by radixkv record to replay")
	}
	fs.Uint64Var(&s.seed, "seed", 1, "seed of the built-in workload generator")
	fs.IntVar(&s.requests, "requests", 2000, "number of requests of the built-in workload")
	fs.IntVar(&s.tenants, "tenants", 0, "tenants of the built-in workload (above 1, tenants never share prefixes)")
}

// cacheFlags registers the flags that configure the cache.
func (s *settings) cacheFlags(fs *flag.FlagSet) {
	fs.StringVar(&s.engine, "engine", "wasm", "engine: wasm (radixkv.wasm under wazero), inprocess (ABI dispatcher in process) or direct (core.Tree)")
	fs.StringVar(&s.components, "components", "full", "component `set`: full, full,swa (sliding-window attention), full,mamba (recurrent state) or full,swa,mamba")
	fs.IntVar(&s.swaWindow, "swa-window", 4096, "SWA sliding window in `tokens` (with swa in --components)")
	fs.IntVar(&s.swaCapacity, "swa-capacity", 0, "SWA pool size in `tokens` (with swa; default: --capacity, which never runs short before the KV pool)")
	fs.IntVar(&s.mambaChunk, "mamba-chunk", 64, "Mamba checkpoint chunk in `tokens`: cached prefixes end on multiples of lcm(chunk, page size) (with mamba)")
	fs.IntVar(&s.mambaCap, "mamba-cap", 0, "Mamba states kept per root path, older ones dropped after each insert; 0: no cap (with mamba)")
	fs.IntVar(&s.mambaCapacity, "mamba-capacity", 0, "Mamba state pool size in `states` (with mamba; default: --capacity / --page-size + 2, which never runs short before the KV pool)")
	fs.IntVar(&s.pageSize, "page-size", 16, "page size in tokens (matching granularity)")
	fs.IntVar(&s.capacity, "capacity", 0, fmt.Sprintf("device KV pool size in `tokens` (default %d for the built-in workload, %d for traces)", defaultGenCapacity, defaultTraceCapacity))
	fs.IntVar(&s.hostCapacity, "host-capacity", 0, "host KV pool size in `tokens` for the host tier (HiCache), which keeps copies of device KV in host memory and loads them back on a hit; 0: no host tier (with swa the host SWA pool gets as many tokens, with mamba the host state pool --host-capacity / --page-size + 2 states)")
	fs.StringVar(&s.policy, "policy", "lru", "eviction policy: "+strings.Join(core.PolicyNames(), ", "))
	fs.StringVar(&s.writePolicy, "write-policy", "write_through", "host-tier write policy: write_through (copy a prefix to the host when it is cached) or write_back (copy a leaf when it is evicted from the device); no effect without --host-capacity")
	fs.BoolVar(&s.canary, "canary", true, "write a KV canary into every slot and verify every match against it")
	fs.StringVar(&s.wasmCache, "wasm-cache", defaultWasmCache(), "`dir`ectory that keeps the wasm engine's compiled code, so later runs skip compiling the module; off: compile in memory every run")
	fs.BoolVar(&s.outputTokens, "output-tokens", false, "append each request's output_length decoded tokens through Extend (deterministic ids)")
}

// parse parses args, remembers which flags were given and rejects
// positional arguments.
func (s *settings) parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return errUsage
	}
	s.explicit = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { s.explicit[f.Name] = true })
	if s.explicit["capacity"] {
		s.capacitySet = "--capacity"
		if err := s.checkCapacitySet(); err != nil {
			return err
		}
		s.requestLimit = int64(s.capacity)
	}
	return nil
}

// componentSet parses --components into core's components, in core's
// order, and their canonical spelling (e.g. "full,swa").
func (s *settings) componentSet() ([]core.Component, string, error) {
	var set core.ComponentSet
	for _, c := range strings.Split(s.components, ",") {
		var comp core.Component
		switch strings.ToLower(strings.TrimSpace(c)) {
		case "full":
			comp = core.Full
		case "swa":
			comp = core.SWA
		case "mamba":
			comp = core.Mamba
		default:
			return nil, "", fmt.Errorf("--components %s: unknown component %q (known: full, swa, mamba)", s.components, c)
		}
		if set.Has(comp) {
			return nil, "", fmt.Errorf("--components %s: %s is listed twice", s.components, comp)
		}
		set = set.With(comp)
	}
	if !set.Has(core.Full) {
		return nil, "", fmt.Errorf("--components %s: full is required (the sets are full, full,swa, full,mamba and full,swa,mamba)", s.components)
	}
	var comps []core.Component
	var names []string
	for _, comp := range []core.Component{core.Full, core.SWA, core.Mamba} {
		if set.Has(comp) {
			comps = append(comps, comp)
			names = append(names, comp.String())
		}
	}
	return comps, strings.Join(names, ","), nil
}

// has reports whether the component set names comp (after coreConfig
// validated it).
func (s *settings) has(comp core.Component) bool {
	comps, _, _ := s.componentSet()
	for _, c := range comps {
		if c == comp {
			return true
		}
	}
	return false
}

// coreConfig validates the cache settings and returns the tree's config.
func (s *settings) coreConfig() (core.Config, error) {
	comps, names, err := s.componentSet()
	if err != nil {
		return core.Config{}, err
	}
	s.components = names
	if s.hostCapacity < 0 || int64(s.hostCapacity) > 1<<31-1 {
		return core.Config{}, fmt.Errorf("--host-capacity %d out of range [0, 2^31-1] (0: no host tier)", s.hostCapacity)
	}
	if s.capacity < 0 || int64(s.capacity) > 1<<31-1 {
		return core.Config{}, fmt.Errorf("--capacity %d out of range [1, 2^31-1]", s.capacity)
	}
	if err := s.checkCapacitySet(); err != nil {
		return core.Config{}, err
	}
	var wp core.WritePolicy
	switch strings.ReplaceAll(strings.ToLower(s.writePolicy), "-", "_") {
	case "write_through":
		wp = core.WriteThrough
	case "write_back":
		wp = core.WriteBack
	default:
		return core.Config{}, fmt.Errorf("--write-policy %q: want write_through or write_back", s.writePolicy)
	}
	cfg := core.Config{PageSize: s.pageSize, Policy: s.policy, WritePolicy: wp, Components: comps, HostTier: s.hostCapacity > 0}
	if s.has(core.SWA) {
		if s.swaWindow < 1 {
			return core.Config{}, fmt.Errorf("--swa-window %d: must be at least 1", s.swaWindow)
		}
		if s.swaCapacity < 0 || int64(s.swaCapacity) > 1<<31-1 {
			return core.Config{}, fmt.Errorf("--swa-capacity %d out of range [1, 2^31-1]", s.swaCapacity)
		}
		cfg.SWAWindow = s.swaWindow
	} else if err := s.onlyWith("swa", "swa-window", "swa-capacity"); err != nil {
		return core.Config{}, err
	}
	if s.has(core.Mamba) {
		if s.mambaChunk < 1 {
			return core.Config{}, fmt.Errorf("--mamba-chunk %d: must be at least 1", s.mambaChunk)
		}
		if s.mambaCap < 0 {
			return core.Config{}, fmt.Errorf("--mamba-cap %d: must not be negative (0: no cap)", s.mambaCap)
		}
		if s.mambaCapacity < 0 || int64(s.mambaCapacity) > 1<<31-1 {
			return core.Config{}, fmt.Errorf("--mamba-capacity %d out of range [1, 2^31-1]", s.mambaCapacity)
		}
		cfg.MambaChunkSize, cfg.MambaMaxPathStates = s.mambaChunk, s.mambaCap
	} else if err := s.onlyWith("mamba", "mamba-chunk", "mamba-cap", "mamba-capacity"); err != nil {
		return core.Config{}, err
	}
	if _, err := core.New(cfg); err != nil {
		return core.Config{}, fmt.Errorf("invalid cache settings (--page-size %d, --policy %q, --components %s): %w", s.pageSize, s.policy, s.components, err)
	}
	return cfg, nil
}

// onlyWith rejects flags given explicitly for a component the set lacks.
func (s *settings) onlyWith(comp string, flags ...string) error {
	for _, f := range flags {
		if s.explicit[f] {
			return fmt.Errorf("--%s applies to the %s component, which --components %s lacks", f, comp, s.components)
		}
	}
	return nil
}

// loaded is a workload ready to replay. A trace or the built-in workload
// opened for streaming (openWorkload) fills reqs and where as fetch reads
// it; a log holds all its requests from the start.
type loaded struct {
	reqs   []workload.Request
	source string   // one-line description of where the requests came from
	where  []string // per request, e.g. "trace.jsonl:17"; nil for generated
	trace  bool     // from a trace (or a log recorded from one)

	// A streamed workload: nil once read to its end or its error.
	stream    *workload.Stream
	generated int // the requests a streamed built-in workload makes (0: a trace)
	file      *os.File
	path      string
	size      int64             // the file's size in bytes (progress)
	offset    int64             // bytes of the file read through the last request fetched
	err       error             // the stream's end: io.EOF or the error that ended it
	wrap      func(error) error // explains a stream error in terms of the flags
}

// describe names request k for error messages.
func (l *loaded) describe(k int) string {
	if k < len(l.where) {
		return fmt.Sprintf("request %d (%s)", k, l.where[k])
	}
	return fmt.Sprintf("request %d", k)
}

// fetch returns request k, reading the stream up to it if need be; io.EOF
// past the last request. A bad trace line fails here, when the replay
// reaches it, with its file, line and field; an empty trace fails on
// request 0. The request stays valid while l lives.
func (l *loaded) fetch(k int) (*workload.Request, error) {
	for k >= len(l.reqs) {
		if l.stream == nil {
			if l.err != nil && l.err != io.EOF {
				return nil, l.err
			}
			return nil, io.EOF
		}
		req, err := l.stream.Next()
		if err != nil {
			l.close()
			switch {
			case err == io.EOF && len(l.reqs) == 0:
				err = fmt.Errorf("trace %s holds no requests: nothing to replay", l.path)
			case err != io.EOF && l.wrap != nil:
				err = l.wrap(err)
			}
			l.err = err
			continue
		}
		l.reqs = append(l.reqs, req)
		if l.path != "" {
			l.where = append(l.where, l.path+":"+strconv.Itoa(l.stream.Line()))
			l.offset = l.stream.Offset()
		}
	}
	return &l.reqs[k], nil
}

// drain reads a streamed trace to its end, so that reqs holds every
// request; a bad line fails it.
func (l *loaded) drain() error {
	_, err := l.fetch(math.MaxInt)
	if err == io.EOF {
		err = nil
	}
	return err
}

// close stops the stream (if any) and closes its file.
func (l *loaded) close() {
	if l.stream != nil {
		l.stream.Close()
		l.stream = nil
	}
	if l.file != nil {
		l.file.Close()
		l.file = nil
	}
}

// loadWorkload reads the trace or the log, or runs the generator, in full.
// A log's recorded settings fill every cache flag not given explicitly.
func (s *settings) loadWorkload() (*loaded, error) {
	l, err := s.openWorkload()
	if err != nil {
		return nil, err
	}
	if err := l.drain(); err != nil {
		return nil, err
	}
	return l, nil
}

// openWorkload is loadWorkload, except that a trace is only opened and the
// built-in workload only started: their requests are made ahead of the
// replay on a goroutine of their own (workload.Stream), so the first
// request runs as soon as it is read or generated. Close the result when
// done.
func (s *settings) openWorkload() (*loaded, error) {
	switch {
	case s.trace != "" && s.logFile != "":
		return nil, errors.New("--trace and --log are exclusive: a log already holds its workload")
	case s.logFile != "":
		return s.loadLog()
	case s.trace != "":
		if s.requestLimit == 0 {
			s.requestLimit = defaultTraceCapacity
		}
		limit := s.requestLimit
		l, err := openTrace(s.trace, limit)
		if err != nil {
			return nil, err
		}
		l.wrap = func(err error) error {
			if errors.Is(err, workload.ErrTooLarge) {
				return fmt.Errorf("capacity too small: %w (the device pool holds %d tokens, %s)", err, limit, s.capFlag())
			}
			return err
		}
		return l, nil
	}
	cfg := workload.DefaultGenConfig()
	cfg.Seed, cfg.Requests, cfg.Tenants = s.seed, s.requests, s.tenants
	st, err := workload.GenerateStream(cfg, 0)
	if err != nil {
		return nil, fmt.Errorf("built-in workload: %w", err)
	}
	return &loaded{stream: st, generated: cfg.Requests,
		source: fmt.Sprintf("generated seed=%d requests=%d tenants=%d", s.seed, s.requests, s.tenants)}, nil
}

// tokenBudget is how many input tokens a run keeps in memory at most: a
// quarter of the memory available (4 bytes a token, so a sixteenth of it
// in tokens), or 2^31 where the system does not say.
func tokenBudget() int64 {
	if avail, ok := availableMemory(); ok {
		return max(int64(avail/16), 1<<20)
	}
	return 1 << 31
}

// openTrace opens a Mooncake trace for streaming (see loaded.fetch). A
// request over perRequest input tokens (0: no limit), or a trace past
// tokenBudget, fails on its line before its tokens are allocated.
func openTrace(path string, perRequest int64) (*loaded, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	l := &loaded{source: "trace " + path, trace: true, file: f, path: path}
	if fi, err := f.Stat(); err == nil {
		l.size = fi.Size()
	}
	rd := workload.NewMooncakeReader(f, path)
	rd.Limit(perRequest, tokenBudget())
	l.stream = rd.Stream(0)
	return l, nil
}

// resolveCapacity fills the default capacities for the workload's source
// (after coreConfig validated the settings).
func (s *settings) resolveCapacity(l *loaded) {
	if s.capacity == 0 {
		s.capacity = defaultGenCapacity
		if l.trace {
			s.capacity = defaultTraceCapacity
		}
	}
	if s.has(core.SWA) && s.swaCapacity == 0 {
		s.swaCapacity = s.capacity
	}
	if s.has(core.Mamba) && s.mambaCapacity == 0 {
		s.mambaCapacity = s.capacity/max(s.pageSize, 1) + 2
	}
}

// hostPoolCapacity is the size of component comp's host pool: the
// --host-capacity tokens for Full and SWA, a state per page of them (and
// two spare) for Mamba, as the device defaults.
func (s *settings) hostPoolCapacity(comp core.Component) int {
	if comp == core.Mamba {
		return s.hostCapacity/max(s.pageSize, 1) + 2
	}
	return s.hostCapacity
}

// checkFits rejects, before anything runs, a request that could not be
// served even by an otherwise empty pool.
func (s *settings) checkFits(l *loaded) error {
	for k := range l.reqs {
		if err := s.checkFit(l, k); err != nil {
			return err
		}
	}
	return s.checkMambaFits()
}

// checkFit rejects request k if it could not be served even by an
// otherwise empty pool.
func (s *settings) checkFit(l *loaded, k int) error {
	r := &l.reqs[k]
	out := 0
	if s.outputTokens {
		out = r.OutputLength
	}
	if need := len(r.Tokens) + out; need > s.capacity {
		return fmt.Errorf("capacity too small: %s needs %d KV slots (%d input + %d output tokens) but the device pool holds %d tokens (%s); use %s %d or more",
			l.describe(k), need, len(r.Tokens), out, s.capacity, s.capFlag(), s.capFlag(), need)
	}
	// Prefill gives every prompt token an SWA slot; decoding frees
	// those that leave the window.
	if need := max(len(r.Tokens), min(len(r.Tokens)+out, s.swaWindow+2*s.pageSize)); s.has(core.SWA) && need > s.swaCapacity {
		return fmt.Errorf("SWA capacity too small: %s needs %d SWA slots but the SWA pool holds %d tokens (--swa-capacity); use --swa-capacity %d or more",
			l.describe(k), need, s.swaCapacity, need)
	}
	return nil
}

// checkMambaFits rejects a Mamba state pool without a slot.
func (s *settings) checkMambaFits() error {
	if s.has(core.Mamba) && s.mambaCapacity < 1 {
		return fmt.Errorf("Mamba capacity too small: a request needs a state slot but --mamba-capacity is %d", s.mambaCapacity)
	}
	return nil
}

// namespace maps a workload tenant to the tree's namespace the way
// internal/coresim does, so both give the same hit rate.
func namespace(tenant string) core.Namespace {
	return core.Namespace{CacheSalt: tenant}
}
