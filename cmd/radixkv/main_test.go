package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/internal/coresim"
	"github.com/radixkv/radixkv/workload"
)

// sharedTraces are where the Mooncake trace shared by the project's tests
// may lie: beside the repository (../shared from its root) or in a shared/
// folder inside it.
var sharedTraces = []string{
	"../../../shared/traces/mooncake_synthetic_trace.jsonl",
	"../../shared/traces/mooncake_synthetic_trace.jsonl",
}

// cli runs the command line in process.
func cli(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return code, o.String(), e.String()
}

// availableEngines lists the engines this build provides.
func availableEngines(t *testing.T) []string {
	var out []string
	for _, name := range engineNames {
		eng, err := newEngine(name, core.Config{PageSize: 16}, t.TempDir())
		require.NoError(t, err)
		require.NoError(t, eng.Close())
		out = append(out, name)
	}
	require.Equal(t, engineNames, out)
	return out
}

// replayJSON runs replay --json with args and decodes the report.
func replayJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	code, out, errOut := cli(t, append([]string{"replay", "--json"}, args...)...)
	require.Equal(t, 0, code, "stderr: %s", errOut)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &m), "stdout: %s", out)
	return m
}

func num(t *testing.T, m map[string]any, path ...string) float64 {
	t.Helper()
	var v any = m
	for _, p := range path {
		obj, ok := v.(map[string]any)
		require.True(t, ok, "%v: not an object at %q", path, p)
		v, ok = obj[p]
		require.True(t, ok, "missing key %v", path)
	}
	f, ok := v.(float64)
	require.True(t, ok, "%v is %T, want a number", path, v)
	return f
}

func TestReplay_BuiltinEndToEnd(t *testing.T) {
	for _, engine := range availableEngines(t) {
		t.Run(engine, func(t *testing.T) {
			code, out, errOut := cli(t, "replay", "--engine", engine, "--requests", "300", "--capacity", "40000")
			require.Equal(t, 0, code, "stderr: %s", errOut)
			require.Empty(t, errOut)
			require.Regexp(t, `(?m)^  engine +`+engine+`$`, out)
			require.Regexp(t, `(?m)^canary +ok `, out)
			for _, want := range []string{
				"requests", "input tokens", "hit rate", "device", "host",
				"prefill tokens saved", "evictions", "bytes written", "bytes moved",
				"throughput", "ops/s", "tokens/s", "p50", "p90", "p99", "max",
				"arrive", "prefill", "finish", "evict",
			} {
				require.Contains(t, out, want)
			}
		})
	}
}

func TestReplay_JSONSchema(t *testing.T) {
	m := replayJSON(t, "--engine", "direct", "--requests", "300", "--capacity", "40000", "--output-tokens")
	for _, k := range []string{"hit_rate", "requests", "input_tokens", "output_tokens", "computed_tokens", "prefill_tokens_saved", "cached_tokens"} {
		num(t, m, k)
	}
	for _, k := range []string{"engine", "workload"} {
		require.IsType(t, "", m[k], k)
	}
	for _, k := range []string{"page_size", "capacity", "host_capacity"} {
		num(t, m, "settings", k)
	}
	for _, k := range []string{"device_tokens", "host_tokens", "total_tokens", "device_rate", "host_rate", "total_rate"} {
		num(t, m, "hits", k)
	}
	for _, k := range []string{"calls", "nodes", "tokens"} {
		num(t, m, "evictions", k)
	}
	num(t, m, "bytes", "written")
	num(t, m, "bytes", "moved")
	for _, k := range []string{"seconds", "ops", "ops_per_sec", "tokens_per_sec"} {
		num(t, m, "throughput", k)
	}
	for _, op := range []string{"arrive", "prefill", "extend", "finish", "evict"} {
		for _, k := range []string{"count", "p50", "p90", "p99", "max"} {
			num(t, m, "latency_ns", op, k)
		}
	}
	canary := m["canary"].(map[string]any)
	require.Equal(t, true, canary["enabled"])
	require.Equal(t, "ok", canary["verdict"])
	num(t, m, "canary", "checked_slots")

	require.Equal(t, 300.0, num(t, m, "requests"))
	require.Positive(t, num(t, m, "output_tokens"))
	require.Positive(t, num(t, m, "evictions", "nodes"), "the workload should evict")
	require.Equal(t, 0.0, num(t, m, "hits", "host_tokens"))
	require.Contains(t, m["hits"].(map[string]any)["host_note"], "no host tier")
	require.Nil(t, m["host_tier"], "no host tier, no host_tier object")
	require.Equal(t, 0.0, num(t, m, "bytes", "moved"))
	hit := num(t, m, "hits", "total_tokens") / num(t, m, "input_tokens")
	require.InDelta(t, hit, num(t, m, "hit_rate"), 1e-12)
	require.Equal(t, num(t, m, "hits", "total_tokens"), num(t, m, "prefill_tokens_saved"))
}

