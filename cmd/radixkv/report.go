package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// The notes on host hits, with the host tier off and on.
const (
	hostOffNote = "no host tier (--host-capacity 0): every hit is a device hit"
	hostOnNote  = "prefixes found in host memory only and loaded back to the device on arrival"
)

// report is the result of a replay. Its JSON form is the --json output;
// fields under throughput and latency_ns depend on timing, everything else
// is deterministic for a given workload and settings.
type report struct {
	HitRate float64 `json:"hit_rate"` // all matched tokens / all input tokens

	Engine     string `json:"engine"`
	EngineNote string `json:"engine_note,omitempty"`
	Workload   string `json:"workload"`
	Settings   struct {
		Cache        string `json:"cache,omitempty"` // "blocks" with --cache blocks
		Components   string `json:"components"`
		PageSize     int    `json:"page_size"`
		Capacity     int    `json:"capacity"`
		HostCapacity int    `json:"host_capacity"`
		Policy       string `json:"policy"`
		WritePolicy  string `json:"write_policy"`
		Canary       bool   `json:"canary"`
		OutputTokens bool   `json:"output_tokens"`
		// Hybrid settings, present with their component.
		SWAWindow     int `json:"swa_window,omitempty"`
		SWACapacity   int `json:"swa_capacity,omitempty"`
		MambaChunk    int `json:"mamba_chunk,omitempty"`
		MambaCap      int `json:"mamba_cap,omitempty"`
		MambaCapacity int `json:"mamba_capacity,omitempty"`
		// Host pools of the auxiliary components (host tier and the
		// component only).
		HostSWACapacity   int `json:"host_swa_capacity,omitempty"`
		HostMambaCapacity int `json:"host_mamba_capacity,omitempty"`
	} `json:"settings"`

	Requests       int   `json:"requests"`
	InputTokens    int64 `json:"input_tokens"`
	OutputTokens   int64 `json:"output_tokens"`
	ComputedTokens int64 `json:"computed_tokens"`
	Hits           struct {
		DeviceTokens int64   `json:"device_tokens"`
		HostTokens   int64   `json:"host_tokens"`
		TotalTokens  int64   `json:"total_tokens"`
		DeviceRate   float64 `json:"device_rate"`
		HostRate     float64 `json:"host_rate"`
		TotalRate    float64 `json:"total_rate"`
		HostNote     string  `json:"host_note"`
	} `json:"hits"`
	PrefillTokensSaved int64 `json:"prefill_tokens_saved"`
	// OfflineBound is the device hit rate the offline bound reaches on the
	// same requests, capacity and page size (a separate pass that knows the
	// future: a reference, not a policy).
	OfflineBound *boundReport `json:"offline_bound,omitempty"`
	// Protected is the device hit rate of the same policy with
	// scheduler-aware protection of a modelled queue (--service-rate; a
	// separate pass: it knows the queue, so it is not the policy's rate).
	Protected *protectedReport `json:"protected,omitempty"`
	Evictions struct {
		Calls  int   `json:"calls"`
		Nodes  int64 `json:"nodes"`
		Tokens int64 `json:"tokens"`
	} `json:"evictions"`
	Bytes struct {
		Written int64 `json:"written"`
		Moved   int64 `json:"moved"`
	} `json:"bytes"`
	CachedTokens int             `json:"cached_tokens"`
	Hybrid       *hybridReport   `json:"hybrid,omitempty"`
	Snapshots    *snapshotReport `json:"snapshots,omitempty"`
	HostTier     *hostReport     `json:"host_tier,omitempty"`
	GPU          *gpuReport      `json:"gpu,omitempty"`

	Canary struct {
		Enabled    bool   `json:"enabled"`
		Verdict    string `json:"verdict"`
		Checked    int64  `json:"checked_slots"`
		Mismatches int64  `json:"mismatches"`
	} `json:"canary"`

	Throughput struct {
		Seconds      float64 `json:"seconds"`
		Ops          int64   `json:"ops"`
		OpsPerSec    float64 `json:"ops_per_sec"`
		TokensPerSec float64 `json:"tokens_per_sec"`
		// StartupSeconds runs from the process start to the first
		// request's Arrive: opening the workload (a trace streams, so
		// only its first line is read by then), compiling or loading
		// the module, creating the pools.
		StartupSeconds float64 `json:"startup_seconds"`
		// FirstRequestUnixNano is when the first request's Arrive
		// began, in Unix nanoseconds: with a timestamp taken before
		// the process started (date +%s%N), the time to the first
		// request measured from outside.
		FirstRequestUnixNano int64 `json:"first_request_unix_ns,omitempty"`
	} `json:"throughput"`
	Latency map[string]latencySummary `json:"latency_ns"`
}

