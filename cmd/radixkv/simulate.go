package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/radixkv/radixkv/internal/simulate"
	"github.com/radixkv/radixkv/workload"
)

const simulateSynopsis = "simulate --seed S --ops N [--faults LIST] [--engine E|all] [--components C|all] [--write-policy P] [--concurrent] [--duration D]"

// simulateCheck is planted into every run by tests of the reporting.
var simulateCheck func(step int, faults map[simulate.Fault]bool) string

var simulateSets = []string{"full", "full,swa", "full,mamba", "full,swa,mamba"}

// runSimulate runs the deterministic simulator (internal/simulate) for
// every engine and component set asked for. Its standard output depends
// only on the flags (no timings: those go to stderr), so the same seed
// prints the same bytes. On a violation it shrinks the run, prints the
// reproduction and writes the failing run's requests as a command log.
func runSimulate(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("simulate", simulateSynopsis, stderr)
	seed := fs.Uint64("seed", 1, "seed of the run (and of the first run with --duration)")
	ops := fs.Int("ops", 100_000, "scheduler steps per engine and component set")
	faultList := fs.String("faults", "all", "faults to inject, comma-separated: exhaust, pool, delay, transfer, host-full, write-through, abort-loadback, garbage, trap; all or none")
	engine := fs.String("engine", "direct", "engine: direct, inprocess, wasm or all")
	components := fs.String("components", "all", "component set: full, full,swa, full,mamba, full,swa,mamba or all")
	writePolicy := fs.String("write-policy", "", "host-tier write policy: write_through or write_back (default: chosen by the seed)")
	concurrent := fs.Bool("concurrent", false, "run --workers goroutines on one controller, transfers completing on their own goroutines (not reproducible; for -race)")
	workers := fs.Int("workers", 4, "goroutines of --concurrent")
	duration := fs.Duration("duration", 0, "keep running seeds seed, seed+1, ... until this much time has passed (soak); 0: one seed")
	reproLog := fs.String("repro-log", "", "where a violation writes its command log (default simulate-seed-S.log)")
	var s settings
	if err := s.parse(fs, args); err != nil {
		return err
	}
	faults, err := simulate.ParseFaults(*faultList)
	if err != nil {
		return fmt.Errorf("--faults: %w", err)
	}
	if *ops < 1 {
		return fmt.Errorf("--ops %d: want at least 1", *ops)
	}
	engines := []string{*engine}
	if *engine == "all" {
		engines = engineNames
	}
	for _, e := range engines {
		if !contains(engineNames, e) {
			return fmt.Errorf("--engine %q: want %s or all", e, strings.Join(engineNames, ", "))
		}
	}
	sets := []string{*components}
	if *components == "all" {
		sets = simulateSets
	}
	for _, c := range sets {
		if !contains(simulateSets, c) {
			return fmt.Errorf("--components %q: want %s or all", c, strings.Join(simulateSets, ", "))
		}
	}
	start := time.Now()
	var total int
	for sd := *seed; ; sd++ {
		for _, e := range engines {
			for _, set := range sets {
				cfg := simulate.Config{Seed: sd, Ops: *ops, Faults: faults, Engine: e, Components: set,
					WritePolicy: *writePolicy, Concurrent: *concurrent, Workers: *workers, Check: simulateCheck}
				fmt.Fprintf(stdout, "simulate --seed %d --ops %d --faults %s --engine %s --components %s\n", sd, *ops, simulate.FaultList(faults), e, set)
				t0 := time.Now()
				res, err := simulate.Run(cfg)
				var v *simulate.Violation
				if errors.As(err, &v) {
					return reportViolation(stdout, cfg, v, *reproLog)
				}
				if err != nil {
					return err
				}
				res.Report(stdout)
				total += res.Ops
				el := time.Since(t0).Seconds()
				fmt.Fprintf(stderr, "  %d ops in %.2fs: %.0f ops/s\n", res.Ops, el, float64(res.Ops)/el)
			}
		}
		if *duration == 0 || time.Since(start) >= *duration {
			break
		}
	}
	fmt.Fprintf(stdout, "no violations\n")
	fmt.Fprintf(stderr, "%d ops in %.1fs: %.0f ops/s\n", total, time.Since(start).Seconds(), float64(total)/time.Since(start).Seconds())
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// reportViolation prints the violation, shrinks it (the shortest run that
// still fails is the failing step itself, as a run's first steps do not
// depend on its length; then every fault the failure does not need is
// dropped), prints the command that reproduces the shrunk failure and
// writes the requests of that run as a command log for replay --log.
func reportViolation(w io.Writer, cfg simulate.Config, v *simulate.Violation, logPath string) error {
	fmt.Fprintf(w, "VIOLATION seed %d step %d: %s\n", v.Seed, v.Step, v.Reason)
	if cfg.Concurrent {
		return fmt.Errorf("simulate: violation at seed %d (concurrent runs are not reproducible; rerun without --concurrent to shrink)", v.Seed)
	}
	fails := func(c simulate.Config) *simulate.Violation {
		_, err := simulate.Run(c)
		var nv *simulate.Violation
		if errors.As(err, &nv) {
			return nv
		}
		return nil
	}
	shrunk, best := cfg, v
	shrunk.Ops = v.Step
	if nv := fails(shrunk); nv != nil {
		best = nv
	} else {
		shrunk.Ops = cfg.Ops // the failure needs the wind-down at the end
	}
	for _, f := range simulate.AllFaults {
		if !shrunk.Faults[f] {
			continue
		}
		try := shrunk
		try.Faults = map[simulate.Fault]bool{}
		for k, on := range shrunk.Faults {
			try.Faults[k] = on && k != f
		}
		if nv := fails(try); nv != nil {
			shrunk, best = try, nv
			if nv.Step < shrunk.Ops {
				shrunk.Ops = nv.Step
			}
		}
	}
	wp := ""
	if shrunk.WritePolicy != "" {
		wp = " --write-policy " + shrunk.WritePolicy
	}
	fmt.Fprintf(w, "shrunk: step %d: %s\n", best.Step, best.Reason)
	fmt.Fprintf(w, "reproduce: radixkv simulate --seed %d --ops %d --faults %s --engine %s --components %s%s\n",
		shrunk.Seed, shrunk.Ops, simulate.FaultList(shrunk.Faults), shrunk.Engine, shrunk.Components, wp)
	if logPath == "" {
		logPath = fmt.Sprintf("simulate-seed-%d.log", shrunk.Seed)
	}
	if err := writeReproLog(logPath, shrunk, best); err != nil {
		fmt.Fprintf(w, "could not write the command log: %v\n", err)
	} else {
		fmt.Fprintf(w, "requests of the failing run (in arrival order, without its interleaving and faults): radixkv replay --log %s\n", logPath)
	}
	return fmt.Errorf("simulate: violation at seed %d step %d", best.Seed, best.Step)
}

// writeReproLog writes the requests of a failing run as a command log.
func writeReproLog(path string, cfg simulate.Config, v *simulate.Violation) error {
	if len(v.Requests) == 0 {
		return errors.New("the run had no requests")
	}
	s := settings{engine: cfg.Engine, components: cfg.Components, pageSize: 1, capacity: 1 << 16,
		policy: "lru", writePolicy: "write_through", canary: true, swaWindow: 8, swaCapacity: 1 << 16,
		mambaChunk: 1, mambaCapacity: 1 << 12, hostCapacity: 1 << 16}
	if cfg.WritePolicy != "" {
		s.writePolicy = cfg.WritePolicy
	}
	l := &loaded{source: fmt.Sprintf("simulate seed %d step %d", v.Seed, v.Step)}
	for _, p := range v.Requests {
		l.reqs = append(l.reqs, workload.Request{InputLength: len(p.Tokens), Tokens: p.Tokens, Namespace: p.Tenant})
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := writeLog(f, &s, l); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