// writeFile writes content to a file in a fresh directory.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

const goodLine = `{"timestamp": 0, "input_length": 600, "output_length": 4, "hash_ids": [1, 2]}` + "\n"

func TestReplay_MalformedTrace(t *testing.T) {
	p := writeFile(t, "bad.jsonl", goodLine+goodLine+`{"timestamp": 1, "input_length": 600, "output_length": 4, "hash_ids": [1]}`+"\n")
	code, out, errOut := cli(t, "replay", "--engine", "direct", "--trace", p)
	require.Equal(t, 1, code)
	require.Empty(t, out, "nothing may be reported")
	require.Contains(t, errOut, "bad.jsonl:3")

	p = writeFile(t, "notjson.jsonl", goodLine+"\n{oops\n")
	code, out, errOut = cli(t, "replay", "--engine", "direct", "--trace", p, "--json")
	require.Equal(t, 1, code)
	require.Empty(t, out)
	require.Contains(t, errOut, "notjson.jsonl:3")
}

func TestReplay_EmptyTrace(t *testing.T) {
	for _, content := range []string{"", "\n\n  \n"} {
		p := writeFile(t, "empty.jsonl", content)
		code, out, errOut := cli(t, "replay", "--engine", "direct", "--trace", p)
		require.Equal(t, 1, code)
		require.Empty(t, out)
		require.Contains(t, errOut, "holds no requests")
	}
}

func TestUsageErrors(t *testing.T) {
	code, out, errOut := cli(t, "replay", "--no-such-flag")
	require.Equal(t, 2, code)
	require.Empty(t, out)
	require.Contains(t, errOut, "usage: radixkv replay")

	code, _, errOut = cli(t, "sweep", "--bogus")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "usage: radixkv sweep")

	code, _, errOut = cli(t, "frobnicate")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "unknown command")

	code, _, _ = cli(t)
	require.Equal(t, 2, code)

	code, _, errOut = cli(t, "record")
	require.Equal(t, 2, code, errOut)
	require.Contains(t, errOut, "--out")

	code, _, errOut = cli(t, "replay", "stray")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "unexpected argument")
}

func TestReplay_CapacityTooSmall(t *testing.T) {
	code, out, errOut := cli(t, "replay", "--engine", "direct", "--requests", "50", "--capacity", "500")
	require.Equal(t, 1, code)
	require.Empty(t, out)
	require.Contains(t, errOut, "capacity too small: request 0 needs")
	require.Contains(t, errOut, "holds 500 tokens")

	p := writeFile(t, "t.jsonl", goodLine+`{"timestamp": 1, "input_length": 2000, "output_length": 4, "hash_ids": [1, 2, 3, 4]}`+"\n")
	code, out, errOut = cli(t, "replay", "--engine", "direct", "--trace", p, "--capacity", "1000")
	require.Equal(t, 1, code)
	require.Empty(t, out)
	// Refused on its line, before its tokens are expanded.
	require.Contains(t, errOut, "capacity too small: workload: "+p+":2: input_length 2000: ")
	require.Contains(t, errOut, "at most 1000 tokens")
	require.Contains(t, errOut, "--capacity")
}

