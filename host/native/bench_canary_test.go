//go:build unix

package native

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkStack_CanaryCPU replays the shared trace as
// BenchmarkStack_Replay/direct does, with the canary off and on in turn
// within each iteration, and measures the CPU time each replay takes (as
// BenchmarkStack_ReplayCPU does for the engines): the two replays of one
// iteration see the same machine, so their ratio is steadier than the
// wall-time figures of two sub-benchmarks. It reports each side's input
// tokens per CPU second and on/off, the canary-on share of the canary-off
// throughput, in CPU and in wall time. Within one run the two agree to
// about 0.01; the bar itself (0.5) is read on BenchmarkStack_Replay's wall
// tokens/s, direct+canary over direct, whose runs spread more
// (RATIONALE.md, "What the canary costs"):
//
//	go test ./host/native -run '^$' -bench 'Stack_CanaryCPU' -benchtime 2x -count 5
func BenchmarkStack_CanaryCPU(b *testing.B) {
	reqs := loadSharedTrace(b)
	var input int64
	for k := range reqs {
		input += int64(len(reqs[k].Tokens))
	}
	for _, capacity := range []int{1_000_000, 3_000_000} {
		b.Run(fmt.Sprintf("%dM", capacity/1_000_000), func(b *testing.B) {
			var spent, wall [2]time.Duration // off, on
			for b.Loop() {
				for i, canary := range [2]bool{false, true} {
					b.StopTimer()
					c := stackController(b, NewDirectEngine, capacity, 16, canary)
					b.StartTimer()
					t0, w0 := processCPU(b), time.Now()
					for k := range reqs {
						if err := serveOne(c, &reqs[k]); err != nil {
							b.Fatalf("canary %v: request %d: %v", canary, k, err)
						}
					}
					spent[i] += processCPU(b) - t0
					wall[i] += time.Since(w0)
					b.StopTimer()
					if canary && c.Stats().CanaryChecked == 0 {
						b.Fatal("the canary checked nothing")
					}
					if err := c.Close(); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
			}
			b.ReportMetric(float64(input)*float64(b.N)/spent[0].Seconds(), "off-tokens/cpu-s")
			b.ReportMetric(float64(input)*float64(b.N)/spent[1].Seconds(), "on-tokens/cpu-s")
			b.ReportMetric(float64(spent[0])/float64(spent[1]), "on/off")
			b.ReportMetric(float64(wall[0])/float64(wall[1]), "on/off-wall")
		})
	}
}