// hybridReport is what the SWA and Mamba components did (hybrid sets only).
type hybridReport struct {
	SWAWindowFreed    int64 `json:"swa_window_freed"`    // SWA slots dropped as positions left a request's window
	SWAEarlyReleases  int64 `json:"swa_early_releases"`  // SWA locks released a window past the cached prefix
	SWAEvicted        int64 `json:"swa_evicted"`         // SWA slots freed by eviction
	CachedSWATokens   int64 `json:"cached_swa_tokens"`   // SWA slots the tree holds at the end
	MambaForks        int64 `json:"mamba_forks"`         // arrivals that forked a cached state
	MambaDonated      int64 `json:"mamba_donated"`       // request states the tree adopted
	MambaEvicted      int64 `json:"mamba_evicted"`       // states freed by eviction and per-path caps
	CachedMambaStates int64 `json:"cached_mamba_states"` // states the tree holds at the end
	// The Mamba policy (mamba in --components): its name and alpha, the
	// --hybrid-model preset the FLOPs are counted for, the arrivals that resumed
	// from a cached state and the prefill FLOPs they saved, and the chunk
	// ends marconi left uncached.
	MambaPolicy        string  `json:"mamba_policy,omitempty"`
	MambaAlpha         float64 `json:"mamba_alpha,omitempty"`
	Model              string  `json:"model,omitempty"`
	MambaHits          int64   `json:"mamba_hits"`
	MambaFLOPsSaved    float64 `json:"mamba_flops_saved"`
	MambaChunksSkipped int64   `json:"mamba_chunks_skipped,omitempty"`
	MambaTunes         int     `json:"mamba_tunes,omitempty"` // times marconi's alpha was tuned
	MambaTunedAt       int     `json:"mamba_tuned_at"`        // request after which it last was; -1: never
}

// hostReport is what the host tier did (--host-capacity above 0 only).
type hostReport struct {
	LoadBacks        int64 `json:"load_backs"`         // host-only prefixes copied back to the device
	LoadedTokens     int64 `json:"loaded_tokens"`      // KV slots those load-backs copied
	LoadBacksSkipped int64 `json:"load_backs_skipped"` // host hits recomputed instead (no device room, or pinned)
	Backups          int64 `json:"backups"`            // nodes copied device to host
	BackedUpTokens   int64 `json:"backed_up_tokens"`   // KV slots those backups copied
	WriteThroughs    int64 `json:"write_throughs"`     // write-through copies acknowledged
	BackupsRefused   int64 `json:"backups_refused"`    // backups the host pool had no room for
	Demoted          int64 `json:"demoted"`            // write-back evictions that kept the leaf on the host
	Dropped          int64 `json:"dropped"`            // write-back evictions that dropped the leaf (host full)
	HostEvictions    int64 `json:"host_evictions"`     // host evictions run to make room
	HostFreedTokens  int64 `json:"host_freed_tokens"`  // host KV slots the tree gave back
	CachedHostTokens int64 `json:"cached_host_tokens"` // host KV slots the tree holds at the end
}

// latencyOps is the order operations are reported in.
var latencyOps = []string{"arrive", "prefill", "extend", "finish", "evict"}

func (r *report) writeJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func pct(x float64) string { return fmt.Sprintf("%.2f%%", 100*x) }

// count renders n with thousands separators.
func count[T int | int64](n T) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func dur(ns int64) string {
	d := time.Duration(ns)
	switch {
	case d < time.Microsecond:
		return fmt.Sprintf("%dns", ns)
	case d < time.Millisecond:
		return fmt.Sprintf("%.1fµs", float64(ns)/1e3)
	case d < time.Second:
		return fmt.Sprintf("%.2fms", float64(ns)/1e6)
	}
	return fmt.Sprintf("%.2fs", float64(ns)/1e9)
}