func TestReplay_SettingErrors(t *testing.T) {
	for _, tc := range []struct{ flag, value, want string }{
		{"--host-capacity", "-1", "--host-capacity -1 out of range"},
		{"--policy", "nope", "unknown eviction policy"},
		{"--page-size", "0", "--page-size 0"},
		{"--components", "swa", "full is required"},
		{"--components", "full,lora", "unknown component"},
		{"--components", "full,swa,swa", "listed twice"},
		{"--swa-window", "512", "applies to the swa component"},
		{"--mamba-cap", "2", "applies to the mamba component"},
		{"--write-policy", "sometimes", "write_through or write_back"},
		{"--engine", "quantum", "unknown engine"},
	} {
		code, out, errOut := cli(t, "replay", "--requests", "20", tc.flag, tc.value)
		require.Equal(t, 1, code, tc.flag)
		require.Empty(t, out)
		require.Contains(t, errOut, tc.want, tc.flag)
	}
}

// TestReplay_ComponentSets replays the built-in workload, with decoded
// output, through each component set on every engine: the report names
// the set and its parameters, every engine reports the same numbers, and
// the canary and the audit pass.
func TestReplay_ComponentSets(t *testing.T) {
	for _, set := range []string{"full", "full,swa", "full,mamba", "full,swa,mamba"} {
		t.Run(set, func(t *testing.T) {
			var want map[string]any
			for _, engine := range availableEngines(t) {
				args := []string{"--engine", engine, "--requests", "120", "--capacity", "30000", "--output-tokens", "--components", set}
				if strings.Contains(set, "swa") {
					args = append(args, "--swa-window", "256", "--swa-capacity", "20000")
				}
				if strings.Contains(set, "mamba") {
					args = append(args, "--mamba-chunk", "32", "--mamba-cap", "3", "--mamba-capacity", "64")
				}
				m := replayJSON(t, args...)
				settings := m["settings"].(map[string]any)
				require.Equal(t, set, settings["components"])
				require.Equal(t, "ok", m["canary"].(map[string]any)["verdict"])
				if set == "full" {
					require.Nil(t, m["hybrid"])
				} else {
					require.NotNil(t, m["hybrid"])
				}
				if strings.Contains(set, "swa") {
					require.Equal(t, 256.0, num(t, m, "settings", "swa_window"))
					require.Equal(t, 20000.0, num(t, m, "settings", "swa_capacity"))
					require.Positive(t, num(t, m, "hybrid", "swa_window_freed"))
					require.Positive(t, num(t, m, "hybrid", "cached_swa_tokens"))
				}
				if strings.Contains(set, "mamba") {
					require.Equal(t, 32.0, num(t, m, "settings", "mamba_chunk"))
					require.Equal(t, 3.0, num(t, m, "settings", "mamba_cap"))
					require.Equal(t, 64.0, num(t, m, "settings", "mamba_capacity"))
					require.Positive(t, num(t, m, "hybrid", "mamba_forks"))
					require.Positive(t, num(t, m, "hybrid", "mamba_evicted"), "64 states are too few for the workload")
				}
				m = deterministic(m)
				delete(m, "engine")
				if want == nil {
					want = m
				}
				require.Equal(t, want, m, "%s reports what the first engine did", engine)
			}
			code, out, errOut := cli(t, "replay", "--engine", "direct", "--requests", "50", "--components", set)
			require.Equal(t, 0, code, errOut)
			require.Regexp(t, `(?m)^  cache +`+set+`, page 16`, out)
			if strings.Contains(set, "swa") {
				require.Regexp(t, `(?m)^  swa +window 4,096 tokens, SWA pool 200,000 tokens$`, out)
				require.Regexp(t, `(?m)^swa +[0-9,]+ cached `, out)
			}
			if strings.Contains(set, "mamba") {
				require.Regexp(t, `(?m)^  mamba +chunk 64 tokens, state pool 12,502 states, no per-path cap$`, out)
				require.Regexp(t, `(?m)^mamba +[0-9,]+ states cached `, out)
			}
		})
	}

	// A hybrid log records the hybrid settings and replays identically.
	gen := []string{"--engine", "direct", "--requests", "100", "--seed", "3", "--output-tokens", "--capacity", "30000",
		"--components", "full,swa,mamba", "--swa-window", "128", "--mamba-chunk", "16", "--mamba-capacity", "40"}
	log := filepath.Join(t.TempDir(), "hybrid.log")
	code, _, errOut := cli(t, append([]string{"record", "--out", log}, gen...)...)
	require.Equal(t, 0, code, errOut)
	data, err := os.ReadFile(log)
	require.NoError(t, err)
	for _, line := range []string{"set components full,swa,mamba", "set swa-window 128", "set swa-capacity 30000", "set mamba-chunk 16", "set mamba-cap 0", "set mamba-capacity 40"} {
		require.Contains(t, string(data), line+"\n")
	}
	require.Equal(t, deterministic(replayJSON(t, gen...)), deterministic(replayJSON(t, "--log", log)))

	code, _, errOut = cli(t, "replay", "--engine", "direct", "--requests", "20", "--components", "full,swa", "--swa-capacity", "100")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "SWA capacity too small")
}

