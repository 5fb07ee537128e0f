// Command radixkv replays LLM serving workloads through radixkv's prefix
// cache and reports what the cache did: hit rate, prefill work saved,
// evictions, throughput and per-operation latency.
//
// Usage:
//
//	radixkv replay [flags]            replay a workload through the full stack
//	radixkv record --out FILE [flags] write a workload's command log
//	radixkv sweep [flags]             hit rate versus capacity for several policies
//	radixkv router --nats URL [flags] the KV-aware router over NATS JetStream / ZMQ
//	radixkv cluster-sim [flags]       workers + router on an embedded NATS server
//
// # replay
//
// replay drives every request through a host/native Controller (Arrive,
// Prefill, optionally Extend, Finish) on top of the chosen engine:
// --engine wasm (radixkv.wasm under wazero, the default), inprocess (the ABI
// dispatcher called directly) or direct (core.Tree without encoding). The
// workload is the built-in generator (--seed, --requests), a Mooncake-format
// JSONL trace (--trace FILE) or a command log written by record (--log FILE).
//
// --cache blocks runs the workload through the block-cache facade
// (core/blockcache) instead of the tree: blocks of --page-size tokens in a
// pool of --capacity tokens, LRU, the same report fields. With mamba in
// --components it also keeps SSM snapshots in core/snapshot's index (a
// state pool of --mamba-capacity states; with --host-capacity a spill tier
// of --host-capacity / --page-size + 2 states) and reports snapshot hits,
// recompute, spills and fault-ins. It runs behind --engine's block and
// snapshot ops (the ABI for wasm and inprocess), except --mamba-policy
// marconi, which needs the core cache in process. --policy other than
// lru, swa and command logs do not apply to it.
//
// The device pool holds --capacity tokens (default 200000 for the built-in
// workload, so that it evicts, and 1000000 for traces).
//
// --components chooses the model's cache components: full (full attention
// only, the default), full,swa (sliding-window attention layers too),
// full,mamba (recurrent state layers too) or full,swa,mamba. With swa,
// --swa-window sets the window (default 4096 tokens) and --swa-capacity the
// SWA pool (default --capacity); each KV slot the controller allocates gets
// an SWA slot, a request that decodes drops the SWA slots of positions that
// left its window, and a match needs SWA data for the last window of the
// prefix. With mamba, every request keeps one state slot (forked from the
// cached state its match ends on), cached prefixes end on multiples of
// lcm(--mamba-chunk, --page-size) (default chunk 64), --mamba-cap bounds the
// states kept per path (default 0, no cap) and --mamba-capacity sizes the
// state pool (default --capacity / --page-size + 2). The report shows these
// settings and what the components did (SWA slots freed, evicted and cached,
// states forked, donated, evicted and cached). Without --output-tokens no
// request decodes, so no window slides.
//
// --host-capacity N (default 0: none) adds the host tier (HiCache): a host
// KV pool of N tokens (and, with swa, a host SWA pool of N tokens; with
// mamba, a host state pool of N / --page-size + 2 states) that keeps copies
// of device KV. --write-policy write_through (the default) copies a prefix
// to the host when it is cached; write_back copies a leaf only when it is
// evicted from the device, and drops it when the host has no room. An
// arrival whose prefix continues in host memory loads it back to the device
// (copying the slots' bytes) before it is locked, and counts those tokens
// as host hits; a host pool that runs short evicts host copies. The report
// adds the host hit rate and a "host tier" block (tokens backed up, load-
// backs, demotions, drops, host evictions, host tokens cached) and the
// bytes moved between the tiers.
//
// The KV canary (--canary, on by default) writes a record derived from
// (namespace, position, token prefix) into every slot and verifies every
// match against it; the records travel with the bytes between the tiers, so
// a load-back from a wrong host slot fails the replay. --canary=false
// measures raw speed (slots then hold no bytes, so nothing is copied).
//
// Decoded output is skipped by default: the prompts of a trace cannot contain
// the tokens a model would have generated, so caching made-up output only uses
// room. --output-tokens appends each request's output_length tokens through
// Extend, one token per call as a decoder would, with deterministic ids
// 0x80000000 | (request index * 65536 + position) mod 2^31.
//
// replay reads a trace as it replays it: a goroutine parses and expands the
// lines ahead of the requests (workload.Stream), so the first request
// starts as soon as its own line is read, not after the whole trace; the
// built-in workload is generated the same way, ahead of the replay. What
// needs the whole workload (the totals, the offline bound, the
// queue-protection pass) comes after the timed loop; the progress bar of a
// trace counts its bytes, that of the built-in workload its requests. An empty trace is an error (nothing to report). A
// malformed trace line, or a request larger than the device pool, fails the
// run when the replay reaches it, however many requests ran before, naming
// the file, the line and the field; no report is printed (the other commands,
// and --cache blocks, read the whole trace first and fail before anything
// runs). An unknown flag prints the usage and exits with status 2; other
// failures exit with status 1.
//
// The wasm engine keeps the module's compiled code in wazero's compilation
// cache under the user's cache directory (--wasm-cache, default
// $XDG_CACHE_HOME/radixkv/wazero or ~/.cache/radixkv/wazero), so only the
// first run pays for compiling it; --wasm-cache=off compiles in memory every
// run. The report's time line says how long after the start the first
// request ran (startup_seconds in JSON, and first_request_unix_ns, the wall
// clock then, to measure it from outside the process).
//
// --json prints one JSON object instead of the text report; its top-level
// hit_rate is all matched tokens (device and host) over all input tokens,
// and with a host tier a host_tier object holds the tier's counters.
// A progress bar is drawn on stderr for long runs unless --quiet or --json is
// given or stderr is not a terminal.
//
// # record
//
// record writes the requests of a workload, in order, with their namespaces
// and tokens, plus the replay settings, to a line-oriented text log (the
// format is described in log.go). replay --log FILE replays it and produces
// the same report as replaying the original workload with the same settings,
// except for timings. Flags given to replay override the recorded settings.
//
// # sweep
//
// sweep replays one workload at several capacities (--capacities) under
// several eviction policies (--policies), prints a table of hit rates and
// writes an SVG line chart (--svg, default sweep.svg); it sweeps the
// device pool only, without a host tier. It uses
// internal/coresim, the core-only replay loop, which makes the same tree
// calls in the same order as the controller and so gives the same hit rate
// to the token (the tests check this), without pools or engine transport.
//
// A column offline* shows the offline bound (Belady's rule, knowing the
// future; --offline=false skips it).
//
// --service-rate TOKENS/S (sweep and replay) models a scheduler queue: a
// FIFO server prefilling that many input tokens per second, fed at the
// workload's timestamps, protects the prefixes of the requests waiting in
// its queue (core.Tree.Protect). sweep adds a policy+q column per policy and
// replay a "with queue protection" line: reported apart, since it uses
// knowledge of the queue that a plain policy does not have.
//
// # router
//
// router runs the KV-aware router (package router) until interrupted (or
// for --duration). --nats URL consumes the workers' KV events from NATS
// JetStream (stream --stream, subjects --subject-prefix.model.worker, as
// kvpub.NATSPublisher sends them) through a durable consumer; --zmq
// NAME=tcp://host:port[,tcp://host:replayport] (repeatable) subscribes to
// a ZMQ publisher such as a vLLM or SGLang worker's, replaying gaps through
// its replay socket (--dialect names the layout of array-shaped payloads).
// --http serves POST /route ({"tokens": [...]} hashed with --page-size and
// --hash, or {"block_hashes": [...]}), POST /complete, GET /stats and GET
// /snapshot. --snapshot FILE is restored at start when present (the
// consumer then resumes after the snapshot's stream position) and written
// every --snapshot-every and at exit. --budget bounds the index memory.
//
// # cluster-sim
//
// cluster-sim starts an embedded nats-server with JetStream on a temporary
// directory (127.0.0.1 only), --workers in-process workers (controllers on
// direct engines with --capacity tokens each, publishing their KV events
// in --format) and the router, replays the workload (--trace or the
// built-in one) once per routing strategy (--strategies: prefix_aware,
// round_robin, random) on fresh workers, and reports each strategy's hit
// rate, load spread (busiest worker over the mean, by requests, computed
// tokens, time-averaged and peak in-flight blocks) and the batches and
// events carried. Requests occupy a worker for uncached/10 ms plus 20 ms
// per output token (a timing model: workers do not queue). --json prints
// {"strategies": {"prefix_aware": {"hit_rate": ...}, ...}, ...}.
//
// # simulate
//
// simulate runs internal/simulate, a deterministic simulation of a serving
// host: a seeded scheduler interleaves request lifecycles through the
// controller on a host-tier tree of each component set (--components, all by
// default) and engine (--engine) while the faults of --faults go wrong, and
// checks the controller's audit, the transfer guard, the KV canary and a
// model of what may be cached after every step. Its standard output depends
// only on the flags (timings go to stderr). On a violation it prints the
// seed, the step and a shrunk reproduction, writes the failing run's requests
// as a command log (--repro-log) and exits with status 1. --duration keeps
// running new seeds (make soak); --concurrent runs real goroutines instead
// (not reproducible; for the race detector).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"
)

