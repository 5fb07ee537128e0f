package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/events"
	"github.com/radixkv/radixkv/internal/clustersim"
	"github.com/radixkv/radixkv/kvpub"
	"github.com/radixkv/radixkv/router"
)

const clusterSimSynopsis = "cluster-sim [--workers N] [--trace FILE | --seed N --requests N] [--json] [flags]"

// runClusterSim runs internal/clustersim on the chosen workload.
func runClusterSim(args []string, stdout, stderr io.Writer) error {
	var s settings
	var workers, capacity, page int
	var strategies, format string
	var weight float64
	var budget int64
	var jsonOut bool
	fs := newFlagSet("cluster-sim", clusterSimSynopsis, stderr)
	s.workloadFlags(fs, false)
	fs.IntVar(&workers, "workers", 4, "number of in-process workers")
	fs.IntVar(&capacity, "capacity", 0, "device KV `tokens` per worker (default 1000000 for traces, 200000 for the built-in workload)")
	fs.IntVar(&page, "page-size", 64, "page (block) size in tokens")
	fs.StringVar(&strategies, "strategies", "prefix_aware,round_robin,random", "comma-separated routing strategies")
	fs.StringVar(&format, "format", "vllm/array/v1", "event payload format: vllm|sglang / array|map [/v0|v1]")
	fs.Float64Var(&weight, "prefill-weight", 1, "w in the router's cost = w·prefill_blocks + active_blocks")
	fs.Int64Var(&budget, "index-budget", 0, "router index memory budget in `bytes` (0: unbounded)")
	var rseed uint64
	fs.Uint64Var(&rseed, "random-seed", 1, "seed of the random strategy")
	fs.BoolVar(&jsonOut, "json", false, "print the report as JSON")
	if err := s.parse(fs, args); err != nil {
		return err
	}
	f, err := events.ParseFormat(format)
	if err != nil {
		return fmt.Errorf("--format: %w", err)
	}
	l, err := s.loadWorkload()
	if err != nil {
		return err
	}
	if capacity == 0 {
		capacity = 200000
		if l.trace {
			capacity = 1000000
		}
	}
	dir, err := os.MkdirTemp("", "radixkv-cluster-sim-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rep, err := clustersim.Run(ctx, clustersim.Config{Workers: workers, PageSize: page, Capacity: capacity,
		Strategies: splitList(strategies), Seed: rseed, PrefillWeight: weight, BudgetBytes: budget,
		Format: f, StoreDir: dir}, l.reqs)
	if err != nil {
		return err
	}
	if jsonOut {
		out := struct {
			Source string `json:"source"`
			clustersim.Report
		}{l.source, rep}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	fmt.Fprintf(stdout, "cluster-sim: %s\n", l.source)
	fmt.Fprintf(stdout, "%d workers, %d tokens each, page %d, events %s over embedded NATS JetStream (loopback)\n\n",
		rep.Workers, rep.Capacity, rep.PageSize, rep.Format)
	fmt.Fprintf(stdout, "%-13s %8s %8s %8s %8s %8s %8s %8s %8s\n", "", "", "max/mean", "max/mean", "max/mean", "max/mean", "", "", "")
	fmt.Fprintf(stdout, "%-13s %8s %8s %8s %8s %8s %8s %8s %8s\n", "strategy", "hit rate", "requests", "computed", "active", "peak act", "batches", "events", "seconds")
	for _, name := range rep.StrategyNames() {
		r := rep.Strategies[name]
		fmt.Fprintf(stdout, "%-13s %7.1f%% %8.2f %8.2f %8.2f %8.2f %8d %8d %8.1f\n", name, 100*r.HitRate,
			r.MaxOverMeanRequests, r.MaxOverMeanComputed, r.MaxOverMeanActive, r.MaxOverMeanPeakActive,
			r.BatchesPublished, r.EventsPublished, r.WallSeconds)
	}
	if rep.PrefixOverRoundRobin > 0 {
		fmt.Fprintf(stdout, "\nprefix_aware hit rate / round_robin: %.2fx\n", rep.PrefixOverRoundRobin)
	}
	return nil
}

const routerSynopsis = "router --nats URL [--http ADDR] [--snapshot FILE] [--zmq NAME=PUB[,REPLAY]] [flags]"