// deterministic drops the fields that depend on timing or on where the
// workload came from.
func deterministic(m map[string]any) map[string]any {
	delete(m, "throughput")
	delete(m, "latency_ns")
	delete(m, "workload")
	return m
}

func TestRecordReplayLog(t *testing.T) {
	for _, extra := range [][]string{
		{"--tenants", "3", "--capacity", "30000", "--policy", "lfu"},
		{"--output-tokens", "--capacity", "50000", "--page-size", "4"},
	} {
		gen := append([]string{"--engine", "direct", "--requests", "250", "--seed", "7"}, extra...)
		log := filepath.Join(t.TempDir(), "run.log")
		code, out, errOut := cli(t, append([]string{"record", "--out", log}, gen...)...)
		require.Equal(t, 0, code, errOut)
		require.Contains(t, out, "recorded 250 requests")

		want := deterministic(replayJSON(t, gen...))
		got := deterministic(replayJSON(t, "--log", log))
		require.Equal(t, want, got)
		require.Positive(t, num(t, got, "evictions", "nodes"))

		// The text report matches too, line for line, except timings
		// and the workload line.
		_, a, _ := cli(t, append([]string{"replay"}, gen...)...)
		_, b, _ := cli(t, "replay", "--log", log)
		require.Equal(t, stableLines(a), stableLines(b))
	}
}

// stableLines keeps the report lines that do not depend on timing.
func stableLines(report string) []string {
	var out []string
	timing := false
	for _, l := range strings.Split(report, "\n") {
		if strings.HasPrefix(l, "time") {
			timing = true // time, throughput and the latency table follow
		}
		if timing || strings.HasPrefix(l, "  workload") {
			continue
		}
		out = append(out, l)
	}
	return out
}

func TestReplayLog_Errors(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "ok.log")
	code, _, errOut := cli(t, "record", "--out", log, "--requests", "20")
	require.Equal(t, 0, code, errOut)
	data, err := os.ReadFile(log)
	require.NoError(t, err)
	lines := strings.SplitAfter(string(data), "\n")

	truncated := writeFile(t, "trunc.log", strings.Join(lines[:len(lines)-3], ""))
	code, out, errOut := cli(t, "replay", "--log", truncated)
	require.Equal(t, 1, code)
	require.Empty(t, out)
	require.Contains(t, errOut, "no end line")

	bad := slicesClone(lines)
	bad[14] = "req 0 1 2 3\n"
	p := writeFile(t, "bad.log", strings.Join(bad, ""))
	code, out, errOut = cli(t, "replay", "--log", p)
	require.Equal(t, 1, code)
	require.Empty(t, out)
	require.Contains(t, errOut, "bad.log:15")

	code, _, errOut = cli(t, "replay", "--log", writeFile(t, "x.log", "hello\n"))
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "not a radixkv command log")
}