// processStart is when the process started, as near as Go lets a
// program see it; replay reports the time from here to its first request.
var processStart = time.Now()

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// Exit statuses.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// errUsage marks an error that should print usage and exit with status 2.
var errUsage = errors.New("usage")

const topUsage = `usage: radixkv <command> [flags]

commands:
  replay   replay a workload through the full stack and report hit rate,
           throughput and latency
  record   write the command log of a workload (replay it with replay --log)
  sweep    hit rate versus capacity for several eviction policies, as a
           table and an SVG chart
  playground
           serve the browser playground (the module, mock pools and a
           live picture of the cache) and print its URL
  router   the KV-aware router: index workers' KV events from NATS JetStream
           (--nats URL) or ZMQ publishers, answer route queries over HTTP
  cluster-sim  N workers + router on an embedded NATS server (loopback):
           hit rate and load spread per routing strategy
  simulate a deterministic simulation of a serving host with fault
           injection, checked after every step

Run "radixkv <command> -h" for the flags of a command.
`

// run is the whole command line: it parses args (without the program
// name), writes the report to stdout and diagnostics to stderr, and returns
// the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, topUsage)
		return exitUsage
	}
	var err error
	switch args[0] {
	case "replay":
		err = runReplay(args[1:], stdout, stderr)
	case "record":
		err = runRecord(args[1:], stdout, stderr)
	case "sweep":
		err = runSweep(args[1:], stdout, stderr)
	case "playground":
		err = runPlayground(args[1:], stdout, stderr)
	case "router":
		err = runRouter(args[1:], stdout, stderr)
	case "cluster-sim":
		err = runClusterSim(args[1:], stdout, stderr)
	case "simulate":
		err = runSimulate(args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, topUsage)
		return exitOK
	default:
		fmt.Fprintf(stderr, "radixkv: unknown command %q\n\n%s", args[0], topUsage)
		return exitUsage
	}
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.Is(err, errUsage):
		return exitUsage
	default:
		fmt.Fprintf(stderr, "radixkv: %v\n", err)
		return exitError
	}
}
