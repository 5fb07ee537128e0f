package simulate

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

var sets = []string{"full", "full,swa", "full,mamba", "full,swa,mamba"}

// ciFaults is every fault.
const ciFaults = "all"

// TestRun_LoadBackHostRead is the defect the simulator found first: with
// load-backs in flight across calls (AsyncLoadBack) and delayed
// transfers, a write-back demotion's host eviction (startBackup ->
// hostRoom -> freeHost) freed and poisoned a host slot that an in-flight
// load-back batch still read. The controller now frees such a slot when
// the last batch reading it completed.
func TestRun_LoadBackHostRead(t *testing.T) {
	f, _ := ParseFaults("delay,abort-loadback")
	res := runOne(t, Config{Seed: 37, Ops: 2151, Faults: f, Engine: "direct", Components: "full"})
	require.Positive(t, res.Injected["abort-loadback"])
}

func runOne(t *testing.T, cfg Config) *Result {
	t.Helper()
	res, err := Run(cfg)
	var v *Violation
	if errors.As(err, &v) {
		t.Fatalf("%v", v)
	}
	require.NoError(t, err)
	return res
}

// TestRun_AllFaults runs every component set on every engine with every
// fault: no violation.
func TestRun_AllFaults(t *testing.T) {
	faults, err := ParseFaults(ciFaults)
	require.NoError(t, err)
	for _, eng := range []string{"direct", "inprocess", "wasm"} {
		for i, set := range sets {
			t.Run(eng+"/"+set, func(t *testing.T) {
				res := runOne(t, Config{Seed: uint64(10 + i), Ops: 3000, Faults: faults, Engine: eng, Components: set})
				var b bytes.Buffer
				res.Report(&b)
				t.Log(b.String())
			})
		}
	}
}

// TestRun_Deterministic: the same seed gives the same report, byte for
// byte.
func TestRun_Deterministic(t *testing.T) {
	faults, _ := ParseFaults(ciFaults)
	var out []string
	for range 2 {
		res := runOne(t, Config{Seed: 3, Ops: 2000, Faults: faults, Engine: "direct", Components: "full,swa"})
		var b bytes.Buffer
		res.Report(&b)
		out = append(out, b.String())
	}
	require.Equal(t, out[0], out[1])
}

// TestRun_Concurrent: worker goroutines on one controller, transfers
// completing on goroutines of their own, every fault (the race detector
// runs it in CI).
func TestRun_Concurrent(t *testing.T) {
	faults, _ := ParseFaults(ciFaults)
	for i, set := range sets {
		for _, eng := range []string{"direct", "inprocess"} {
			t.Run(set+"/"+eng, func(t *testing.T) {
				res := runOne(t, Config{Seed: uint64(5 + i), Ops: 4000, Faults: faults, Engine: eng, Components: set, Concurrent: true, Workers: 4})
				require.Positive(t, res.Checks, "the scheduler goroutine audited while requests ran")
				require.Positive(t, res.Finished)
				t.Logf("engine restarts while workers ran: %d", res.Injected["engine_restarted"])
			})
		}
	}
}

func TestParseFaults(t *testing.T) {
	f, err := ParseFaults("delay, garbage")
	require.NoError(t, err)
	require.Equal(t, "delay,garbage", FaultList(f))
	_, err = ParseFaults("nope")
	require.ErrorContains(t, err, "known: exhaust")
	_ = fmt.Sprint()
}

// TestRun_Trap: guest traps mid-call on every engine and component set,
// the engine replaced each time, every check passing after every step.
func TestRun_Trap(t *testing.T) {
	f, err := ParseFaults("trap,delay,abort-loadback")
	require.NoError(t, err)
	for _, eng := range []string{"direct", "inprocess", "wasm"} {
		for i, set := range sets {
			t.Run(eng+"/"+set, func(t *testing.T) {
				res := runOne(t, Config{Seed: uint64(40 + i), Ops: 3000, Faults: f, Engine: eng, Components: set, TrapEvery: 200})
				require.Positive(t, res.Injected["trap"])
				require.Positive(t, res.Injected["engine_replaced"])
			})
		}
	}
}

// TestRun_Regressions are violations the simulator found, each at the
// seed and step that exposed it.
func TestRun_Regressions(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    Config
		faults string
	}{
		// An arrival whose load-back made room by evicting, then failed
		// its copy, used its first match: that match's SWA window named
		// Full slots whose SWA side was gone (a canary mismatch).
		{"stale match after a failed load-back", Config{Seed: 5, Ops: 7460, Engine: "direct", Components: "full,swa", WritePolicy: "write_through"}, "transfer"},
		{"stale match after a failed load-back, all faults", Config{Seed: 1, Ops: 41846, Engine: "direct", Components: "full,swa"}, "all"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := ParseFaults(tc.faults)
			require.NoError(t, err)
			tc.cfg.Faults = f
			runOne(t, tc.cfg)
		})
	}
}