func slicesClone(s []string) []string { return append([]string(nil), s...) }

func TestSweep_WritesSVG(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "chart.svg")
	code, out, errOut := cli(t, "sweep", "--requests", "300", "--policies", "lru,lfu,fifo", "--capacities", "20000,40000,80000,160000,320000", "--svg", svg)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "capacity")
	require.Contains(t, out, "lfu")
	require.Contains(t, out, "320,000")

	f, err := os.Open(svg)
	require.NoError(t, err)
	defer f.Close()
	dec := xml.NewDecoder(f)
	var polylines, texts int
	var root string
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		if se, ok := tok.(xml.StartElement); ok {
			if root == "" {
				root = se.Name.Local
			}
			switch se.Name.Local {
			case "polyline":
				polylines++
				for _, a := range se.Attr {
					if a.Name.Local == "points" {
						require.Len(t, strings.Fields(a.Value), 5)
					}
				}
			case "text":
				texts++
			}
		}
	}
	require.Equal(t, "svg", root)
	require.Equal(t, 3+1, polylines, "three policies and the dashed offline bound")
	require.Greater(t, texts, 11+5+3) // y ticks, x ticks, legend

	code, _, errOut = cli(t, "sweep", "--requests", "50", "--policies", "lru,bogus", "--svg", "")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "unknown eviction policy")
}

// requireSameAsCoresim replays reqs through the CLI (given the workload
// flags that produce them) and through coresim.Run, and requires the same
// hits and evictions to the token.
func requireSameAsCoresim(t *testing.T, reqs []workload.Request, capacity, page int, policy string, workloadArgs ...string) {
	t.Helper()
	args := append([]string{"--engine", "direct", "--canary=false",
		"--capacity", strconv.Itoa(capacity), "--page-size", strconv.Itoa(page), "--policy", policy}, workloadArgs...)
	m := replayJSON(t, args...)
	st, err := coresim.Run(coresim.Config{Capacity: capacity, PageSize: page, Policy: policy}, reqs)
	require.NoError(t, err)
	require.Equal(t, float64(st.Requests), num(t, m, "requests"))
	require.Equal(t, float64(st.InputTokens), num(t, m, "input_tokens"))
	require.Equal(t, float64(st.MatchedTokens), num(t, m, "hits", "total_tokens"))
	require.Equal(t, st.HitRate, num(t, m, "hit_rate"))
	require.Equal(t, float64(st.EvictedNodes), num(t, m, "evictions", "nodes"))
	require.Equal(t, float64(st.EvictedTokens), num(t, m, "evictions", "tokens"))
	require.Equal(t, float64(st.CachedTokens), num(t, m, "cached_tokens"))
	t.Logf("capacity %d page %d %s: hit rate %.4f, %d nodes evicted", capacity, page, policy, st.HitRate, st.EvictedNodes)
}

func TestHitRateMatchesCoresim_Generated(t *testing.T) {
	cfg := workload.DefaultGenConfig()
	cfg.Seed, cfg.Requests, cfg.Tenants = 3, 400, 2
	reqs, err := workload.Generate(cfg)
	require.NoError(t, err)
	for _, tc := range []struct {
		capacity, page int
		policy         string
	}{
		{50_000, 16, "lru"},
		{80_000, 1, "lfu"},
		{30_000, 32, "slru"},
	} {
		requireSameAsCoresim(t, reqs, tc.capacity, tc.page, tc.policy, "--seed", "3", "--requests", "400", "--tenants", "2")
	}
}