// writeText renders the human-readable report.
func (r *report) writeText(w io.Writer) error {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	p := func(format string, a ...any) { fmt.Fprintf(tw, format+"\n", a...) }
	s := &r.Settings
	engine := r.Engine
	if r.EngineNote != "" {
		engine += " (" + r.EngineNote + ")"
	}
	p("radixkv replay")
	p("  engine\t%s", engine)
	p("  workload\t%s", r.Workload)
	if s.Cache == "blocks" {
		p("  cache\tblocks (facade), %s, block %d, device %s tokens, policy %s", s.Components, s.PageSize, count(s.Capacity), s.Policy)
		if s.MambaCapacity > 0 {
			p("  snapshots\tstate pool %s states, tier %s states", count(s.MambaCapacity), count(s.HostMambaCapacity))
		}
	} else {
		p("  cache\t%s, page %d, device %s tokens, host %s tokens, policy %s, write policy %s", s.Components, s.PageSize, count(s.Capacity), count(s.HostCapacity), s.Policy, s.WritePolicy)
	}
	if s.SWAWindow > 0 {
		p("  swa\twindow %s tokens, SWA pool %s tokens", count(s.SWAWindow), count(s.SWACapacity))
	}
	if s.MambaChunk > 0 {
		caps := "no per-path cap"
		if s.MambaCap > 0 {
			caps = fmt.Sprintf("at most %d per path", s.MambaCap)
		}
		p("  mamba\tchunk %d tokens, state pool %s states, %s", s.MambaChunk, count(s.MambaCapacity), caps)
	}
	if s.Cache == "" && (s.HostSWACapacity > 0 || s.HostMambaCapacity > 0) {
		var pools []string
		if s.HostSWACapacity > 0 {
			pools = append(pools, fmt.Sprintf("SWA %s tokens", count(s.HostSWACapacity)))
		}
		if s.HostMambaCapacity > 0 {
			pools = append(pools, fmt.Sprintf("Mamba %s states", count(s.HostMambaCapacity)))
		}
		p("  host pools\t%s", strings.Join(pools, ", "))
	}
	out := "skipped"
	if s.OutputTokens {
		out = "appended through Extend"
	}
	p("  output tokens\t%s", out)
	p("")
	p("requests\t%s\t", count(r.Requests))
	p("input tokens\t%s\t", count(r.InputTokens))
	if s.OutputTokens {
		p("output tokens\t%s\t", count(r.OutputTokens))
	}
	h := &r.Hits
	p("hit rate\t%s\t(%s of %s input tokens)", pct(r.HitRate), count(h.TotalTokens), count(r.InputTokens))
	p("  device\t%s\t(%s tokens)", pct(h.DeviceRate), count(h.DeviceTokens))
	if ht := r.HostTier; ht != nil {
		p("  host\t%s\t(%s tokens loaded back from host memory in %s load-backs)", pct(h.HostRate), count(h.HostTokens), count(ht.LoadBacks))
	} else {
		p("  host\t%s\t(%s)", pct(h.HostRate), h.HostNote)
	}
	if b := r.OfflineBound; b != nil {
		p("  offline bound\t%s\t(device, %s)", pct(b.DeviceRate), b.Note)
	}
	if q := r.Protected; q != nil {
		p("  with queue protection\t%s\t(device, %s)", pct(q.DeviceRate), q.Note)
	}
	p("prefill tokens saved\t%s\t(computed %s)", count(r.PrefillTokensSaved), count(r.ComputedTokens))
	unit, holder := "nodes", "tree"
	if s.Cache == "blocks" {
		unit, holder = "blocks", "block cache"
	}
	p("evictions\t%s %s\t(%s tokens, %s evict calls)", count(r.Evictions.Nodes), unit, count(r.Evictions.Tokens), count(r.Evictions.Calls))
	p("cached at end\t%s\t(tokens held by the %s)", count(r.CachedTokens), holder)
	if hy := r.Hybrid; hy != nil {
		if s.SWAWindow > 0 {
			p("swa\t%s cached\t(%s slots left request windows, %s evicted, %s early lock releases)", count(hy.CachedSWATokens), count(hy.SWAWindowFreed), count(hy.SWAEvicted), count(hy.SWAEarlyReleases))
		}
		if s.MambaChunk > 0 {
			p("mamba\t%s states cached\t(%s forked, %s donated, %s evicted)", count(hy.CachedMambaStates), count(hy.MambaForks), count(hy.MambaDonated), count(hy.MambaEvicted))
			tuned := ""
			if hy.MambaTunes > 0 {
				tuned = fmt.Sprintf(", tuned %d times, last after request %d", hy.MambaTunes, hy.MambaTunedAt)
			}
			p("  policy\t%s\t(%s state hits saved %.3g prefill FLOPs of %s; alpha %g%s)", hy.MambaPolicy, count(hy.MambaHits), hy.MambaFLOPsSaved, hy.Model, hy.MambaAlpha, tuned)
		}
	}
	if sn := r.Snapshots; sn != nil {
		p("ssm snapshots	%s hits	(%s from the tier, %s misses; effective hit rate %s)", count(sn.Hits), count(sn.TierHits), count(sn.Misses), pct(sn.EffectiveHitRate))
		p("  recompute	%s tokens	(KV-matched tokens past the state's anchor; %s tokens resumed from states)", count(sn.RecomputeTokens), count(sn.AnchorTokens))
		p("  state pool	%s evictions	(%s spilled, %s dropped, %s faulted back in, %s lost by the tier; %s resident, %s tiered at end)",
			count(sn.Evictions), count(sn.Spills), count(sn.Drops), count(sn.FaultIns), count(sn.FaultMisses), count(sn.Resident), count(sn.Tiered))
		tuned := "fixed"
		if sn.TunedAt >= 0 {
			tuned = fmt.Sprintf("tuned after request %d", sn.TunedAt)
		}
		p("  policy\t%s\t(model %s; %.3e prefill FLOPs saved; %s branch checkpoints; alpha %.1f, %s)", sn.Policy, sn.Model, sn.FLOPsSaved, count(sn.Branches), sn.Alpha, tuned)
	}
	c := &r.Canary
	if ht := r.HostTier; ht != nil {
		p("host tier\t%s tokens backed up\t(%s nodes, %s refused for lack of host room; %s tokens loaded back, %s load-backs skipped)",
			count(ht.BackedUpTokens), count(ht.Backups), count(ht.BackupsRefused), count(ht.LoadedTokens), count(ht.LoadBacksSkipped))
		if s.WritePolicy == "write_back" {
			p("  write-back\t%s leaves demoted\t(%s dropped: the host had no room)", count(ht.Demoted), count(ht.Dropped))
		} else {
			p("  write-throughs\t%s\t(acknowledged copies)", count(ht.WriteThroughs))
		}
		p("  host memory\t%s cached\t(%s tokens freed by %s host evictions and drops)", count(ht.CachedHostTokens), count(ht.HostFreedTokens), count(ht.HostEvictions))
	}
	p("bytes written\t%s\t(KV canary records)", count(r.Bytes.Written))
	switch {
	case r.HostTier == nil:
		p("bytes moved\t%s\t(no device<->host copies without a host tier)", count(r.Bytes.Moved))
	case !c.Enabled:
		p("bytes moved\t%s\t(slots hold no bytes with --canary=false)", count(r.Bytes.Moved))
	default:
		p("bytes moved\t%s\t(slot bytes copied between device and host pools)", count(r.Bytes.Moved))
	}
	if r.GPU != nil {
		r.GPU.lines(p)
	}
	if s.Cache == "blocks" {
		p("canary\t%s\t(%s matched blocks checked against the prefix they must hold)", c.Verdict, count(c.Checked))
	} else if c.Enabled {
		p("canary\t%s\t(%s slots verified, %d mismatches)", c.Verdict, count(c.Checked), c.Mismatches)
	} else {
		p("canary\t%s\t(--canary=false)", c.Verdict)
	}
	p("")
	t := &r.Throughput
	p("time\t%.3fs\t(first request %.0f ms after the start)", t.Seconds, 1000*t.StartupSeconds)
	p("throughput\t%s ops/s, %s tokens/s\t(%s controller calls)", count(int64(t.OpsPerSec)), count(int64(t.TokensPerSec)), count(t.Ops))
	if len(r.Latency) > 0 {
		p("")
		p("latency\tcount\tp50\tp90\tp99\tmax")
	}
	for _, op := range latencyOps {
		l, ok := r.Latency[op]
		if !ok {
			continue
		}
		if l.Count == 0 {
			p("  %s\t0\t-\t-\t-\t-", op)
			continue
		}
		p("  %s\t%s\t%s\t%s\t%s\t%s", op, count(l.Count), dur(l.P50), dur(l.P90), dur(l.P99), dur(l.Max))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// Drop the padding tabwriter leaves after a line's last cell.
	var text strings.Builder
	for line := range strings.Lines(buf.String()) {
		text.WriteString(strings.TrimRight(line, " \n"))
		text.WriteByte('\n')
	}
	_, err := io.WriteString(w, text.String())
	return err
}

// protectedReport is the line of a report with scheduler-aware protection.
type protectedReport struct {
	DeviceRate  float64 `json:"device_rate"`
	ServiceRate float64 `json:"service_rate"`
	QueueMean   float64 `json:"queue_mean"`
	QueueMax    int     `json:"queue_max"`
	Note        string  `json:"note"`
}

const protectedNote = "same policy, protecting the prefixes queued before a FIFO server at %g tokens/s: %.1f waiting on average, at most %d; it knows the queue"

// boundReport is the offline bound's line of a report.
type boundReport struct {
	DeviceRate float64 `json:"device_rate"`
	Note       string  `json:"note"`
}

const boundNote = "Belady: evicts the page used furthest in the future, knowing the whole workload; not reachable online"
