package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/radixkv/radixkv/playground"
)

var updatePlayground = flag.Bool("update-playground", false, "rewrite playground/testdata/go-run.json from a Go replay of go-run.log")

// playgroundFixture is what the playground's Node tests compare the JS
// controller with: the deterministic counters of a Go replay of
// playground/testdata/go-run.log under each write policy, and of
// go-hybrid.log (full,swa,mamba) without and with a host tier.
const playgroundFixture = "../../playground/testdata/go-run.json"

// goRunCounters are the deterministic parts of a replay report.
type goRunCounters struct {
	Requests     int64 `json:"requests"`
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens,omitempty"`
	Computed     int64 `json:"computed_tokens"`
	Hits         struct {
		Device int64 `json:"device_tokens"`
		Host   int64 `json:"host_tokens"`
	} `json:"hits"`
	Evictions struct {
		Nodes  int64 `json:"nodes"`
		Tokens int64 `json:"tokens"`
	} `json:"evictions"`
	CachedTokens int64 `json:"cached_tokens"`
	HostTier     struct {
		LoadBacks        int64 `json:"load_backs"`
		LoadedTokens     int64 `json:"loaded_tokens"`
		LoadBacksSkipped int64 `json:"load_backs_skipped"`
		Backups          int64 `json:"backups"`
		BackedUpTokens   int64 `json:"backed_up_tokens"`
		WriteThroughs    int64 `json:"write_throughs"`
		BackupsRefused   int64 `json:"backups_refused"`
		Demoted          int64 `json:"demoted"`
		Dropped          int64 `json:"dropped"`
		HostEvictions    int64 `json:"host_evictions"`
		HostFreedTokens  int64 `json:"host_freed_tokens"`
		CachedHostTokens int64 `json:"cached_host_tokens"`
	} `json:"host_tier"`
	Hybrid *struct {
		SWAWindowFreed    int64 `json:"swa_window_freed"`
		SWAEarlyReleases  int64 `json:"swa_early_releases"`
		SWAEvicted        int64 `json:"swa_evicted"`
		CachedSWATokens   int64 `json:"cached_swa_tokens"`
		MambaForks        int64 `json:"mamba_forks"`
		MambaDonated      int64 `json:"mamba_donated"`
		MambaEvicted      int64 `json:"mamba_evicted"`
		CachedMambaStates int64 `json:"cached_mamba_states"`
	} `json:"hybrid,omitempty"`
	Canary struct {
		Checked    int64 `json:"checked_slots"`
		Mismatches int64 `json:"mismatches"`
	} `json:"canary"`
}

// TestPlayground_GoRunFixture keeps the playground's recorded Go run true:
// replaying its command log today gives the counters it holds.
func TestPlayground_GoRunFixture(t *testing.T) {
	got := map[string]goRunCounters{}
	for name, args := range map[string][]string{
		"write_through":             {"--log", "../../playground/testdata/go-run.log", "--write-policy", "write_through"},
		"write_back":                {"--log", "../../playground/testdata/go-run.log", "--write-policy", "write_back"},
		"hybrid":                    {"--log", "../../playground/testdata/go-hybrid.log"},
		"hybrid_host_write_through": {"--log", "../../playground/testdata/go-hybrid.log", "--host-capacity", "6000", "--write-policy", "write_through"},
		"hybrid_host_write_back":    {"--log", "../../playground/testdata/go-hybrid.log", "--host-capacity", "6000", "--write-policy", "write_back"},
		"hybrid_decode":             {"--log", "../../playground/testdata/go-hybrid.log", "--output-tokens"},
		"hybrid_host_decode":        {"--log", "../../playground/testdata/go-hybrid.log", "--output-tokens", "--host-capacity", "6000", "--write-policy", "write_back"},
	} {
		code, out, errs := cli(t, append([]string{"replay", "--json"}, args...)...)
		require.Equal(t, 0, code, errs)
		var c goRunCounters
		require.NoError(t, json.Unmarshal([]byte(out), &c))
		require.NotZero(t, c.Evictions.Nodes, "the fixture must evict")
		switch name {
		case "hybrid":
			require.NotNil(t, c.Hybrid)
			require.NotZero(t, c.Hybrid.MambaForks)
		case "hybrid_decode":
			require.NotZero(t, c.Hybrid.SWAWindowFreed, "the fixture must slide windows")
		case "hybrid_host_write_back", "hybrid_host_decode":
			require.NotZero(t, c.HostTier.Demoted, "the fixture must demote")
		default:
			require.NotZero(t, c.HostTier.LoadBacks, "the fixture must load back")
		}
		got[name] = c
	}
	want, err := json.MarshalIndent(got, "", "  ")
	require.NoError(t, err)
	want = append(want, '\n')
	if *updatePlayground {
		require.NoError(t, os.WriteFile(playgroundFixture, want, 0o644))
		return
	}
	have, err := os.ReadFile(playgroundFixture)
	require.NoError(t, err)
	require.Equal(t, string(want), string(have), "rewrite with go test ./cmd/radixkv -run TestPlayground_GoRunFixture -update-playground")
}

// TestPlayground_Serves checks the handler the playground command serves:
// every embedded file answers 200 with a JavaScript or wasm type where it
// must, and the module and codec are the very bytes of the repository.
func TestPlayground_Serves(t *testing.T) {
	srv := httptest.NewServer(playground.Handler())
	defer srv.Close()
	files, err := playground.Files()
	require.NoError(t, err)
	require.Contains(t, files, "/index.html")
	require.Contains(t, files, "/vendor/browser_wasi_shim/index.js")
	get := func(p string) (*http.Response, []byte) {
		resp, err := http.Get(srv.URL + p)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, b
	}
	for _, p := range files {
		resp, _ := get(p)
		require.Equal(t, http.StatusOK, resp.StatusCode, p)
		if strings.HasSuffix(p, ".js") || strings.HasSuffix(p, ".mjs") {
			require.Contains(t, resp.Header.Get("Content-Type"), "javascript", p)
		}
	}
	resp, body := get("/")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(body), "radixkv playground")
	for p, disk := range map[string]string{playground.ModulePath: "../../wasmmod/radixkv.wasm", playground.CodecPath: "../../abi/js/codec.mjs"} {
		resp, body := get(p)
		require.Equal(t, http.StatusOK, resp.StatusCode, p)
		b, err := os.ReadFile(disk)
		require.NoError(t, err)
		require.True(t, bytes.Equal(b, body), "%s differs from %s", p, disk)
	}
	resp, _ = get(playground.ModulePath)
	require.Equal(t, "application/wasm", resp.Header.Get("Content-Type"))
	resp, _ = get("/nope.txt")
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	r, err := http.Post(srv.URL+"/", "text/plain", nil)
	require.NoError(t, err)
	r.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, r.StatusCode)
}

func TestPlayground_BadArgs(t *testing.T) {
	code, _, errs := cli(t, "playground", "extra")
	require.Equal(t, exitUsage, code)
	require.Contains(t, errs, "unexpected argument")
	code, _, errs = cli(t, "playground", "--addr", "nonsense")
	require.Equal(t, exitError, code)
	require.Contains(t, errs, "host:port")
}