// runRouter runs the KV router against an existing NATS server (and/or
// ZMQ publishers) until interrupted.
func runRouter(args []string, stdout, stderr io.Writer) error {
	var natsURL, httpAddr, snapPath, hash, dialect, stream, prefix string
	var zmqSources multiFlag
	var page int
	var budget int64
	var weight float64
	var every, duration time.Duration
	fs := newFlagSet("router", routerSynopsis, stderr)
	fs.StringVar(&natsURL, "nats", "", "NATS server `URL` whose JetStream carries the workers' events")
	fs.StringVar(&stream, "stream", kvpub.DefaultStream, "JetStream stream name")
	fs.StringVar(&prefix, "subject-prefix", kvpub.DefaultSubjectPrefix, "subject prefix (subjects are PREFIX.model.worker)")
	fs.Var(&zmqSources, "zmq", "a ZMQ publisher `NAME=tcp://host:port[,tcp://host:replayport]` (repeatable), e.g. a vLLM worker")
	fs.StringVar(&dialect, "dialect", "vllm", "dialect of array-shaped payloads without a format header: vllm or sglang")
	fs.StringVar(&httpAddr, "http", "127.0.0.1:8470", "HTTP JSON endpoint `address` (empty: none)")
	fs.IntVar(&page, "page-size", 16, "workers' block size in tokens, for route queries that send tokens")
	fs.StringVar(&hash, "hash", "sglang", "workers' hash convention for token queries: sglang or vllm")
	fs.Int64Var(&budget, "budget", 0, "index memory budget in `bytes` (0: unbounded)")
	fs.Float64Var(&weight, "prefill-weight", 1, "w in cost = w·prefill_blocks + active_blocks")
	fs.StringVar(&snapPath, "snapshot", "", "index snapshot `file`: restored at start when present, written periodically and at exit")
	fs.DurationVar(&every, "snapshot-every", 30*time.Second, "snapshot period")
	fs.DurationVar(&duration, "duration", 0, "stop after this long (0: run until interrupted)")
	var s settings
	if err := s.parse(fs, args); err != nil {
		return err
	}
	if natsURL == "" && len(zmqSources) == 0 {
		fmt.Fprintln(stderr, "router: give --nats URL and/or --zmq sources")
		fs.Usage()
		return errUsage
	}
	var d events.Dialect
	switch dialect {
	case "vllm":
	case "sglang":
		d = events.SGLang
	default:
		return fmt.Errorf("--dialect %q: want vllm or sglang", dialect)
	}
	conv := core.HashSGLang
	switch hash {
	case "sglang":
	case "vllm":
		conv = core.HashVLLM
	default:
		return fmt.Errorf("--hash %q: want sglang or vllm", hash)
	}
	cfg := router.Config{BudgetBytes: budget, PrefillWeight: weight}
	r, err := router.New(cfg)
	if err != nil {
		return err
	}
	if snapPath != "" {
		if b, err := os.ReadFile(snapPath); err == nil {
			if r, err = router.Restore(cfg, b); err != nil {
				return fmt.Errorf("--snapshot %s: %w", snapPath, err)
			}
			st := r.Stats()
			fmt.Fprintf(stderr, "router: restored %d blocks of %d workers from %s (stream cursor %d)\n",
				st.Blocks, len(st.Workers), snapPath, r.Cursor())
		} else if !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, duration)
		defer cancel()
	}
	if natsURL != "" {
		nc, err := nats.Connect(natsURL, nats.MaxReconnects(-1), nats.Name("radixkv-router"))
		if err != nil {
			return fmt.Errorf("--nats %s: %w", natsURL, err)
		}
		defer nc.Close()
		js, err := jetstream.New(nc)
		if err != nil {
			return err
		}
		cons, err := kvpub.ConsumeNATS(ctx, js, r, kvpub.NATSConsumerConfig{Stream: stream, SubjectPrefix: prefix, Dialect: d})
		if err != nil {
			return err
		}
		defer cons.Stop()
	}
	for _, src := range zmqSources {
		name, eps, ok := strings.Cut(src, "=")
		if !ok || name == "" {
			return fmt.Errorf("--zmq %q: want NAME=tcp://host:port[,tcp://host:replayport]", src)
		}
		pub, replay, _ := strings.Cut(eps, ",")
		sub, err := kvpub.NewZMQSubscriber(ctx, r, kvpub.ZMQSource{Worker: name, Endpoint: pub, ReplayEndpoint: replay, Dialect: d})
		if err != nil {
			return err
		}
		go func() { _ = sub.Run(ctx) }()
	}
	if httpAddr != "" {
		h, err := router.Handler(r, router.HTTPOptions{PageSize: page, Convention: conv})
		if err != nil {
			return err
		}
		ln, err := net.Listen("tcp", httpAddr)
		if err != nil {
			return fmt.Errorf("--http %s: %w", httpAddr, err)
		}
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
		fmt.Fprintf(stderr, "router: HTTP on http://%s (POST /route, POST /complete, GET /stats, GET /snapshot)\n", ln.Addr())
	}
	save := func() error {
		if snapPath == "" {
			return nil
		}
		tmp := snapPath + ".tmp"
		if err := os.WriteFile(tmp, r.Snapshot(), 0o644); err != nil {
			return err
		}
		return os.Rename(tmp, snapPath)
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			if err := save(); err != nil {
				return err
			}
			st := r.Stats()
			fmt.Fprintf(stdout, "router: %d blocks, %d workers, index %d bytes (budget %d), %d evicted\n",
				st.Blocks, len(st.Workers), st.Bytes, st.BudgetBytes, st.Evicted)
			return nil
		case <-tick.C:
			if err := save(); err != nil {
				fmt.Fprintf(stderr, "router: snapshot: %v\n", err)
			}
		}
	}
}

// multiFlag collects a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, " ") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }
