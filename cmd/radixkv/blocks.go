package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/core/snapshot"
	"github.com/radixkv/radixkv/internal/coresim"
)

// cacheNames lists the values --cache accepts.
var cacheNames = []string{"tree", "blocks"}

// snapshotReport is what the SSM snapshot index did (--cache blocks with
// mamba in --components): how much of the KV hit also had a recurrent
// state to resume from.
type snapshotReport struct {
	Hits             int     `json:"hits"`               // lookups that found a state within the KV match
	TierHits         int     `json:"tier_hits"`          // of which the state was spilled to the tier
	Misses           int     `json:"misses"`             // lookups without a usable state
	AnchorTokens     int64   `json:"anchor_tokens"`      // tokens resumed from a state (the hybrid model's real hit)
	RecomputeTokens  int64   `json:"recompute_tokens"`   // KV-matched tokens recomputed to rebuild the state
	EffectiveHitRate float64 `json:"effective_hit_rate"` // anchor tokens / input tokens
	Saves            int64   `json:"saves"`              // states added to the index
	Displaced        int64   `json:"displaced"`          // states overwritten by a newer one of the same prefix
	Evictions        int64   `json:"evictions"`          // states evicted from the state pool
	Spills           int64   `json:"spills"`             // of which copied out to the tier
	Drops            int64   `json:"drops"`              // of which dropped
	FaultIns         int64   `json:"fault_ins"`          // spilled states copied back in on a hit
	FaultMisses      int64   `json:"fault_misses"`       // tier hits whose blob the tier had dropped
	Resident         int     `json:"resident"`           // states in the pool at the end
	Tiered           int     `json:"tiered"`             // states in the tier at the end
	Policy           string  `json:"policy"`             // --mamba-policy
	Model            string  `json:"model"`              // --hybrid-model preset (FLOP accounting, Marconi)
	Branches         int64   `json:"branches"`           // branch-point checkpoints admitted (marconi)
	FLOPsSaved       float64 `json:"flops_saved"`        // prefill FLOPs the snapshot hits saved
	Alpha            float64 `json:"alpha"`              // Marconi's weight at the end
	TunedAt          int     `json:"tuned_at"`           // request after which alpha was tuned; -1: not tuned
}

// modelPresets are the hybrid geometries --hybrid-model names.
var modelPresets = map[string]snapshot.Model{
	"7b-hybrid": snapshot.Model7BHybrid,
}

// mambaPolicies lists the values --mamba-policy accepts.
var mambaPolicies = []string{"lru", "marconi"}

// checkBlocks rejects flags the block cache does not implement.
func (s *settings) checkBlocks() error {
	if s.has(core.SWA) {
		return errors.New("--cache blocks has no sliding-window component: use --components full or full,mamba")
	}
	if s.policy != "lru" {
		return fmt.Errorf("--cache blocks evicts least recently used blocks only; --policy %q needs --cache tree", s.policy)
	}
	if s.hostCapacity > 0 && !s.has(core.Mamba) {
		return errors.New("--cache blocks has no host KV tier; --host-capacity sizes its SSM snapshot tier and needs mamba in --components")
	}
	if s.logFile != "" {
		return errors.New("--cache blocks replays traces and the built-in workload, not command logs (--log)")
	}
	if !slices.Contains(mambaPolicies, s.mambaPolicy) {
		return fmt.Errorf("unknown --mamba-policy %q (known: %s)", s.mambaPolicy, strings.Join(mambaPolicies, ", "))
	}
	if _, ok := modelPresets[s.model]; !ok {
		return fmt.Errorf("unknown --hybrid-model %q (known: 7b-hybrid)", s.model)
	}
	for _, f := range []string{"mamba-policy", "hybrid-model", "marconi-alpha", "marconi-window"} {
		if s.explicit[f] && !s.has(core.Mamba) {
			return fmt.Errorf("--%s applies to the SSM snapshots of --cache blocks with mamba in --components", f)
		}
	}
	if s.marconiAlpha > snapshot.MaxAlpha || s.marconiWindow < 1 {
		return fmt.Errorf("--marconi-alpha must be at most %d (-1 tunes it) and --marconi-window at least 1", snapshot.MaxAlpha)
	}
	return nil
}