func TestHitRateMatchesCoresim_SharedTrace(t *testing.T) {
	var f *os.File
	var path string
	for _, p := range sharedTraces {
		var err error
		if f, err = os.Open(p); err == nil {
			path = p
			break
		}
	}
	if f == nil {
		t.Skipf("shared trace not present at %s", strings.Join(sharedTraces, " or "))
	}
	defer f.Close()
	capacities := []int{1_000_000, 3_000_000}
	if testing.Short() {
		// A prefix of the trace keeps -short fast.
		var b strings.Builder
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<24)
		for n := 0; n < 400 && sc.Scan(); n++ {
			b.WriteString(sc.Text() + "\n")
		}
		require.NoError(t, sc.Err())
		path = writeFile(t, "prefix.jsonl", b.String())
		capacities = []int{200_000}
	}
	data, err := os.Open(path)
	require.NoError(t, err)
	reqs, err := workload.ReadMooncake(data, path)
	data.Close()
	require.NoError(t, err)
	for _, c := range capacities {
		requireSameAsCoresim(t, reqs, c, 16, "lru", "--trace", path)
	}
	// With a host tier of four times the device (the numbers of core's
	// TestReplayHostTier), at the smaller device capacity.
	for _, wp := range []core.WritePolicy{core.WriteThrough, core.WriteBack} {
		requireHostSameAsCoresim(t, reqs, capacities[0], 4*capacities[0], wp, "--trace", path)
	}
}

// requireHostSameAsCoresim is requireSameAsCoresim with a host tier: the
// controller's backups, demotions, load-backs and host evictions give
// coresim.RunHost's device and host hits to the token.
func requireHostSameAsCoresim(t *testing.T, reqs []workload.Request, capacity, hostCapacity int, wp core.WritePolicy, workloadArgs ...string) map[string]any {
	t.Helper()
	args := append([]string{"--engine", "direct", "--canary=false", "--capacity", strconv.Itoa(capacity),
		"--host-capacity", strconv.Itoa(hostCapacity), "--write-policy", wp.String()}, workloadArgs...)
	m := replayJSON(t, args...)
	st, err := coresim.RunHost(coresim.HostConfig{Config: coresim.Config{Capacity: capacity, PageSize: 16, Policy: "lru"},
		HostCapacity: hostCapacity, WritePolicy: wp}, reqs)
	require.NoError(t, err)
	require.Equal(t, float64(st.MatchedTokens), num(t, m, "hits", "device_tokens"))
	require.Equal(t, float64(st.HostMatchedTokens), num(t, m, "hits", "host_tokens"))
	require.Equal(t, st.CombinedHitRate, num(t, m, "hit_rate"))
	require.Equal(t, float64(st.LoadBacks), num(t, m, "host_tier", "load_backs"))
	require.Equal(t, float64(st.BackedUpTokens), num(t, m, "host_tier", "backed_up_tokens"))
	require.Equal(t, float64(st.DemotedNodes), num(t, m, "host_tier", "demoted"))
	require.Equal(t, float64(st.DroppedNodes), num(t, m, "host_tier", "dropped"))
	require.Equal(t, float64(st.HostEvictedTokens), num(t, m, "host_tier", "host_freed_tokens"))
	require.Equal(t, float64(st.EvictedNodes), num(t, m, "evictions", "nodes"))
	t.Logf("capacity %d host %d %s: device %.4f host %.4f combined %.4f, %d load-backs, %d demoted",
		capacity, hostCapacity, wp, st.HitRate, st.HostHitRate, st.CombinedHitRate, st.LoadBacks, st.DemotedNodes)
	return m
}

