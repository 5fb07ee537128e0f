package abifuzz

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/radixkv/radixkv/abi"
)

var (
	calls   = flag.Int64("abifuzz.calls", 20_000, "calls to make in total, split over the workers")
	workers = flag.Int("abifuzz.workers", 1, "module instances driven in parallel (one goroutine each, seeds seed..seed+workers-1); 0: one per CPU")
	seed    = flag.Uint64("abifuzz.seed", 1, "seed of the first worker")
)

// goldenCorpus is the golden vectors' requests: the mutation seeds.
func goldenCorpus(t testing.TB) [][]byte {
	raw, err := os.ReadFile("../../abi/testdata/vectors.json")
	require.NoError(t, err)
	var vs []struct {
		Request string `json:"request"`
	}
	require.NoError(t, json.Unmarshal(raw, &vs))
	var out [][]byte
	for _, v := range vs {
		b, err := hex.DecodeString(v.Request)
		require.NoError(t, err)
		out = append(out, b)
	}
	require.NotEmpty(t, out)
	return out
}

// compileShared compiles the module once per test binary, through an
// on-disk cache so repeated runs skip the compile.
var compileShared = sync.OnceValues(func() (*Module, error) {
	dir := ""
	if d, err := os.UserCacheDir(); err == nil {
		dir = filepath.Join(d, "radixkv", "wazero-test")
	}
	return Compile(context.Background(), dir)
})

// TestABIFuzz runs the fuzz budget (-abifuzz.calls) over the workers and
// prints the report: calls/s, calls per kind, answers per code, memory.
func TestABIFuzz(t *testing.T) {
	m, err := compileShared()
	require.NoError(t, err)
	n := *workers
	if n <= 0 {
		n = runtime.NumCPU()
	}
	corpus := goldenCorpus(t)
	reps := make([]*Report, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			per := *calls / int64(n)
			if w == 0 {
				per += *calls % int64(n)
			}
			reps[w], errs[w] = Run(context.Background(), m, Config{Seed: *seed + uint64(w), Calls: max(per, 1), ErrorStream: min(100_000, max(per/5, 50_000)),
				Progress: func(calls int64, mem uint32, live int) {
					t.Logf("worker %d: %d calls, linear memory %d MiB, %d live instances", w, calls, mem>>20, live)
				}}, corpus)
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	for _, err := range errs {
		require.NoError(t, err)
	}
	total := Report{Codes: map[abi.Code]int64{}}
	for _, r := range reps {
		total.Calls += r.Calls
		total.OK += r.OK
		total.Probes += r.Probes
		for k := range r.PerKind {
			total.PerKind[k] += r.PerKind[k]
		}
		for c, v := range r.Codes {
			total.Codes[c] += v
		}
		total.MaxMemory = max(total.MaxMemory, r.MaxMemory)
	}
	t.Logf("%d calls in %.1fs over %d instance(s): %.0f calls/s (%.0f per instance); %d probe rounds passed; max linear memory %d MiB",
		total.Calls, elapsed.Seconds(), n, float64(total.Calls)/elapsed.Seconds(), float64(total.Calls)/elapsed.Seconds()/float64(n), total.Probes, total.MaxMemory>>20)
	for k := range total.PerKind {
		t.Logf("  %-10s %d calls", Kind(k), total.PerKind[k])
	}
	codes := make([]abi.Code, 0, len(total.Codes))
	for c := range total.Codes {
		codes = append(codes, c)
	}
	sort.Slice(codes, func(i, j int) bool { return codes[i] < codes[j] })
	line := fmt.Sprintf("  ok %d", total.OK)
	for _, c := range codes {
		line += fmt.Sprintf(", %v %d", c, total.Codes[c])
	}
	t.Log(line)
	t.Logf("  error stream memory (worker 0): %d -> %d bytes", reps[0].ErrorStreamMemory[0], reps[0].ErrorStreamMemory[1])
}

// TestRun_Deterministic: the same seed makes the same stream and report.
func TestRun_Deterministic(t *testing.T) {
	m, err := compileShared()
	require.NoError(t, err)
	var got []*Report
	for range 2 {
		r, err := Run(context.Background(), m, Config{Seed: 7, Calls: 3000, ErrorStream: -1}, goldenCorpus(t))
		require.NoError(t, err)
		r.Elapsed = 0
		got = append(got, r)
	}
	require.Equal(t, got[0], got[1])
}

// TestCheckResponse_Rejects: the well-formedness check catches answers
// that break the spec's rules.
func TestCheckResponse_Rejects(t *testing.T) {
	req := abi.AppendRequest(nil, &abi.Request{Op: abi.OpStats, Instance: 5, ID: 9})
	good := abi.AppendResponse(nil, &abi.Response{Op: abi.OpStats, Instance: 5, ID: 9, Status: abi.StatusError, Code: abi.CodeUnknownInstance, Message: "no instance 5"})
	require.NoError(t, checkResponse(req, good))
	mutate := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	for name, bad := range map[string][]byte{
		"short":       good[:20],
		"magic":       mutate(func(b []byte) []byte { b[0] ^= 1; return b }),
		"echo":        mutate(func(b []byte) []byte { b[16] ^= 1; return b }),
		"status":      mutate(func(b []byte) []byte { b[8] = 2; return b }),
		"code":        mutate(func(b []byte) []byte { b[10] = 60; return b }),
		"internal":    abi.AppendResponse(nil, &abi.Response{Op: abi.OpStats, Instance: 5, ID: 9, Status: abi.StatusError, Code: abi.CodeInternal, Message: "x"}),
		"empty msg":   abi.AppendResponse(nil, &abi.Response{Op: abi.OpStats, Instance: 5, ID: 9, Status: abi.StatusError, Code: abi.CodeNoInsert}),
		"trailing":    append(append([]byte(nil), good...), 0),
		"wrong order": abi.AppendResponse(nil, &abi.Response{Op: abi.OpStats, Instance: 0, ID: 9, Status: abi.StatusError, Code: abi.CodeMalformed, Message: "x"}),
	} {
		require.Error(t, checkResponse(req, bad), name)
	}
	zero := abi.AppendRequest(nil, &abi.Request{Op: abi.OpStats, ID: 9})
	require.Error(t, checkResponse(zero, abi.AppendResponse(nil, &abi.Response{Op: abi.OpStats, ID: 9, Status: abi.StatusError, Code: abi.CodeMalformed, Message: "x"})), "instance 0 is unknown_instance, not malformed")
}
