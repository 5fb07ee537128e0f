// Package clustersim simulates a cluster of radixkv workers behind the KV
// router, end to end on the loopback: an embedded nats-server with
// JetStream, N in-process workers (host/native controllers whose KV
// events a kvpub.Pump publishes to JetStream), and a router.Router fed by
// a durable consumer. Each routing strategy replays the same requests on
// fresh workers and reports hit rate, load spread and events carried.
//
// Time is simulated from the requests' timestamps: a request occupies
// its worker from arrival for uncached_tokens / PrefillTokensPerMs +
// output_tokens · DecodeMsPerToken milliseconds, and its blocks (input
// and output) count as the worker's active blocks meanwhile (what the
// router's cost uses). Workers do not queue or slow down under load; the
// cache effect is exact (every request really goes through its worker's
// tree), the timing model is a deliberate simplification.
//
// Before each routing decision the simulation waits until the router has
// ingested every batch published so far, so that the results do not
// depend on message latency and runs are deterministic.
package clustersim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/events"
	"github.com/radixkv/radixkv/host/native"
	"github.com/radixkv/radixkv/internal/natsembed"
	"github.com/radixkv/radixkv/kvpub"
	"github.com/radixkv/radixkv/router"
	"github.com/radixkv/radixkv/workload"
)

// Strategy names.
const (
	PrefixAware = "prefix_aware"
	RoundRobin  = "round_robin"
	Random      = "random"
)

// Config configures a simulation.
type Config struct {
	Workers  int // ≥ 1
	PageSize int // tokens per block (0: 64)
	Capacity int // device KV tokens per worker (required)
	// Strategies to run (nil: prefix_aware, round_robin, random).
	Strategies []string
	Seed       uint64 // for the random strategy
	// PrefillWeight, BudgetBytes configure the router (see router.Config).
	PrefillWeight float64
	BudgetBytes   int64
	Format        events.Format // event payload format (zero: vllm/array/v1)
	// PrefillTokensPerMs and DecodeMsPerToken drive the timing model
	// (0: 10 tokens/ms, i.e. 10k tokens/s, and 20 ms per output token).
	PrefillTokensPerMs float64
	DecodeMsPerToken   float64
	// StoreDir holds JetStream's files (required; the caller removes it).
	StoreDir string
	// Progress, when set, is called after every request.
	Progress func(strategy string, done, total int)
}

// StrategyReport is what one strategy did.
type StrategyReport struct {
	HitRate       float64 `json:"hit_rate"`
	InputTokens   uint64  `json:"input_tokens"`
	MatchedTokens uint64  `json:"matched_tokens"`
	// RequestsPerWorker and ComputedPerWorker (prefill tokens computed)
	// show the load spread; MaxOverMean* is the busiest worker's share
	// over the mean (1 is perfectly even).
	RequestsPerWorker     []int    `json:"requests_per_worker"`
	ComputedPerWorker     []uint64 `json:"computed_tokens_per_worker"`
	MaxOverMeanRequests   float64  `json:"max_over_mean_requests"`
	MaxOverMeanComputed   float64  `json:"max_over_mean_computed"`
	PeakActiveBlocks      []int64  `json:"peak_active_blocks_per_worker"`
	MaxOverMeanPeakActive float64  `json:"max_over_mean_peak_active"`
	// MeanActiveBlocks is each worker's time-averaged in-flight blocks.
	MeanActiveBlocks       []float64 `json:"mean_active_blocks_per_worker"`
	MaxOverMeanActive      float64   `json:"max_over_mean_active"`
	BatchesPublished       uint64    `json:"batches_published"`
	EventsPublished        uint64    `json:"events_published"`
	MessagesReceived       uint64    `json:"messages_received"`
	IndexBlocks            int       `json:"index_blocks"`
	IndexBytes             int64     `json:"index_bytes"`
	IndexEvicted           uint64    `json:"index_evicted"`
	WallSeconds            float64   `json:"wall_seconds"`
	RoutingDecisionsPerSec float64   `json:"routing_decisions_per_sec,omitempty"`
}