// TestReplay_HostTier replays the built-in workload with a host tier under
// both write policies, on every component set and engine: every engine
// reports the same numbers, the canary and the audit pass, the report
// shows the host hits, and for {full} they equal coresim.RunHost's.
func TestReplay_HostTier(t *testing.T) {
	cfg := workload.DefaultGenConfig()
	cfg.Seed, cfg.Requests = 5, 300
	reqs, err := workload.Generate(cfg)
	require.NoError(t, err)
	for _, wp := range []core.WritePolicy{core.WriteThrough, core.WriteBack} {
		requireHostSameAsCoresim(t, reqs, 40_000, 80_000, wp, "--seed", "5", "--requests", "300")
		// A host smaller than the device: host evictions, and under
		// write-back drops.
		m := requireHostSameAsCoresim(t, reqs, 40_000, 12_000, wp, "--seed", "5", "--requests", "300")
		require.Positive(t, num(t, m, "host_tier", "host_evictions"))
		require.Positive(t, num(t, m, "host_tier", "backups_refused"))
		if wp == core.WriteBack {
			require.Positive(t, num(t, m, "host_tier", "dropped"))
		}
	}
	for _, set := range []string{"full", "full,swa", "full,mamba", "full,swa,mamba"} {
		for _, wp := range []string{"write_through", "write_back"} {
			t.Run(set+"/"+wp, func(t *testing.T) {
				var want map[string]any
				for _, engine := range availableEngines(t) {
					args := []string{"--engine", engine, "--requests", "120", "--capacity", "30000", "--host-capacity", "60000",
						"--write-policy", wp, "--output-tokens", "--components", set}
					if strings.Contains(set, "swa") {
						args = append(args, "--swa-window", "256", "--swa-capacity", "20000")
					}
					if strings.Contains(set, "mamba") {
						args = append(args, "--mamba-chunk", "32", "--mamba-capacity", "64")
					}
					m := replayJSON(t, args...)
					require.Equal(t, "ok", m["canary"].(map[string]any)["verdict"])
					require.Equal(t, 60000.0, num(t, m, "settings", "host_capacity"))
					require.Equal(t, wp, m["settings"].(map[string]any)["write_policy"])
					require.Positive(t, num(t, m, "hits", "host_tokens"))
					require.Positive(t, num(t, m, "host_tier", "load_backs"))
					require.Positive(t, num(t, m, "host_tier", "backups"))
					require.Positive(t, num(t, m, "host_tier", "cached_host_tokens"))
					require.Positive(t, num(t, m, "bytes", "moved"))
					require.Contains(t, m["hits"].(map[string]any)["host_note"], "loaded back")
					if wp == "write_back" {
						require.Positive(t, num(t, m, "host_tier", "demoted"))
					} else {
						require.Positive(t, num(t, m, "host_tier", "write_throughs"))
					}
					if strings.Contains(set, "swa") {
						require.Equal(t, 60000.0, num(t, m, "settings", "host_swa_capacity"))
					}
					if strings.Contains(set, "mamba") {
						require.Equal(t, 60000.0/16+2, num(t, m, "settings", "host_mamba_capacity"))
					}
					total := num(t, m, "hits", "device_tokens") + num(t, m, "hits", "host_tokens")
					require.Equal(t, total, num(t, m, "hits", "total_tokens"))
					require.Equal(t, total, num(t, m, "prefill_tokens_saved"))
					m = deterministic(m)
					delete(m, "engine")
					if want == nil {
						want = m
					}
					require.Equal(t, want, m, "%s reports what the first engine did", engine)
				}
			})
		}
	}

	// The text report.
	code, out, errOut := cli(t, "replay", "--engine", "direct", "--requests", "300", "--seed", "5", "--capacity", "40000",
		"--host-capacity", "80000", "--write-policy", "write_back", "--components", "full,mamba")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `(?m)^  cache +full,mamba, page 16, device 40,000 tokens, host 80,000 tokens, policy lru, write policy write_back$`, out)
	require.Regexp(t, `(?m)^  host pools +Mamba 5,002 states$`, out)
	require.Regexp(t, `(?m)^  host +[0-9.]+% +\([0-9,]+ tokens loaded back from host memory in [0-9,]+ load-backs\)$`, out)
	require.Regexp(t, `(?m)^host tier +[0-9,]+ tokens backed up +\([0-9,]+ nodes, `, out)
	require.Regexp(t, `(?m)^  write-back +[0-9,]+ leaves demoted +\([0-9,]+ dropped`, out)
	require.Regexp(t, `(?m)^  host memory +[0-9,]+ cached `, out)
	require.Regexp(t, `(?m)^bytes moved +[0-9,]+ +\(slot bytes copied between device and host pools\)$`, out)
	code, out, errOut = cli(t, "replay", "--engine", "direct", "--requests", "50")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `(?m)^  host +0\.00% +\(no host tier \(--host-capacity 0\): every hit is a device hit\)$`, out)
	require.NotRegexp(t, `(?m)^host tier`, out)

	// A log records the host settings and replays identically.
	gen := []string{"--engine", "direct", "--requests", "100", "--seed", "3", "--capacity", "30000",
		"--host-capacity", "50000", "--write-policy", "write_back"}
	log := filepath.Join(t.TempDir(), "host.log")
	code, _, errOut = cli(t, append([]string{"record", "--out", log}, gen...)...)
	require.Equal(t, 0, code, errOut)
	data, err := os.ReadFile(log)
	require.NoError(t, err)
	for _, line := range []string{"set host-capacity 50000", "set write-policy write_back"} {
		require.Contains(t, string(data), line+"\n")
	}
	want := deterministic(replayJSON(t, gen...))
	require.Positive(t, num(t, want, "hits", "host_tokens"))
	require.Equal(t, want, deterministic(replayJSON(t, "--log", log)))
}