// replayBlocks runs the workload through the block-cache facade
// (core/blockcache via coresim.RunBlocks, behind --engine's block and
// snapshot ops; marconi on the core cache directly) with block size
// --page-size and a pool of --capacity tokens, and fills the report's
// common fields.
func replayBlocks(s *settings, l *loaded) (*report, error) {
	if err := s.checkBlocks(); err != nil {
		return nil, err
	}
	if _, err := s.coreConfig(); err != nil {
		return nil, err
	}
	s.resolveCapacity(l)
	if err := s.checkFits(l); err != nil {
		return nil, err
	}
	cfg := coresim.BlocksConfig{Capacity: s.capacity, BlockSize: s.pageSize, Output: s.outputTokens, OutputToken: outputToken}
	if s.has(core.Mamba) {
		cfg.States = s.mambaCapacity
		if s.hostCapacity > 0 {
			cfg.TierStates = s.hostPoolCapacity(core.Mamba)
		}
		cfg.Policy, cfg.Model = s.mambaPolicy, modelPresets[s.model]
		cfg.Alpha, cfg.TuneWindow = s.marconiAlpha, s.marconiWindow
		if cfg.Alpha < 0 {
			cfg.Alpha = -1
		}
	}
	engine, note := s.engine, ""
	if cfg.Policy == "marconi" {
		// A speculative match and a replay clone are not ABI ops.
		engine, note = "direct", "marconi runs on core/blockcache in process; --engine does not apply"
	} else {
		eng, err := newEngine(s.engine, core.Config{PageSize: s.pageSize}, s.wasmCache)
		if err != nil {
			return nil, err
		}
		defer eng.Close()
		inner := eng
		if re, ok := eng.(*runtimeEngine); ok {
			inner = re.Engine // the wrapper hides the block ops
		}
		be, ok := inner.(coresim.BlockEngine)
		if !ok {
			return nil, fmt.Errorf("engine %s has no block cache", s.engine)
		}
		cfg.Engine = be
		note = "core/blockcache behind the engine's block and snapshot ops"
	}
	start := time.Now()
	st, err := coresim.RunBlocks(cfg, l.reqs)
	elapsed := time.Since(start)
	if err != nil {
		if errors.Is(err, coresim.ErrCapacity) {
			return nil, fmt.Errorf("capacity too small: %w (--capacity %d, --mamba-capacity %d)", err, s.capacity, s.mambaCapacity)
		}
		return nil, err
	}
	rep := &report{Engine: engine, EngineNote: note, Workload: l.source}
	rs := &rep.Settings
	rs.Cache = "blocks"
	rs.Components = s.components
	rs.PageSize, rs.Capacity, rs.HostCapacity = s.pageSize, s.capacity, s.hostCapacity
	rs.Policy, rs.WritePolicy = "lru", "none"
	rs.Canary, rs.OutputTokens = s.canary, s.outputTokens
	if s.has(core.Mamba) {
		rs.MambaCapacity = s.mambaCapacity
		rs.HostMambaCapacity = cfg.TierStates
	}
	rep.Requests = st.Requests
	rep.InputTokens, rep.OutputTokens = st.InputTokens, st.OutputTokens
	rep.ComputedTokens = st.InputTokens + st.OutputTokens - st.MatchedTokens
	h := &rep.Hits
	h.DeviceTokens, h.TotalTokens = st.MatchedTokens, st.MatchedTokens
	h.DeviceRate, h.TotalRate = st.HitRate, st.HitRate
	h.HostNote = "the block cache has no host KV tier"
	rep.HitRate = st.HitRate
	rep.PrefillTokensSaved = st.MatchedTokens
	rep.Evictions.Calls = st.Evictions
	rep.Evictions.Nodes = st.EvictedBlocks
	rep.Evictions.Tokens = st.EvictedBlocks * int64(s.pageSize)
	rep.CachedTokens = st.CachedBlocks * s.pageSize
	if sn := st.Snapshots; sn != nil {
		rep.Snapshots = &snapshotReport{
			Hits: sn.Hits, TierHits: sn.TierHits, Misses: sn.Misses,
			AnchorTokens: sn.AnchorTokens, RecomputeTokens: sn.RecomputeTokens, EffectiveHitRate: sn.EffectiveHitRate,
			Saves: sn.Saves, Displaced: sn.Displaced, Evictions: sn.Evictions, Spills: sn.Spills, Drops: sn.Drops,
			FaultIns: sn.FaultIns, FaultMisses: sn.FaultMisses, Resident: sn.Resident, Tiered: sn.Tiered,
			Policy: s.mambaPolicy, Model: s.model, Branches: sn.Branches, FLOPsSaved: sn.FLOPsSaved, Alpha: sn.Alpha, TunedAt: sn.TunedAt,
		}
	}
	// The replay always checks every matched block against its canary (a
	// mismatch is an error), and --canary does not change that.
	c := &rep.Canary
	c.Enabled, c.Checked, c.Verdict = true, st.CanaryChecked, "ok"
	t := &rep.Throughput
	t.Seconds = elapsed.Seconds()
	t.Ops = int64(3 * st.Requests) // lookup, insert, release
	if t.Seconds > 0 {
		t.OpsPerSec = float64(t.Ops) / t.Seconds
		t.TokensPerSec = float64(st.InputTokens+st.OutputTokens) / t.Seconds
	}
	return rep, nil
}
