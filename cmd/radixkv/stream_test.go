package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// syntheticTrace is a Mooncake trace of n requests in groups of four that
// share their first blocks, each of 1 to 4 blocks.
func syntheticTrace(n int) string {
	var sb strings.Builder
	next := int64(1000)
	for k := range n {
		blocks := 1 + k%4
		fmt.Fprintf(&sb, `{"timestamp": %d, "input_length": %d, "output_length": 3, "hash_ids": [%d`, k, 512*(blocks-1)+100+k%300, k/4)
		for range blocks - 1 {
			fmt.Fprintf(&sb, ", %d", next)
			next++
		}
		sb.WriteString("]}\n")
	}
	return sb.String()
}

// TestReplay_StreamedTraceLateErrors: the trace streams, so a bad line or
// an oversized request far into it is found after the replay has started;
// the run still fails with the file, the line and the field, exit status
// 1, and prints no report, on every engine.
func TestReplay_StreamedTraceLateErrors(t *testing.T) {
	good := syntheticTrace(300)
	for _, tc := range []struct {
		name  string
		trace string
		args  []string
		want  []string
	}{
		{"bad line", good + `{"timestamp": 9, "input_length": 600, "output_length": 4, "hash_ids": [1]}` + "\n" + goodLine,
			nil, []string{"late.jsonl:301: input_length 600 does not fit 1 hash_ids of 512 tokens"}},
		{"not json", good + "\n" + `{"timestamp": 9, "input_length":` + "\n",
			[]string{"--json"}, []string{"late.jsonl:302: invalid JSON"}},
		{"missing field", good + `{"timestamp": 9, "input_length": 600, "hash_ids": [1, 2]}` + "\n",
			nil, []string{`late.jsonl:301: missing field "output_length"`}},
		{"over the pool", good + `{"timestamp": 9, "input_length": 5000, "output_length": 4, "hash_ids": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]}` + "\n",
			[]string{"--capacity", "4000"}, []string{"capacity too small: workload: ", "late.jsonl:301: input_length 5000: ", "at most 4000 tokens", "--capacity"}},
		{"output over the pool", good + `{"timestamp": 9, "input_length": 1000, "output_length": 3500, "hash_ids": [1, 2]}` + "\n",
			[]string{"--capacity", "4000", "--output-tokens"}, []string{"capacity too small: request 300 (", "late.jsonl:301) needs 4500 KV slots (1000 input + 3500 output tokens)", "use --capacity 4500 or more"}},
	} {
		for _, engine := range availableEngines(t) {
			t.Run(tc.name+"/"+engine, func(t *testing.T) {
				p := writeFile(t, "late.jsonl", tc.trace)
				args := append([]string{"replay", "--engine", engine, "--trace", p, "--wasm-cache", filepath.Join(t.TempDir(), "c")}, tc.args...)
				code, out, errOut := cli(t, args...)
				require.Equal(t, exitError, code, errOut)
				require.Empty(t, out, "nothing may be reported")
				for _, w := range tc.want {
					require.Contains(t, errOut, w)
				}
				require.Equal(t, 1, strings.Count(errOut, "\n"), "one error line: %s", errOut)
			})
		}
	}
}

// TestReplay_StreamedTraceSameAsLog: replaying a trace as it streams gives
// the report of replaying the command log recorded from it, which holds
// the whole workload before the first request; and the report says when
// the first request ran.
func TestReplay_StreamedTraceSameAsLog(t *testing.T) {
	p := writeFile(t, "t.jsonl", syntheticTrace(400))
	log := filepath.Join(t.TempDir(), "t.log")
	code, _, errOut := cli(t, "record", "--out", log, "--trace", p, "--capacity", "20000")
	require.Equal(t, 0, code, errOut)
	for _, extra := range [][]string{nil, {"--output-tokens"}, {"--host-capacity", "40000"}} {
		args := append([]string{"--engine", "direct", "--capacity", "20000"}, extra...)
		before := time.Now().UnixNano()
		streamed := replayJSON(t, append(args, "--trace", p)...)
		tp := streamed["throughput"].(map[string]any)
		require.Greater(t, tp["startup_seconds"].(float64), 0.0)
		first := int64(tp["first_request_unix_ns"].(float64))
		require.Greater(t, first, before)
		require.Less(t, first, time.Now().UnixNano())
		require.Equal(t, 400.0, num(t, streamed, "requests"))
		require.Positive(t, num(t, streamed, "evictions", "nodes"))
		require.Contains(t, streamed, "offline_bound", "the bound is computed after the loop")

		fromLog := replayJSON(t, append(args, "--log", log)...)
		require.Equal(t, deterministic(fromLog), deterministic(streamed))
	}
}
