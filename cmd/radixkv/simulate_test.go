package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/radixkv/radixkv/internal/simulate"
)

// TestSimulate_SameSeedSameOutput: two runs of one seed print the same
// bytes; every set runs and no violation is found.
func TestSimulate_SameSeedSameOutput(t *testing.T) {
	args := []string{"simulate", "--seed", "9", "--ops", "3000", "--engine", "inprocess", "--faults", "exhaust,pool,delay,transfer,host-full,write-through,garbage"}
	code, a, errOut := cli(t, args...)
	require.Equal(t, 0, code, errOut)
	_, b, _ := cli(t, args...)
	require.Equal(t, a, b)
	require.Equal(t, 4, strings.Count(a, "checks passed"))
	require.True(t, strings.HasSuffix(a, "no violations\n"))
	require.Contains(t, errOut, "ops/s")
}

// TestSimulate_ViolationShrinks: a planted violation at step 700 that
// needs only the delay fault is reported with its seed and step, shrunk
// to 700 ops and that one fault, and its requests written as a command
// log that replay --log runs.
func TestSimulate_ViolationShrinks(t *testing.T) {
	simulateCheck = func(step int, f map[simulate.Fault]bool) string {
		if step >= 700 && f[simulate.FaultDelay] {
			return "planted"
		}
		return ""
	}
	defer func() { simulateCheck = nil }()
	log := filepath.Join(t.TempDir(), "repro.log")
	code, out, errOut := cli(t, "simulate", "--seed", "4", "--ops", "5000", "--components", "full", "--repro-log", log)
	require.Equal(t, exitError, code)
	require.Contains(t, out, "VIOLATION seed 4 step 700: planted")
	require.Contains(t, out, "reproduce: radixkv simulate --seed 4 --ops 700 --faults delay --engine direct --components full\n")
	require.Contains(t, errOut, "violation at seed 4 step 700")
	_, err := os.Stat(log)
	require.NoError(t, err)
	code, rep, errOut := cli(t, "replay", "--engine", "direct", "--log", log)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, rep, "simulate seed 4 step 700")
}

func TestSimulate_FlagErrors(t *testing.T) {
	for _, tc := range []struct{ args, want string }{
		{"--faults nope", "unknown fault"},
		{"--engine x", "--engine \"x\""},
		{"--components full,x", "--components"},
		{"--ops 0", "--ops 0"},
	} {
		code, _, errOut := cli(t, append([]string{"simulate"}, strings.Fields(tc.args)...)...)
		require.Equal(t, exitError, code, tc.args)
		require.Contains(t, errOut, tc.want, tc.args)
	}
}