// TestSweep_OfflineBound checks the bound's column: present, at least every
// policy's hit rate in its row, and gone with --offline=false.
func TestSweep_OfflineBound(t *testing.T) {
	code, out, errOut := cli(t, "sweep", "--requests", "120", "--policies", "lru,lrfu", "--capacities", "20000,60000", "--svg", "")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, offlineLabel)
	require.Contains(t, out, "offline bound")
	rows := 0
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) != 4 || !strings.HasSuffix(f[3], "%") {
			continue
		}
		rows++
		var vals []float64
		for _, v := range f[1:] {
			x, err := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64)
			require.NoError(t, err)
			vals = append(vals, x)
		}
		require.GreaterOrEqual(t, vals[2], vals[0], line)
		require.GreaterOrEqual(t, vals[2], vals[1], line)
	}
	require.Equal(t, 2, rows, out)
	code, out, errOut = cli(t, "sweep", "--requests", "60", "--policies", "lru", "--capacities", "20000", "--svg", "", "--offline=false")
	require.Equal(t, 0, code, errOut)
	require.NotContains(t, out, offlineLabel)
}

// TestQueueProtection_CLI: --service-rate adds the +q columns to sweep and
// the protected line to replay (apart from the policy's own rate), and a
// bad rate is refused.
func TestQueueProtection_CLI(t *testing.T) {
	code, out, errOut := cli(t, "sweep", "--requests", "120", "--policies", "lru,admit", "--capacities", "20000",
		"--svg", "", "--offline=false", "--service-rate", "20000")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "lru+q")
	require.Contains(t, out, "admit+q")
	require.Contains(t, out, "scheduler-aware protection")
	m := replayJSON(t, "--requests", "120", "--capacity", "20000", "--service-rate", "20000", "--quiet")
	rate := num(t, m, "protected", "device_rate")
	require.Greater(t, rate, 0.0)
	require.Positive(t, num(t, m, "protected", "queue_max"))
	require.Less(t, rate, 1.0)
	for _, cmd := range []string{"sweep", "replay"} {
		code, _, errOut = cli(t, cmd, "--requests", "10", "--service-rate", "-1", "--svg", "")
		if cmd == "replay" {
			code, _, errOut = cli(t, cmd, "--requests", "10", "--service-rate", "-1")
		}
		require.NotEqual(t, 0, code)
		require.Contains(t, errOut, "--service-rate")
	}
}
