package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/internal/coresim"
)

const sweepSynopsis = "sweep [--policies lru,lfu,...] [--capacities N,N,...] [--svg FILE] [--trace FILE | --log FILE | --seed N --requests N] [flags]"

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
	if err := s.parse(fs, args); err != nil {
		return err
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

	// Every cell is independent: spread them over the CPUs.
	res := make([][]sweepResult, len(pols))
	type cell struct{ p, c int }
	work := make(chan cell)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(pols)*len(caps)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for w := range work {
				st, err := coresim.Run(coresim.Config{Capacity: caps[w.c], PageSize: s.pageSize, Policy: pols[w.p]}, l.reqs)
				res[w.p][w.c] = sweepResult{st, err}
			}
		}()
	}
	for p := range pols {
		res[p] = make([]sweepResult, len(caps))
	}
	for p := range pols {
		for c := range caps {
			work <- cell{p, c}
		}
	}
	close(work)
	wg.Wait()
	for p := range pols {
		for c := range caps {
			if err := res[p][c].err; err != nil {
				return fmt.Errorf("policy %s, capacity %d: %w", pols[p], caps[c], err)
			}
		}
	}

	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(stdout, "hit rate by capacity (tokens) and policy; %s, page %d, %d requests\n", l.source, s.pageSize, len(l.reqs))
	fmt.Fprint(tw, "capacity\t")
	for _, p := range pols {
		fmt.Fprintf(tw, "%s\t", p)
	}
	fmt.Fprintln(tw)
	for c, cp := range caps {
		fmt.Fprintf(tw, "%s\t", count(cp))
		for p := range pols {
			fmt.Fprintf(tw, "%s\t", pct(res[p][c].stats.HitRate))
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if svgPath == "" {
		return nil
	}
	src := l.source
	if r := []rune(src); len(r) > 60 {
		src = string(r[:59]) + "…"
	}
	ch := chart{Title: fmt.Sprintf("Hit rate vs device capacity (%s)", src), XLabel: "device capacity (tokens)", YLabel: "hit rate", X: caps}
	for p, name := range pols {
		ser := series{Name: name}
		for c := range caps {
			ser.Y = append(ser.Y, res[p][c].stats.HitRate)
		}
		ch.Series = append(ch.Series, ser)
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