// Report is the whole simulation's result.
type Report struct {
	Workers    int                       `json:"workers"`
	Requests   int                       `json:"requests"`
	PageSize   int                       `json:"page_size"`
	Capacity   int                       `json:"capacity_tokens_per_worker"`
	Format     string                    `json:"event_format"`
	Strategies map[string]StrategyReport `json:"strategies"`
	// PrefixOverRoundRobin is prefix_aware's hit rate over round_robin's
	// (0 when either did not run or round_robin hit nothing).
	PrefixOverRoundRobin float64 `json:"prefix_over_round_robin"`
}

// ErrInvalid reports a bad configuration or workload.
var ErrInvalid = errors.New("clustersim: invalid argument")

func (c *Config) normalise(reqs []workload.Request) error {
	if c.Workers < 1 || c.Capacity < 1 || c.PageSize < 0 || c.StoreDir == "" {
		return fmt.Errorf("%w: need workers ≥ 1, capacity ≥ 1 and a store directory", ErrInvalid)
	}
	if c.PageSize == 0 {
		c.PageSize = 64
	}
	if c.PrefillTokensPerMs <= 0 {
		c.PrefillTokensPerMs = 10
	}
	if c.DecodeMsPerToken <= 0 {
		c.DecodeMsPerToken = 20
	}
	if len(c.Strategies) == 0 {
		c.Strategies = []string{PrefixAware, RoundRobin, Random}
	}
	for _, s := range c.Strategies {
		if s != PrefixAware && s != RoundRobin && s != Random {
			return fmt.Errorf("%w: unknown strategy %q (prefix_aware, round_robin, random)", ErrInvalid, s)
		}
	}
	if len(reqs) == 0 {
		return fmt.Errorf("%w: no requests", ErrInvalid)
	}
	for i := range reqs {
		if len(reqs[i].Tokens) > c.Capacity {
			return fmt.Errorf("%w: request %d has %d tokens, more than a worker's capacity %d",
				ErrInvalid, i, len(reqs[i].Tokens), c.Capacity)
		}
	}
	return nil
}

