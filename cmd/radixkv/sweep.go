package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/internal/coresim"
	"github.com/radixkv/radixkv/internal/offline"
)

const sweepSynopsis = "sweep [--policies lru,lfu,...] [--capacities N,N,...] [--svg FILE] [--offline=false] [--service-rate TOKENS/S] [--trace FILE | --log FILE | --seed N --requests N] [flags]"

// Default sweep capacities (tokens) for the built-in workload and traces.
const (
	defaultGenCapacities   = "25000,50000,100000,200000,400000,800000"
	defaultTraceCapacities = "250000,500000,1000000,2000000,4000000"
)

// sweepResult is the hit rate of one (policy, capacity) cell.
type sweepResult struct {
	stats coresim.Stats
	err   error
}

func runSweep(args []string, stdout, stderr io.Writer) error {
	var s settings
	var policies, capacities, svgPath string
	fs := newFlagSet("sweep", sweepSynopsis, stderr)
	s.workloadFlags(fs, true)
	fs.IntVar(&s.pageSize, "page-size", 16, "page size in tokens (matching granularity)")
	fs.StringVar(&policies, "policies", "lru,lfu,fifo,slru,gdsf", "comma-separated eviction policies")
	fs.StringVar(&capacities, "capacities", "", fmt.Sprintf("comma-separated device capacities in tokens (default %s for the built-in workload, %s for traces)", defaultGenCapacities, defaultTraceCapacities))
	fs.StringVar(&svgPath, "svg", "sweep.svg", "SVG chart to write (empty: none)")
	withBound := true
	fs.BoolVar(&withBound, "offline", true, "also compute the offline bound (Belady's rule with the future known; a reference, not a policy)")
	var rate float64
	fs.Float64Var(&rate, "service-rate", 0, "also replay each policy with scheduler-aware protection: a FIFO server prefilling this many input tokens per second, fed at the workload's timestamps, protects the prefixes of the requests waiting in its queue (columns policy+q; 0: off)")
	if err := s.parse(fs, args); err != nil {
		return err
	}
	if !(rate >= 0) || math.IsInf(rate, 0) {
		return fmt.Errorf("--service-rate %v: must be a finite number of tokens per second ≥ 0", rate)
	}
	// Defaults a log's settings may replace; sweep ignores the rest.
	s.engine, s.components, s.policy, s.writePolicy = "direct", "full", "lru", "write_through"
	// No request may be larger than the largest capacity swept (checked
	// while reading, before its tokens are allocated).
	s.requestLimit = int64(maxCapacity(capacities))
	s.sweeping = true
	l, err := s.loadWorkload()
	if err != nil {
		return err
	}
	if s.pageSize < 1 {
		return fmt.Errorf("--page-size %d: must be at least 1", s.pageSize)
	}
	pols := splitList(policies)
	if len(pols) == 0 {
		return errors.New("--policies: no policy given")
	}
	for _, p := range pols {
		if _, err := core.New(core.Config{PageSize: s.pageSize, Policy: p}); err != nil {
			// core's error already lists the known policies.
			return fmt.Errorf("--policies: %w", err)
		}
	}
	if capacities == "" {
		capacities = defaultGenCapacities
		if l.trace {
			capacities = defaultTraceCapacities
		}
	}
	var caps []int
	for _, c := range splitList(capacities) {
		n, err := strconv.Atoi(strings.ReplaceAll(c, "_", ""))
		if err != nil || n < 1 || int64(n) > 1<<31-1 {
			return fmt.Errorf("--capacities: %q is not a capacity in [1, 2^31-1]", c)
		}
		caps = append(caps, n)
	}
	if len(caps) == 0 {
		return errors.New("--capacities: no capacity given")
	}
	s.capacityFlag = "--capacities"
	for _, c := range caps {
		s.capacity = c
		if err := s.checkFits(l); err != nil {
			return err
		}
	}

	// Every cell is independent: spread them over the CPUs. With a service
	// rate, rows len(pols).. are the same policies with protection.
	runs := len(pols)
	if rate > 0 {
		runs *= 2
	}
	res := make([][]sweepResult, runs)
	type cell struct{ p, c int }
	work := make(chan cell)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), runs*len(caps)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for w := range work {
				cfg := coresim.Config{Capacity: caps[w.c], PageSize: s.pageSize, Policy: pols[w.p%len(pols)]}
				if w.p >= len(pols) {
					cfg.ServiceRate = rate
				}
				st, err := coresim.Run(cfg, l.reqs)
				res[w.p][w.c] = sweepResult{st, err}
			}
		}()
	}
	for p := range runs {
		res[p] = make([]sweepResult, len(caps))
	}
	for p := range runs {
		for c := range caps {
			work <- cell{p, c}
		}
	}
	close(work)
	wg.Wait()
	names := slices.Clone(pols)
	if rate > 0 {
		for _, p := range pols {
			names = append(names, p+"+q")
		}
	}
	for p := range runs {
		for c := range caps {
			if err := res[p][c].err; err != nil {
				return fmt.Errorf("policy %s, capacity %d: %w", names[p], caps[c], err)
			}
		}
	}

	// The offline bound: a separate pass that reads the whole workload.
	var bound []float64
	if withBound {
		blocks, err := offline.NewBlocks(l.reqs, s.pageSize)
		if err != nil {
			return err
		}
		for _, cp := range caps {
			st, err := blocks.Belady(cp)
			if err != nil {
				return fmt.Errorf("offline bound, capacity %d: %w", cp, err)
			}
			bound = append(bound, st.HitRate)
		}
	}

	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(stdout, "hit rate by capacity (tokens) and policy; %s, page %d, %d requests\n", l.source, s.pageSize, len(l.reqs))
	fmt.Fprint(tw, "capacity\t")
	for _, p := range names {
		fmt.Fprintf(tw, "%s\t", p)
	}
	if withBound {
		fmt.Fprint(tw, offlineLabel+"\t")
	}
	fmt.Fprintln(tw)
	for c, cp := range caps {
		fmt.Fprintf(tw, "%s\t", count(cp))
		for p := range runs {
			fmt.Fprintf(tw, "%s\t", pct(res[p][c].stats.HitRate))
		}
		if withBound {
			fmt.Fprintf(tw, "%s\t", pct(bound[c]))
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if withBound {
		fmt.Fprintln(stdout, offlineNote)
	}
	if rate > 0 {
		q := res[len(pols)][0].stats
		fmt.Fprintf(stdout, queueNote, rate, q.QueueMean, q.QueueMax)
	}
	if svgPath == "" {
		return nil
	}
	src := l.source
	if r := []rune(src); len(r) > 60 {
		src = string(r[:59]) + "…"
	}
	ch := chart{Title: fmt.Sprintf("Hit rate vs device capacity (%s)", src), XLabel: "device capacity (tokens)", YLabel: "hit rate", X: caps}
	for p, name := range names {
		ser := series{Name: name}
		for c := range caps {
			ser.Y = append(ser.Y, res[p][c].stats.HitRate)
		}
		ch.Series = append(ch.Series, ser)
	}
	if withBound {
		ch.Series = append(ch.Series, series{Name: offlineLabel, Y: bound, Dashed: true})
	}
	f, err := os.Create(svgPath)
	if err != nil {
		return err
	}
	if err := ch.writeSVG(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "chart written to %s\n", svgPath)
	return nil
}

// queueNote explains the +q columns.
const queueNote = "+q: the same policy with scheduler-aware protection (not an online policy: it knows the queue):\n" +
	"  a FIFO server prefills %g input tokens/s from the workload's timestamps and protects the\n" +
	"  prefixes of the requests waiting in its queue (mean %.1f waiting, at most %d)\n"

// The offline bound's column and legend name, and the line that explains it.
const (
	offlineLabel = "offline*"
	offlineNote  = "* offline bound: evicts the leaf page whose next use is furthest in the future (Belady), knowing the\n  whole workload in advance; no online policy can reach it, it shows the headroom (internal/offline)"
)

// maxCapacity is the largest valid capacity in a --capacities value, or
// the largest default when it names none (errors are reported later).
func maxCapacity(capacities string) int {
	most := 0
	for _, c := range splitList(capacities) {
		if n, err := strconv.Atoi(strings.ReplaceAll(c, "_", "")); err == nil && n > 0 && int64(n) <= 1<<31-1 {
			most = max(most, n)
		}
	}
	if most == 0 {
		for _, c := range splitList(defaultGenCapacities + "," + defaultTraceCapacities) {
			n, _ := strconv.Atoi(c)
			most = max(most, n)
		}
	}
	return most
}

// splitList splits a comma-separated flag value, dropping blanks.
func splitList(v string) []string {
	var out []string
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
