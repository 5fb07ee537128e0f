package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/radixkv/radixkv/events"
	"github.com/radixkv/radixkv/internal/natsembed"
	"github.com/radixkv/radixkv/kvpub"
	"github.com/radixkv/radixkv/router"
)

func TestClusterSimJSON(t *testing.T) {
	code, out, errOut := cli(t, "cluster-sim", "--json", "--requests", "200", "--workers", "3", "--page-size", "16")
	require.Equal(t, 0, code, "stderr: %s", errOut)
	var m struct {
		Strategies map[string]struct {
			HitRate           float64 `json:"hit_rate"`
			RequestsPerWorker []int   `json:"requests_per_worker"`
			EventsPublished   int     `json:"events_published"`
		} `json:"strategies"`
		Workers int `json:"workers"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &m), out)
	require.Equal(t, 3, m.Workers)
	for _, s := range []string{"prefix_aware", "round_robin", "random"} {
		require.Contains(t, m.Strategies, s)
		require.Len(t, m.Strategies[s].RequestsPerWorker, 3)
		require.Greater(t, m.Strategies[s].EventsPublished, 0)
	}
	require.Greater(t, m.Strategies["prefix_aware"].HitRate, m.Strategies["round_robin"].HitRate)

	// Same workload, SGLang's map-shaped payloads: the same decisions.
	code, out2, errOut := cli(t, "cluster-sim", "--json", "--requests", "200", "--workers", "3", "--page-size", "16",
		"--format", "sglang/map", "--strategies", "prefix_aware")
	require.Equal(t, 0, code, "stderr: %s", errOut)
	var m2 struct {
		Strategies map[string]struct {
			HitRate float64 `json:"hit_rate"`
		} `json:"strategies"`
	}
	require.NoError(t, json.Unmarshal([]byte(out2), &m2))
	require.Equal(t, m.Strategies["prefix_aware"].HitRate, m2.Strategies["prefix_aware"].HitRate)

	code, _, errOut = cli(t, "cluster-sim", "--strategies", "best")
	require.Equal(t, exitError, code)
	require.Contains(t, errOut, "unknown strategy")
}

// TestClusterSimSharedTrace is the end-to-end run on the shared trace
// (skipped without it or with -short).
func TestClusterSimSharedTrace(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	var trace string
	for _, p := range sharedTraces {
		if _, err := os.Stat(p); err == nil {
			trace = p
		}
	}
	if trace == "" {
		t.Skip("shared trace not found")
	}
	code, out, errOut := cli(t, "cluster-sim", "--json", "--trace", trace, "--workers", "8")
	require.Equal(t, 0, code, "stderr: %s", errOut)
	var m struct {
		Strategies map[string]struct {
			HitRate             float64 `json:"hit_rate"`
			MaxOverMeanRequests float64 `json:"max_over_mean_requests"`
			MaxOverMeanComputed float64 `json:"max_over_mean_computed"`
		} `json:"strategies"`
		Ratio float64 `json:"prefix_over_round_robin"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &m))
	t.Logf("8 workers: prefix_aware %.3f, round_robin %.3f, random %.3f (%.2fx), prefix max/mean requests %.2f",
		m.Strategies["prefix_aware"].HitRate, m.Strategies["round_robin"].HitRate, m.Strategies["random"].HitRate,
		m.Ratio, m.Strategies["prefix_aware"].MaxOverMeanRequests)
	// The target: at least twice round-robin's hit rate with no
	// worker above 1.5x the mean load (requests, and prefill computed).
	// The simulation is deterministic, so this is not a flaky bound.
	require.GreaterOrEqual(t, m.Ratio, 2.0)
	require.LessOrEqual(t, m.Strategies["prefix_aware"].MaxOverMeanRequests, 1.5)
	require.LessOrEqual(t, m.Strategies["prefix_aware"].MaxOverMeanComputed, 1.5)
}

// TestRouterCommand runs `radixkv router --nats` against an embedded
// server that holds one worker's events, and checks its snapshot.
func TestRouterCommand(t *testing.T) {
	srv, err := natsembed.Start(t.TempDir())
	require.NoError(t, err)
	defer srv.Stop()
	nc, err := nats.Connect(srv.URL())
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	ctx := context.Background()
	p, err := kvpub.NewNATSPublisher(ctx, js, kvpub.NATSConfig{Model: "m", Worker: "w0", Epoch: 1})
	require.NoError(t, err)
	require.NoError(t, p.Publish(ctx, &events.Batch{Events: []events.Event{{Kind: events.BlockStored,
		BlockHashes: []int64{1, 2, 3}, BlockSize: 16, Medium: "GPU"}}}))
	snap := filepath.Join(t.TempDir(), "index.snap")
	code, out, errOut := cli(t, "router", "--nats", srv.URL(), "--http", "127.0.0.1:0", "--snapshot", snap,
		"--duration", (2500 * time.Millisecond).String())
	require.Equal(t, 0, code, "stderr: %s", errOut)
	require.Contains(t, out, "router: 3 blocks, 1 workers")
	b, err := os.ReadFile(snap)
	require.NoError(t, err)
	r, err := router.Restore(router.Config{}, b)
	require.NoError(t, err)
	require.Equal(t, 3, r.Stats().Blocks)
	// A second run restores the snapshot and resumes after its cursor.
	code, _, errOut = cli(t, "router", "--nats", srv.URL(), "--http", "", "--snapshot", snap, "--duration", "300ms")
	require.Equal(t, 0, code)
	require.Contains(t, errOut, "restored 3 blocks of 1 workers")

	code, _, _ = cli(t, "router")
	require.Equal(t, exitUsage, code)
}
