package core_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/internal/coresim"
	"github.com/radixkv/radixkv/workload"
)

// TestLHD_Sensitivity replays the shared trace at 1M and 3M tokens with
// each of lhd's constants halved and doubled (in its own scale), to show
// the results do not hinge on them. It prints a table and checks nothing;
// it runs only with RADIXKV_LHD_SENSITIVITY=1 (a minute or two).
func TestLHD_Sensitivity(t *testing.T) {
	if os.Getenv("RADIXKV_LHD_SENSITIVITY") == "" {
		t.Skip("set RADIXKV_LHD_SENSITIVITY=1 to run")
	}
	f, err := os.Open("../../shared/traces/mooncake_synthetic_trace.jsonl")
	if err != nil {
		t.Skip("no shared trace:", err)
	}
	defer f.Close()
	reqs, err := workload.ReadMooncake(f, "mooncake_synthetic_trace.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []struct {
		name                                    string
		subLog2, classes, history, decay, refit int
	}{
		{"default (4 buckets/octave, 4 classes, 16 caches of ghosts, decay 1/32, refit per cache)", 2, 4, 16, 5, 0},
		{"2 buckets per octave", 1, 4, 16, 5, 0},
		{"8 buckets per octave", 3, 4, 16, 5, 0},
		{"2 classes (returned or not)", 2, 2, 16, 5, 0},
		{"8 classes (up to 64+ returns)", 2, 8, 16, 5, 0},
		{"ghosts for 4 cache-sizes", 2, 4, 4, 5, 0},
		{"ghosts for 64 cache-sizes", 2, 4, 64, 5, 0},
		{"decay 1/8 per refit", 2, 4, 16, 3, 0},
		{"decay 1/128 per refit", 2, 4, 16, 7, 0},
		{"refit every quarter cache-size", 2, 4, 16, 5, -2},
		{"refit every 4 cache-sizes", 2, 4, 16, 5, 2},
	} {
		restore := core.SetLHDConstants(v.subLog2, v.classes, v.history, v.decay, v.refit)
		line := fmt.Sprintf("%-88s", v.name)
		for _, c := range []int{1000000, 3000000} {
			st, err := coresim.Run(coresim.Config{Capacity: c, PageSize: 16, Policy: "lhd"}, reqs)
			if err != nil {
				restore()
				t.Fatal(err)
			}
			line += fmt.Sprintf(" %6.2f%%", 100*st.HitRate)
		}
		restore()
		fmt.Println(line)
	}
}