// Run simulates every strategy on reqs and reports.
func Run(ctx context.Context, cfg Config, reqs []workload.Request) (Report, error) {
	if err := cfg.normalise(reqs); err != nil {
		return Report{}, err
	}
	srv, err := natsembed.Start(cfg.StoreDir)
	if err != nil {
		return Report{}, err
	}
	defer srv.Stop()
	nc, err := nats.Connect(srv.URL(), nats.MaxReconnects(-1))
	if err != nil {
		return Report{}, fmt.Errorf("clustersim: connect: %w", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return Report{}, err
	}
	rep := Report{Workers: cfg.Workers, Requests: len(reqs), PageSize: cfg.PageSize, Capacity: cfg.Capacity,
		Format: cfg.Format.String(), Strategies: map[string]StrategyReport{}}
	for _, s := range cfg.Strategies {
		sr, err := runOne(ctx, js, &cfg, s, reqs)
		if err != nil {
			return rep, fmt.Errorf("strategy %s: %w", s, err)
		}
		rep.Strategies[s] = sr
	}
	pa, ok1 := rep.Strategies[PrefixAware]
	rr, ok2 := rep.Strategies[RoundRobin]
	if ok1 && ok2 && rr.HitRate > 0 {
		rep.PrefixOverRoundRobin = pa.HitRate / rr.HitRate
	}
	return rep, nil
}

type inflight struct {
	end    float64
	worker int
	blocks int64
}

type simWorker struct {
	name string
	ctl  *native.Controller
	pub  *kvpub.NATSPublisher
	pump *kvpub.Pump
	sent uint64 // batches published
	reqs int
	comp uint64
	act  int64
	peak int64
	area float64 // ∫ active blocks dt (block·ms)
	last float64 // time area is integrated up to
}

func (w *simWorker) advance(t float64) {
	if t > w.last {
		w.area += float64(w.act) * (t - w.last)
		w.last = t
	}
}

func runOne(ctx context.Context, js jetstream.JetStream, cfg *Config, strategy string, reqs []workload.Request) (StrategyReport, error) {
	start := time.Now()
	stream, prefix := "SIM_"+strategy, "sim."+strategy
	ws := make([]*simWorker, cfg.Workers)
	byName := map[string]int{}
	simNow := 0.0 // ms, the current request's arrival
	r, err := router.New(router.Config{PrefillWeight: cfg.PrefillWeight, BudgetBytes: cfg.BudgetBytes})
	if err != nil {
		return StrategyReport{}, err
	}
	defer func() {
		for _, w := range ws {
			if w != nil && w.ctl != nil {
				w.ctl.Close()
			}
		}
	}()
	for i := range ws {
		w := &simWorker{name: fmt.Sprintf("worker-%02d", i)}
		ws[i] = w
		eng, err := native.NewDirectEngine(core.Config{PageSize: cfg.PageSize, KVEvents: true})
		if err != nil {
			return StrategyReport{}, err
		}
		kv, err := native.NewMemPool(cfg.Capacity, 0)
		if err != nil {
			return StrategyReport{}, err
		}
		if w.ctl, err = native.NewController(eng, native.NewPoolSet(kv), native.ControllerConfig{}); err != nil {
			return StrategyReport{}, err
		}
		if w.pub, err = kvpub.NewNATSPublisher(ctx, js, kvpub.NATSConfig{Stream: stream, SubjectPrefix: prefix,
			Model: "sim", Worker: w.name, Format: cfg.Format, Epoch: 1}); err != nil {
			return StrategyReport{}, err
		}
		w.pump = &kvpub.Pump{Source: w.ctl, Publish: kvpub.NATSSink(ctx, w.pub), Now: func() float64 { return simNow / 1000 }}
		byName[w.name] = i
		if err := r.AddWorker(w.name); err != nil {
			return StrategyReport{}, err
		}
	}
	cons, err := kvpub.ConsumeNATS(ctx, js, r, kvpub.NATSConsumerConfig{Stream: stream, SubjectPrefix: prefix,
		Durable: "sim-router", Dialect: cfg.Format.Dialect})
	if err != nil {
		return StrategyReport{}, err
	}
	defer cons.Stop()
	waitSynced := func(w *simWorker) error {
		deadline := time.Now().Add(30 * time.Second)
		for {
			next, _, _ := r.NextSeq(w.name)
			if next >= w.sent {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("router did not receive %s's batch %d within 30s", w.name, w.sent-1)
			}
			time.Sleep(50 * time.Microsecond)
		}
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x5eed))
	var fly []inflight
	var hashes []int64
	var routeTime time.Duration
	for k := range reqs {
		if err := ctx.Err(); err != nil {
			return StrategyReport{}, err
		}
		q := &reqs[k]
		now := float64(q.Timestamp)
		simNow = now
		// Retire requests that ended, in end order, integrating each
		// worker's active blocks over time.
		sort.Slice(fly, func(a, b int) bool { return fly[a].end < fly[b].end })
		kept := fly[:0]
		for _, f := range fly {
			if f.end <= now {
				if err := r.Complete(ws[f.worker].name, f.blocks); err != nil {
					return StrategyReport{}, err
				}
				ws[f.worker].advance(f.end)
				ws[f.worker].act -= f.blocks
			} else {
				kept = append(kept, f)
			}
		}
		fly = kept
		for _, w := range ws {
			w.advance(now)
		}
		var wi int
		switch strategy {
		case RoundRobin:
			wi = k % len(ws)
		case Random:
			wi = rng.IntN(len(ws))
		default:
			t0 := time.Now()
			hashes, err = events.BlockHashes(hashes[:0], core.HashSGLang, q.Namespace, q.Tokens, cfg.PageSize)
			if err != nil {
				return StrategyReport{}, err
			}
			d, err := r.Route(router.Request{BlockHashes: hashes})
			if err != nil {
				return StrategyReport{}, err
			}
			routeTime += time.Since(t0)
			wi = byName[d.Worker]
		}
		w := ws[wi]
		// A tenant's requests are cached under its cache salt, which also
		// seeds the event hashes (see events.BlockHashes).
		req, err := w.ctl.Arrive(core.Namespace{CacheSalt: q.Namespace}, q.Tokens)
		if err != nil {
			return StrategyReport{}, fmt.Errorf("request %d on %s: %w", k, w.name, err)
		}
		cached := req.CachedLen()
		if err := w.ctl.Prefill(req, req.Pending()); err != nil {
			return StrategyReport{}, fmt.Errorf("request %d on %s: %w", k, w.name, err)
		}
		if err := w.ctl.Finish(req); err != nil {
			return StrategyReport{}, fmt.Errorf("request %d on %s: %w", k, w.name, err)
		}
		n, err := w.pump.Drain()
		if err != nil {
			return StrategyReport{}, err
		}
		if n > 0 {
			w.sent++
		}
		uncached := len(q.Tokens) - cached
		w.reqs++
		w.comp += uint64(uncached)
		blocks := int64((q.InputLength + q.OutputLength + cfg.PageSize - 1) / cfg.PageSize)
		if err := r.Start(w.name, blocks); err != nil {
			return StrategyReport{}, err
		}
		w.act += blocks
		w.peak = max(w.peak, w.act)
		fly = append(fly, inflight{end: now + float64(uncached)/cfg.PrefillTokensPerMs +
			float64(q.OutputLength)*cfg.DecodeMsPerToken, worker: wi, blocks: blocks})
		if err := waitSynced(w); err != nil {
			return StrategyReport{}, err
		}
		if cfg.Progress != nil {
			cfg.Progress(strategy, k+1, len(reqs))
		}
	}
	var sr StrategyReport
	endT := 0.0
	for _, f := range fly {
		endT = max(endT, f.end)
	}
	sort.Slice(fly, func(a, b int) bool { return fly[a].end < fly[b].end })
	for _, f := range fly {
		ws[f.worker].advance(f.end)
		ws[f.worker].act -= f.blocks
	}
	for _, w := range ws {
		w.advance(endT)
		sr.MeanActiveBlocks = append(sr.MeanActiveBlocks, w.area/max(endT, 1))
	}
	for _, w := range ws {
		if err := waitSynced(w); err != nil {
			return sr, err
		}
		if err := w.pub.Flush(ctx); err != nil {
			return sr, err
		}
		st := w.ctl.Stats()
		sr.InputTokens += st.InputTokens
		sr.MatchedTokens += st.MatchedTokens
		sr.RequestsPerWorker = append(sr.RequestsPerWorker, w.reqs)
		sr.ComputedPerWorker = append(sr.ComputedPerWorker, w.comp)
		sr.PeakActiveBlocks = append(sr.PeakActiveBlocks, w.peak)
		b, e := w.pump.Counts()
		sr.BatchesPublished += b
		sr.EventsPublished += e
	}
	if sr.InputTokens > 0 {
		sr.HitRate = float64(sr.MatchedTokens) / float64(sr.InputTokens)
	}
	sr.MaxOverMeanRequests = maxOverMean(toF(sr.RequestsPerWorker))
	sr.MaxOverMeanComputed = maxOverMean(toF(sr.ComputedPerWorker))
	sr.MaxOverMeanPeakActive = maxOverMean(toF(sr.PeakActiveBlocks))
	sr.MaxOverMeanActive = maxOverMean(sr.MeanActiveBlocks)
	sr.MessagesReceived = cons.Stats().Received
	ist := r.Stats()
	sr.IndexBlocks, sr.IndexBytes, sr.IndexEvicted = ist.Blocks, ist.Bytes, ist.Evicted
	sr.WallSeconds = time.Since(start).Seconds()
	if strategy == PrefixAware && routeTime > 0 {
		sr.RoutingDecisionsPerSec = float64(len(reqs)) / routeTime.Seconds()
	}
	if err := js.DeleteStream(ctx, stream); err != nil {
		return sr, fmt.Errorf("clustersim: delete stream: %w", err)
	}
	return sr, nil
}

func toF[T int | int64 | uint64](xs []T) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = float64(x)
	}
	return out
}

func maxOverMean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var sum, mx float64
	for _, x := range xs {
		sum += x
		mx = max(mx, x)
	}
	if sum == 0 {
		return 0
	}
	return mx / (sum / float64(len(xs)))
}

// StrategyNames returns the report's strategies in a fixed order.
func (r Report) StrategyNames() []string {
	out := make([]string, 0, len(r.Strategies))
	for k := range r.Strategies {
		out = append(out, k)
	}
	order := map[string]int{PrefixAware: 0, RoundRobin: 1, Random: 2}
	sort.Slice(out, func(a, b int) bool { return order[out[a]] < order[out[b]] })
	return out
}
