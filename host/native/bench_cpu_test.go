//go:build unix

package native

import (
	"context"
	"fmt"
	"runtime/pprof"
	"syscall"
	"testing"
	"time"
)

// processCPU returns the CPU time this process has used (all threads:
// the replay and the collector's workers).
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkStack_ReplayCPU replays the shared trace as
// BenchmarkStack_Replay does, on the direct and the in-process engine in
// turn within each iteration, and measures the CPU time each replay
// takes rather than the wall time: on a machine other work shares, wall
// time swings with that work from one sub-benchmark to the next, while
// the two replays of one iteration see the same machine. It reports each
// engine's input tokens per CPU second and their ratio (inprocess/direct,
// the in-process engine's share of the direct engine's throughput), and
// that ratio in wall time too (the engines alternating, so both see the
// same load):
//
//	go test ./host/native -run '^$' -bench 'Stack_ReplayCPU' -benchtime 3x -count 5
func BenchmarkStack_ReplayCPU(b *testing.B) {
	reqs := loadSharedTrace(b)
	var input int64
	for k := range reqs {
		input += int64(len(reqs[k].Tokens))
	}
	engines := []struct {
		name string
		new  engineCtor
	}{{"direct", NewDirectEngine}, {"inprocess", NewInProcessEngine}}
	for _, capacity := range []int{1_000_000, 3_000_000} {
		b.Run(fmt.Sprintf("%dM", capacity/1_000_000), func(b *testing.B) {
			spent := make([]time.Duration, len(engines))
			wall := make([]time.Duration, len(engines))
			for b.Loop() {
				for i, e := range engines {
					b.StopTimer()
					c := stackController(b, e.new, capacity, 16, false)
					b.StartTimer()
					t0, w0 := processCPU(b), time.Now()
					// Labelled, so that a CPU profile of the benchmark
					// splits by engine (-tagfocus engine=inprocess).
					pprof.Do(context.Background(), pprof.Labels("engine", e.name), func(context.Context) {
						for k := range reqs {
							if err := serveOne(c, &reqs[k]); err != nil {
								b.Fatalf("%s: request %d: %v", e.name, k, err)
							}
						}
					})
					spent[i] += processCPU(b) - t0
					wall[i] += time.Since(w0)
					b.StopTimer()
					if err := c.Close(); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
			}
			for i, e := range engines {
				b.ReportMetric(float64(input)*float64(b.N)/spent[i].Seconds(), e.name+"-tokens/cpu-s")
			}
			b.ReportMetric(float64(spent[0])/float64(spent[1]), "inprocess/direct")
			// The same in wall time, the two engines alternating.
			b.ReportMetric(float64(wall[0])/float64(wall[1]), "inprocess/direct-wall")
		})
	}
}
