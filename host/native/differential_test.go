package native

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/internal/transcripttest"
	"github.com/stretchr/testify/require"
)

// coreSentinels names core's errors, to compare errors across engines.
var coreSentinels = []error{
	core.ErrInvalidConfig, core.ErrUnknownPolicy, core.ErrUnsupported, core.ErrInvalidArgument,
	core.ErrStaleNode, core.ErrReceipt, core.ErrInsertInFlight, core.ErrNoInsert,
	core.ErrEvictionInFlight, core.ErrNoEviction, core.ErrBusy, core.ErrBroken, core.ErrSanity,
}

// errClass returns the core sentinel err wraps, "ok" for nil, or the
// message of any other error.
func errClass(err error) string {
	if err == nil {
		return "ok"
	}
	for _, s := range coreSentinels {
		if errors.Is(err, s) {
			return s.Error()
		}
	}
	return "other: " + err.Error()
}

// diffEngine is one engine of a differential run and the ids and
// receipts it handed out, in its own form, indexed alike across engines.
type diffEngine struct {
	name     string
	e        Engine
	nodes    []core.NodeID
	receipts []core.Receipt
	host     *hostSim // with the host tier
}

// norm renders what an engine returned with node ids in core form, so
// engines with different id masks compare equal.
func (d *diffEngine) norm(v any) string {
	id := func(x core.NodeID) core.NodeID { return coreID(d.e, x) }
	acts := func(in []core.Action) []core.Action {
		out := make([]core.Action, len(in))
		for i, a := range in {
			a.Node = id(a.Node)
			a.Nodes = append([]core.NodeID(nil), a.Nodes...)
			for k := range a.Nodes {
				a.Nodes[k] = id(a.Nodes[k])
			}
			a.Slots = append([]int32(nil), a.Slots...)
			a.Incoming = append([]int32(nil), a.Incoming...)
			out[i] = a
		}
		return out
	}
	switch x := v.(type) {
	case core.MatchResult:
		x.Indices = append([]int32(nil), x.Indices...)
		x.LastDevice, x.LastHost, x.Best, x.Actions = id(x.LastDevice), id(x.LastHost), id(x.Best), acts(x.Actions)
		return fmt.Sprintf("%+v", x)
	case core.InsertResult:
		x.LastDevice = id(x.LastDevice)
		return fmt.Sprintf("%+v", x)
	case core.InsertStep:
		x.Result.LastDevice, x.Actions = id(x.Result.LastDevice), acts(x.Actions)
		return fmt.Sprintf("%+v", x)
	case core.EvictStep:
		x.Node, x.Actions = id(x.Node), acts(x.Actions)
		return fmt.Sprintf("%+v", x)
	case core.Receipt:
		x.Node = id(x.Node)
		return fmt.Sprintf("%+v", x)
	case core.BackupSpec:
		x.Node, x.SWA = id(x.Node), nodeSlots(x.SWA, id)
		return fmt.Sprintf("%+v", x)
	case core.LoadBackPlan:
		x.Anchor, x.Full, x.SWA = id(x.Anchor), nodeSlots(x.Full, id), nodeSlots(x.SWA, id)
		return fmt.Sprintf("%+v", x)
	case core.InsertHostResult:
		x.Node = id(x.Node)
		return fmt.Sprintf("%+v", x)
	case core.StorageSpec:
		x.Node = id(x.Node)
		return fmt.Sprintf("%+v", x)
	case []core.Action:
		return fmt.Sprintf("%+v", acts(x))
	case []core.NodeID:
		ids := make([]core.NodeID, len(x))
		for i, v := range x {
			ids[i] = id(v)
		}
		return fmt.Sprintf("%v", ids)
	}
	return fmt.Sprintf("%+v", v)
}

// nodeSlots copies v with its node ids mapped by id.
func nodeSlots(v []core.NodeSlots, id func(core.NodeID) core.NodeID) []core.NodeSlots {
	out := make([]core.NodeSlots, len(v))
	for i, e := range v {
		out[i] = core.NodeSlots{Node: id(e.Node), Slots: append([]int32(nil), e.Slots...)}
	}
	return out
}

// stepOut is what one step gave on one engine.
type stepOut struct {
	out string // normalised results and actions
	err error
}

// compareStep requires every engine's output to agree: identical
// normalised results and actions, the same core sentinel, identical
// messages between the wire engines (the same guest code), and for the
// direct engine the same message as the tree's own (the dispatcher only
// prefixes a stale node's wire id).
func compareStep(t *testing.T, step int, what string, engs []*diffEngine, outs []stepOut) {
	t.Helper()
	ref := outs[0]
	for i := 1; i < len(outs); i++ {
		o := outs[i]
		require.Equal(t, ref.out, o.out, "step %d %s: %s vs %s", step, what, engs[0].name, engs[i].name)
		require.Equal(t, errClass(ref.err), errClass(o.err), "step %d %s: %s vs %s: %v / %v", step, what, engs[0].name, engs[i].name, ref.err, o.err)
		if ref.err != nil {
			require.True(t, strings.HasSuffix(o.err.Error(), ref.err.Error()), "step %d %s: %q does not end with %q", step, what, o.err, ref.err)
		}
		if i > 1 && o.err != nil {
			require.Equal(t, outs[1].err.Error(), o.err.Error(), "step %d %s: wire engines' messages", step, what)
		}
	}
}

// TestEngines_Differential drives the direct, in-process and WebAssembly
// engines with the same long random command stream (matches, inserts,
// resumable inserts, locks, unlocks with mispaired receipts and stale or
// foreign handles, one-shot and step-wise evictions, resets, across
// namespaces) and requires identical results, actions, errors and
// rendered trees after every step.
func TestEngines_Differential(t *testing.T) {
	policies := core.PolicyNames()
	steps := 2500
	if testing.Short() || raceEnabled {
		steps = 500
	}
	for seed := uint64(1); seed <= 5; seed++ {
		cfg := core.Config{PageSize: []int{1, 2, 4, 2}[seed%4], Policy: policies[int(seed*3)%len(policies)], Bigram: seed == 4}
		if seed == 5 {
			cfg.Policy = "lhd" // floats in its refit: the module must rank as the Go tree does
		}
		t.Run(fmt.Sprintf("seed=%d/page=%d/%s/bigram=%v", seed, cfg.PageSize, cfg.Policy, cfg.Bigram), func(t *testing.T) {
			var engs []*diffEngine
			for _, k := range engineKinds {
				engs = append(engs, &diffEngine{name: k.name, e: newEngine(t, k.new, cfg)})
			}
			runDifferential(t, seed, steps, engs)
		})
	}
}

// TestEngines_DifferentialKVEvents runs the differential stream on
// engines that record KV events (both hash conventions, plain and bigram
// keys, namespaces with cache salts and adapters) and drains the events
// every few steps: every engine must report identical events (kinds,
// block hashes, parents, tokens, namespaces and sessions).
func TestEngines_DifferentialKVEvents(t *testing.T) {
	steps := 1500
	if testing.Short() || raceEnabled {
		steps = 400
	}
	cfgs := []core.Config{
		{PageSize: 2, Policy: "lru", KVEvents: true},
		{PageSize: 1, Policy: "lfu", KVEvents: true, HashConvention: core.HashVLLM},
		{PageSize: 2, Policy: "gdsf", KVEvents: true, HashConvention: core.HashVLLM, Bigram: true},
	}
	for i, cfg := range cfgs {
		seed := uint64(11 + i)
		t.Run(fmt.Sprintf("seed=%d/page=%d/%s/%s/bigram=%v", seed, cfg.PageSize, cfg.Policy, cfg.HashConvention, cfg.Bigram), func(t *testing.T) {
			var engs []*diffEngine
			for _, k := range engineKinds {
				engs = append(engs, &diffEngine{name: k.name, e: newEngine(t, k.new, cfg)})
			}
			kinds := runDifferential(t, seed, steps, engs)
			for _, k := range []core.EventKind{core.EventBlockStored, core.EventBlockRemoved, core.EventAllBlocksCleared} {
				require.Positive(t, kinds[k], "the stream produced no %v event", k)
			}
			t.Log("events by kind:", kinds)
		})
	}
}

// TestEngines_DifferentialHostTier runs the differential stream on trees
// with a host tier, under write-through and write-back, Full-only and
// with SWA and Mamba, and with the external linker. A simulated host
// backs up every BackupKV chain it is handed (spec, commit with fresh
// host slots, then under write-through a lock, the pending mark and the
// ack, now or at a later step), demotes or (host full) drops write-back
// eviction victims, evicts its host tier to make room, loads host hits
// back under a host lock and a device lock (finishing now or later, so
// that other plans meet its pins), inserts prefetched host KV, follows
// splits of its pending nodes, and sends host-tier operations on any
// node. Every engine must agree after every step, and the tree must
// stay sane, also with the host's operations in flight.
func TestEngines_DifferentialHostTier(t *testing.T) {
	steps := 1500
	if testing.Short() || raceEnabled {
		steps = 400
	}
	// Some sets are listed out of the canonical order: the engines must
	// run them as Full, SWA, Mamba all the same.
	swa := []core.Component{core.Full, core.SWA}
	cfgs := []core.Config{
		{PageSize: 2, HostTier: true, KVEvents: true},
		{PageSize: 1, HostTier: true, WritePolicy: core.WriteBack, Policy: "lfu", KVEvents: true, HashConvention: core.HashVLLM},
		{PageSize: 2, HostTier: true, ExternalLinker: true, WriteThroughThreshold: 2},
		{PageSize: 2, Components: swa, SWAWindow: 6, HostTier: true},
		{PageSize: 2, Components: []core.Component{core.SWA, core.Full}, SWAWindow: 4, HostTier: true, WritePolicy: core.WriteBack, Bigram: true},
		{PageSize: 1, Components: []core.Component{core.Mamba, core.Full, core.SWA}, SWAWindow: 5, MambaMaxPathStates: 2, HostTier: true, WritePolicy: core.WriteBack},
		{PageSize: 2, Components: []core.Component{core.Mamba, core.Full}, HostTier: true, Policy: "priority"},
	}
	for i, cfg := range cfgs {
		seed := uint64(31 + i)
		t.Run(fmt.Sprintf("seed=%d/%v/%v/page=%d/linker=%v", seed, cfg.Components, cfg.WritePolicy, cfg.PageSize, cfg.ExternalLinker), func(t *testing.T) {
			var engs []*diffEngine
			for _, k := range engineKinds {
				engs = append(engs, &diffEngine{name: k.name, e: newEngine(t, k.new, cfg)})
			}
			runDifferential(t, seed, steps, engs)
		})
	}
}

// TestEngines_DifferentialHybrid runs the differential stream on hybrid
// trees ({full,swa}, {full,mamba} with a path cap, {full,swa,mamba}):
// inserts carry SWA-evicted and branching lengths and Mamba slots, the
// host runs every MambaEvictExcessPathStates action it is handed, and the
// stream adds early SWA releases, path-state evictions on any node, SWA
// and Mamba evictions (one-shot and step-wise) and recency-list reads.
// Every engine must agree after every step, and the tree must stay sane.
func TestEngines_DifferentialHybrid(t *testing.T) {
	steps := 2000
	if testing.Short() || raceEnabled {
		steps = 500
	}
	// Two sets are listed out of the canonical order (see above).
	cfgs := []core.Config{
		{PageSize: 2, Components: []core.Component{core.Full, core.SWA}, SWAWindow: 8},
		{PageSize: 2, Components: []core.Component{core.Mamba, core.Full}, MambaMaxPathStates: 2, Policy: "lfu"},
		{PageSize: 2, Components: []core.Component{core.Full, core.SWA, core.Mamba}, SWAWindow: 8, MambaChunkSize: 4, MambaMaxPathStates: 3},
		{PageSize: 1, Components: []core.Component{core.SWA, core.Mamba, core.Full}, SWAWindow: 3, MambaMaxPathStates: 1, Policy: "priority", KVEvents: true},
	}
	for i, cfg := range cfgs {
		seed := uint64(21 + i)
		t.Run(fmt.Sprintf("seed=%d/%v/page=%d/window=%d/cap=%d", seed, cfg.Components, cfg.PageSize, cfg.SWAWindow, cfg.MambaMaxPathStates), func(t *testing.T) {
			var engs []*diffEngine
			for _, k := range engineKinds {
				engs = append(engs, &diffEngine{name: k.name, e: newEngine(t, k.new, cfg)})
			}
			runDifferential(t, seed, steps, engs)
		})
	}
}

// runDifferential drives engs with seed's stream for steps steps and
// compares them after every step. When the engines record KV events it
// also drains them every few steps (and after each reset), compares
// them, and returns how many of each kind were seen.
func runDifferential(t *testing.T, seed uint64, steps int, engs []*diffEngine) map[core.EventKind]int {
	cfg := engs[0].e.Config()
	kvEvents := cfg.KVEvents
	g := newWorkloadGen(seed)
	// Hybrid trees draw extra random numbers; a Full-only stream is the
	// same as before they existed.
	comps := cfg.Components
	if len(comps) == 0 {
		comps = []core.Component{core.Full}
	}
	var set core.ComponentSet
	for _, c := range comps {
		set = set.With(c)
	}
	hybrid := len(comps) > 1
	hasSWA, hasMamba := set.Has(core.SWA), set.Has(core.Mamba)
	hostTier := cfg.HostTier
	if hostTier {
		for _, d := range engs {
			d.host = newHostSim(cfg)
		}
	}
	// deferAck leaves this step's write-throughs pending (host tier).
	deferAck := false
	// work does the host's work for an insert's or a match's actions:
	// path caps, and with the host tier backups and split publish lists.
	work := func(d *diffEngine, acts []core.Action) string {
		if d.host != nil {
			return d.host.run(d, acts, false, deferAck)
		}
		return runPathCaps(d, acts)
	}
	nextMamba := int32(0)
	early := map[int]bool{} // receipts whose SWA part was released early
	// pickComp picks an eviction component of a hybrid tree (now and
	// then one it lacks).
	pickComp := func() core.Component {
		if !hybrid {
			return core.Full
		}
		if g.rng.IntN(20) == 0 {
			return core.Component(g.rng.IntN(3))
		}
		return comps[g.rng.IntN(len(comps))]
	}
	eventKinds := map[core.EventKind]int{}
	rng := g.rng
	nextSlot := int32(0)
	outs := make([]stepOut, len(engs))
	classes := map[string]int{}
	defer func() { t.Log(classes) }()
	// actionKinds counts the action kinds the reference engine returned.
	actionKinds := map[string]int{}
	// each applies fn to every engine and compares.
	each := func(step int, what string, fn func(d *diffEngine) stepOut) {
		for i, d := range engs {
			outs[i] = fn(d)
		}
		compareStep(t, step, what, engs, outs)
		classes[strings.Fields(what)[0]+" "+errClass(outs[0].err)]++
		for _, k := range countedKinds {
			actionKinds[k] += strings.Count(outs[0].out, k+" ") // Action.String starts with its kind
		}
	}
	// pickNode returns the k-th handle an engine issued or, for k < 0,
	// the core-form id raw (which may or may not name a live node) in the
	// engine's form.
	pickNode := func(d *diffEngine, k int, raw core.NodeID) core.NodeID {
		if k < 0 {
			return engineID(d.e, raw)
		}
		return d.nodes[k]
	}
	// hybridStep is one step that only hybrid streams take: an early SWA
	// release, a path-state eviction on any node, a read of a recency
	// list, or a whole request (match, lock, insert of the prompt and
	// more, unlock), which is what makes an insert meet SWA tombstones
	// under a locked path. It returns the step's description, or "" when
	// it had nothing to do.
	hybridStep := func(step int) string {
		switch sub := rng.IntN(4); sub {
		case 0:
			if len(engs[0].receipts) == 0 {
				return ""
			}
			kr := rng.IntN(len(engs[0].receipts))
			mispair := rng.IntN(6) == 0
			kn := rng.IntN(len(engs[0].nodes))
			what := fmt.Sprintf("unlock-swa receipt#%d mispair=%v node#%d", kr, mispair, kn)
			each(step, what, func(d *diffEngine) stepOut {
				rc := d.receipts[kr]
				node := rc.Node
				if mispair {
					node = d.nodes[kn]
				}
				acts, err := d.e.UnlockSWA(node, rc)
				if d == engs[0] && err == nil {
					early[kr] = true
				}
				return stepOut{d.norm(acts), err}
			})
			return what
		case 1:
			k := rng.IntN(len(engs[0].nodes)+2) - 1
			if k == len(engs[0].nodes) {
				k = -1 - rng.IntN(20)
			}
			raw := core.NodeID(uint64(1+rng.IntN(3))<<32 | uint64(1+rng.IntN(30)))
			what := fmt.Sprintf("evict-excess node#%d raw=%v", k, raw)
			each(step, what, func(d *diffEngine) stepOut {
				acts, err := d.e.EvictExcessPathStates(pickNode(d, k, raw))
				return stepOut{d.norm(acts), err}
			})
			return what
		case 2:
			c := pickComp()
			host := rng.IntN(8) == 0
			what := fmt.Sprintf("lru %v host=%v", c, host)
			each(step, what, func(d *diffEngine) stepOut {
				ids, err := d.e.(lruLister).lruOrder(c, host)
				return stepOut{d.norm(ids), err}
			})
			return what
		}
		ns, p := g.prompt()
		p = append(p, g.tokens(rng.IntN(2*cfg.PageSize+1))...)
		slots := make([]int32, len(p))
		for i := range slots {
			slots[i] = nextSlot
			nextSlot++
		}
		params := core.InsertParams{Namespace: ns, Tokens: p, Slots: slots, MambaSlot: nextMamba}
		nextMamba++
		if kvEvents {
			params.SessionID = fmt.Sprintf("req-%d", step%3)
		}
		release := rng.IntN(3) == 0 && hasSWA
		what := fmt.Sprintf("request %v %v early=%v", ns, p, release)
		each(step, what, func(d *diffEngine) stepOut {
			var b strings.Builder
			m, err := d.e.Match(nil, ns, p)
			if err != nil {
				return stepOut{d.norm(m), err}
			}
			b.WriteString(d.norm(m) + work(d, m.Actions))
			rc, err := d.e.Lock(m.LastDevice, 0)
			if err != nil {
				return stepOut{b.String(), err}
			}
			b.WriteString(d.norm(rc))
			if release {
				acts, err := d.e.UnlockSWA(m.LastDevice, rc)
				if err != nil {
					return stepOut{b.String(), err}
				}
				b.WriteString(d.norm(acts))
			}
			// The request's own slots stand for its whole sequence (no
			// prev prefix), so every cached position is a duplicate that
			// may recover an SWA tombstone.
			res, acts, err := d.e.Insert(params)
			if err != nil {
				return stepOut{b.String(), err}
			}
			d.nodes = append(d.nodes, res.LastDevice)
			b.WriteString(d.norm(res) + d.norm(acts) + work(d, acts))
			return stepOut{b.String(), d.e.Unlock(m.LastDevice, rc, release)}
		})
		return what
	}
	// hostOpStep is a host-tier operation on any node, as a confused host
	// might send it: mostly refused, and when it succeeds, completed at
	// once so that the host's view of what is in flight stays exact.
	hostOpStep := func(step int) string {
		k := rng.IntN(len(engs[0].nodes)+2) - 1
		if k == len(engs[0].nodes) {
			k = -1 - rng.IntN(20)
		}
		raw := core.NodeID(uint64(1+rng.IntN(3))<<32 | uint64(1+rng.IntN(30)))
		k2 := rng.IntN(len(engs[0].nodes)+1) - 1
		sub := rng.IntN(10)
		kr := rng.IntN(len(engs[0].host.locks) + 1)
		mispair := rng.IntN(4) == 0
		what := fmt.Sprintf("host op %d node#%d raw=%v node2#%d receipt#%d mispair=%v", sub, k, raw, k2, kr, mispair)
		each(step, what, func(d *diffEngine) stepOut {
			node := pickNode(d, k, raw)
			other := core.NodeID(0)
			if k2 >= 0 {
				other = d.nodes[k2]
			}
			h := d.host
			var b strings.Builder
			switch sub {
			case 0:
				rc, err := d.e.HostLock(node)
				if err == nil {
					h.locks = append(h.locks, rc)
				}
				return stepOut{d.norm(rc), err}
			case 1:
				if kr == len(h.locks) {
					return stepOut{"", d.e.HostUnlock(node, core.Receipt{Node: node, Serial: 1, Host: true})}
				}
				rc := h.locks[kr]
				at := rc.Node
				if mispair {
					at = node
				}
				err := d.e.HostUnlock(at, rc)
				if err == nil {
					h.locks = append(h.locks[:kr:kr], h.locks[kr+1:]...)
				}
				return stepOut{"", err}
			case 2:
				// A commit whose shape differs from the spec.
				spec, err := d.e.BackupSpec(node)
				if err != nil {
					return stepOut{"", err}
				}
				c := core.BackupCommit{Full: h.hostSlots(len(spec.Full) + 1), Mamba: -1}
				return stepOut{d.norm(spec), d.e.CommitBackup(node, c)}
			case 3:
				acts, err := d.e.Demote(node)
				return stepOut{d.norm(acts) + h.run(d, acts, false, false), err}
			case 4:
				dropped, acts, err := d.e.DropSubtreeNoHost(node)
				return stepOut{fmt.Sprintf("%v %s%s", dropped, d.norm(acts), h.run(d, acts, false, false)), err}
			case 5:
				// A plan, and a commit of nothing (refused unless the plan
				// is empty).
				plan, err := d.e.LoadBackPlan(node)
				if err != nil {
					return stepOut{"", err}
				}
				acts, err := d.e.CommitLoadBack(node, core.LoadBackCommit{Mamba: -1})
				return stepOut{d.norm(plan) + d.norm(acts), err}
			case 6:
				spec, err := d.e.StorageSpec(node)
				n, err2 := d.e.BackfillHashes()
				return stepOut{fmt.Sprintf("%s hashed=%d", d.norm(spec), n), errors.Join(err, err2)}
			case 7:
				h.ack++
				ack := h.ack
				if mispair {
					ack = 0
				}
				ids, err := d.e.MarkWriteThroughPending([]core.NodeID{node, other}, ack)
				if err == nil {
					err = d.e.FinishWriteThrough(ids, ack)
				}
				return stepOut{d.norm(ids), err}
			case 8:
				chain, err := d.e.LinkerChain(node)
				if err != nil || mispair {
					return stepOut{d.norm(chain), errors.Join(err, d.e.MarkLinkerStoredPath(node, other))}
				}
				fmt.Fprintf(&b, "%s", d.norm(chain))
				h.offload++
				err = d.e.MarkLinkerPending(chain, h.offload)
				if err == nil && len(chain) > 0 {
					h.offloads = append(h.offloads, pendingOffload{id: h.offload, nodes: append([]core.NodeID(nil), chain...)})
				}
				return stepOut{b.String(), err}
			}
			// A view of what is in flight that may be wrong: compared only.
			o := h.ongoing()
			if mispair {
				o = core.Ongoing{WriteThrough: []core.NodeID{node}}
			}
			return stepOut{"", d.e.SanityCheckOngoing(o)}
		})
		return what
	}
	// hostStep is one step that only host-tier streams take: a request
	// that loads its host hit back first, the acks of what is in flight,
	// a host eviction, a host insert, or a host-tier operation on any node
	// (mostly refused). It returns the step's description, or "" when it
	// had nothing to do.
	var lastNS core.Namespace // the last host request's prompt
	var lastP []uint32
	hostStep := func(step int) string {
		switch sub := rng.IntN(8); sub {
		case 0, 1, 2:
			ns, p := g.prompt()
			p = append(p, g.tokens(rng.IntN(2*cfg.PageSize+1))...)
			if rng.IntN(3) == 0 && lastP != nil {
				// The same request again: with Mamba only its own end
				// has a state to hit.
				ns, p = lastNS, lastP
			}
			lastNS, lastP = ns, p
			fresh := make([]int32, len(p))
			for i := range fresh {
				fresh[i] = nextSlot
				nextSlot++
			}
			mamba := nextMamba
			nextMamba++
			load, deferFinish, resumable := rng.IntN(5) != 0, rng.IntN(3) == 0, rng.IntN(2) == 0
			// Evicting first (backing up and demoting under write-back)
			// leaves host hits for the request to load back.
			evictFirst := []int{0, 0, 3, 8, 1 << 20}[rng.IntN(5)]
			what := fmt.Sprintf("host request %v %v load=%v defer=%v resumable=%v evict=%d", ns, p, load, deferFinish, resumable, evictFirst)
			each(step, what, func(d *diffEngine) stepOut {
				var b strings.Builder
				if evictFirst > 0 {
					acts, freed, err := d.e.Evict(core.Full, evictFirst, nil)
					fmt.Fprintf(&b, "evict %d %s %s%s / ", freed, d.norm(acts), errClass(err), d.host.run(d, acts, true, deferAck))
				}
				m, err := d.e.Match(nil, ns, p)
				if err != nil {
					return stepOut{"", err}
				}
				b.WriteString(d.norm(m) + work(d, m.Actions))
				if load && m.Best != m.LastDevice {
					d.host.loadBack(&b, d, m.Best, deferFinish)
					if m, err = d.e.Match(nil, ns, p); err != nil {
						return stepOut{b.String(), err}
					}
					b.WriteString(" / " + d.norm(m) + work(d, m.Actions))
				}
				rc, err := d.e.Lock(m.LastDevice, 0)
				if err != nil {
					return stepOut{b.String(), err}
				}
				prev := m.DeviceLen
				slots := append(append([]int32(nil), m.Indices...), fresh[min(prev, len(fresh)):]...)
				params := core.InsertParams{Namespace: ns, Tokens: p, Slots: slots, PrevPrefixLen: prev, MambaSlot: mamba}
				if resumable {
					st, err := d.e.BeginInsert(params)
					b.WriteString(" " + d.norm(st))
					for err == nil && !st.Done {
						b.WriteString(work(d, st.Actions))
						st, err = d.e.ResumeInsert()
						b.WriteString(" / " + d.norm(st))
					}
					if err == nil {
						d.nodes = append(d.nodes, st.Result.LastDevice)
						b.WriteString(work(d, st.Actions))
					} else {
						b.WriteString(" " + errClass(err))
					}
				} else {
					res, acts, err := d.e.Insert(params)
					b.WriteString(" " + d.norm(res) + d.norm(acts) + " " + errClass(err))
					if err == nil {
						d.nodes = append(d.nodes, res.LastDevice)
						b.WriteString(work(d, acts))
					}
				}
				return stepOut{b.String(), d.e.Unlock(m.LastDevice, rc, false)}
			})
			return what
		case 3:
			ok := rng.IntN(4) != 0
			what := fmt.Sprintf("host acks ok=%v", ok)
			each(step, what, func(d *diffEngine) stepOut {
				var b strings.Builder
				d.host.finish(&b, d, ok)
				return stepOut{b.String(), nil}
			})
			return what
		case 4:
			c := comps[rng.IntN(len(comps))]
			if rng.IntN(20) == 0 {
				c = core.Component(rng.IntN(4))
			}
			want := rng.IntN(20) - 1
			what := fmt.Sprintf("evict host %v want=%d", c, want)
			each(step, what, func(d *diffEngine) stepOut {
				acts, freed, err := d.e.EvictHost(c, want, make([]core.Action, 1))
				return stepOut{fmt.Sprintf("freed=%d %s%s", freed, d.norm(acts), d.host.run(d, acts, false, false)), err}
			})
			return what
		case 5:
			// Prefetched KV: the whole prompt below the root (what the
			// tree already holds comes back as the prefix), or now and
			// then random tokens below any node.
			ns, p := g.prompt()
			k := rng.IntN(len(engs[0].nodes)+4) - 4
			if k >= 0 {
				p = g.tokens(rng.IntN(3 * cfg.PageSize))
			}
			short := rng.IntN(10) == 0
			what := fmt.Sprintf("insert host node#%d %v %v short=%v", k, ns, p, short)
			each(step, what, func(d *diffEngine) stepOut {
				anchor, err := d.e.(transcripttest.Inspector).Root()
				if err != nil {
					return stepOut{"", err}
				}
				if k >= 0 {
					anchor = d.nodes[k]
				}
				hs := d.host.hostSlots(len(p))
				if short && len(hs) > 0 {
					hs = hs[1:]
				}
				var b strings.Builder
				if over := d.host.hostUsed + len(hs) - d.host.hostCap; over > 0 {
					acts, freed, err := d.e.EvictHost(core.Full, over, nil)
					fmt.Fprintf(&b, "room %d %s %s%s ", freed, d.norm(acts), errClass(err), d.host.run(d, acts, false, false))
				}
				res, acts, err := d.e.InsertHost(anchor, ns, p, hs)
				b.WriteString(d.norm(res) + d.norm(acts) + d.host.run(d, acts, false, false))
				if err == nil && res.Node != 0 {
					d.nodes = append(d.nodes, res.Node)
				}
				if L := alignedAtoms(cfg, len(p)); err == nil && !res.Dropped && res.PrefixLen < L {
					d.host.hostUsed += L - res.PrefixLen // the new host-only node's
				}
				return stepOut{b.String(), err}
			})
			return what
		}
		return hostOpStep(step)
	}
	for step := range steps {
		var what string
		// A hybrid stream draws one more number per step (a Full-only
		// stream is the same as before hybrid trees existed).
		own := hybrid && rng.IntN(6) == 0
		// A host-tier stream draws two more.
		hostOwn := hostTier && rng.IntN(4) == 0
		deferAck = hostTier && rng.IntN(4) == 0
		switch op := rng.IntN(100); {
		case own:
			if what = hybridStep(step); what == "" {
				continue
			}
		case hostOwn:
			if what = hostStep(step); what == "" {
				continue
			}
		case op < 25:
			ns, p := g.prompt()
			what = fmt.Sprintf("match %v %v", ns, p)
			each(step, what, func(d *diffEngine) stepOut {
				m, err := d.e.Match(make([]int32, 1, 4), ns, p)
				if err == nil {
					d.nodes = append(d.nodes, m.LastDevice)
				}
				out := d.norm(m.Actions)
				if err == nil {
					out += d.norm(m)
				}
				if d.host != nil {
					out += d.host.run(d, m.Actions, false, deferAck)
				}
				return stepOut{out, err}
			})
		case op < 45:
			ns, p := g.prompt()
			slots := make([]int32, max(0, len(p)+rng.IntN(3)-1))
			for i := range slots {
				slots[i] = nextSlot
				nextSlot++
			}
			params := core.InsertParams{Namespace: ns, Tokens: p, Slots: slots, PrevPrefixLen: rng.IntN(3) * rng.IntN(len(p)+1),
				Priority: int64(rng.IntN(5)), Chunked: rng.IntN(4) == 0, TrackAdopted: rng.IntN(2) == 0}
			if kvEvents {
				// Sessions split stored events (without touching the stream).
				params.SessionID = fmt.Sprintf("req-%d", step%3)
			}
			if hasSWA {
				page := cfg.PageSize
				params.SWAEvictedSeqlen = page * rng.IntN(len(p)/page+1)
				if rng.IntN(3) == 0 {
					params.SWAEvictedSeqlen = 0
				}
				if rng.IntN(30) == 0 {
					params.SWAEvictedSeqlen++ // unaligned (or fine with page 1)
				}
				if rng.IntN(3) == 0 {
					params.SWABranchingSeqlen = page * rng.IntN(len(p)/page+2)
				}
			}
			if hasMamba {
				params.MambaSlot = nextMamba
				nextMamba++
				if rng.IntN(30) == 0 {
					params.MambaSlot = -1
				}
			}
			resumable := rng.IntN(3) == 0
			what = fmt.Sprintf("insert resumable=%v %+v", resumable, params)
			each(step, what, func(d *diffEngine) stepOut {
				if resumable && (hybrid || hostTier) {
					// As a host does: run each barrier's work, then
					// resume, until done. (The tree is not touched
					// otherwise while the insert is suspended.)
					st, err := d.e.BeginInsert(params)
					out := d.norm(st)
					for err == nil && !st.Done {
						out += work(d, st.Actions)
						st, err = d.e.ResumeInsert()
						out += " / " + d.norm(st)
					}
					if err == nil {
						d.nodes = append(d.nodes, st.Result.LastDevice)
						out += work(d, st.Actions)
					}
					return stepOut{out, err}
				}
				if resumable {
					st, err := d.e.BeginInsert(params)
					if err == nil {
						d.nodes = append(d.nodes, st.Result.LastDevice)
					}
					return stepOut{d.norm(st), err}
				}
				res, acts, err := d.e.Insert(params)
				if err == nil {
					d.nodes = append(d.nodes, res.LastDevice)
				}
				out := d.norm(res) + d.norm(acts)
				if err == nil {
					out += work(d, acts)
				}
				return stepOut{out, err}
			})
		case op < 48:
			what = "resume/end insert"
			end := rng.IntN(2) == 0
			each(step, what, func(d *diffEngine) stepOut {
				if end {
					acts, err := d.e.EndInsert()
					return stepOut{d.norm(acts), err}
				}
				st, err := d.e.ResumeInsert()
				return stepOut{d.norm(st), err}
			})
		case op < 63:
			k := rng.IntN(len(engs[0].nodes)+2) - 1
			if k == len(engs[0].nodes) {
				k = -1 - rng.IntN(20)
			}
			skip := core.ComponentSet(0)
			if rng.IntN(10) == 0 {
				skip = skip.With(core.SWA)
			}
			if hybrid && rng.IntN(8) == 0 {
				skip = skip.With(core.Mamba)
			}
			raw := core.NodeID(uint64(1+rng.IntN(3))<<32 | uint64(1+rng.IntN(30)))
			what = fmt.Sprintf("lock node#%d raw=%v", k, raw)
			each(step, what, func(d *diffEngine) stepOut {
				rc, err := d.e.Lock(pickNode(d, k, raw), skip)
				if err == nil {
					d.receipts = append(d.receipts, rc)
				}
				return stepOut{d.norm(rc), err}
			})
		case op < 75:
			if len(engs[0].receipts) == 0 {
				continue
			}
			kr := rng.IntN(len(engs[0].receipts))
			mispair := rng.IntN(5) == 0
			kn := rng.IntN(len(engs[0].nodes))
			skipSWA := rng.IntN(8) == 0
			if hasSWA {
				// Mostly what the receipt needs; now and then the wrong one.
				skipSWA = skipSWA != early[kr]
			}
			what = fmt.Sprintf("unlock receipt#%d mispair=%v node#%d skipSWA=%v", kr, mispair, kn, skipSWA)
			each(step, what, func(d *diffEngine) stepOut {
				rc := d.receipts[kr]
				node := rc.Node
				if mispair {
					node = d.nodes[kn]
				}
				return stepOut{"", d.e.Unlock(node, rc, skipSWA)}
			})
		case op < 83:
			want := rng.IntN(24) - 2
			comp := pickComp()
			what = fmt.Sprintf("evict %v want=%d", comp, want)
			each(step, what, func(d *diffEngine) stepOut {
				acts, freed, err := d.e.Evict(comp, want, make([]core.Action, 1))
				out := fmt.Sprintf("freed=%d ", freed) + d.norm(acts)
				if d.host != nil {
					out += d.host.run(d, acts, true, deferAck)
				}
				return stepOut{out, err}
			})
		case op < 92:
			want := rng.IntN(16)
			sub := rng.IntN(4)
			comp := core.Full
			if sub == 0 {
				comp = pickComp()
			}
			what = fmt.Sprintf("step-wise evict %d %v want=%d", sub, comp, want)
			each(step, what, func(d *diffEngine) stepOut {
				switch sub {
				case 0:
					return stepOut{"", d.e.EvictStart(comp, want)}
				case 3:
					return stepOut{"", d.e.EvictEnd()}
				}
				st, err := d.e.EvictNext()
				out := d.norm(st)
				if d.host != nil {
					out += d.host.run(d, st.Actions, true, deferAck)
				}
				return stepOut{out, err}
			})
		case op < 97:
			what = "sizes"
			each(step, what, func(d *diffEngine) stepOut {
				var b strings.Builder
				var errs []error
				for _, c := range comps {
					ev, err1 := d.e.Evictable(c)
					pr, err2 := d.e.Protected(c)
					fmt.Fprintf(&b, "%v %d %d ", c, ev, pr)
					errs = append(errs, err1, err2)
				}
				o, err3 := d.e.Evictable(core.Component(7))
				fmt.Fprintf(&b, "%d", o)
				return stepOut{b.String(), errors.Join(append(errs, err3)...)}
			})
		default:
			if rng.IntN(4) != 0 {
				continue
			}
			what = "reset"
			each(step, what, func(d *diffEngine) stepOut {
				if d.host != nil {
					d.host.reset()
				}
				return stepOut{"", d.e.Reset()}
			})
		}
		each(step, what+" (render)", func(d *diffEngine) stepOut {
			s, err := d.e.Render()
			return stepOut{s, err}
		})
		if step%25 == 0 || ((hybrid || hostTier) && step%5 == 0) {
			each(step, what+" (sanity)", func(d *diffEngine) stepOut { return stepOut{"", d.e.SanityCheck()} })
			if hybrid || hostTier {
				require.NoError(t, outs[0].err, "step %d %s: sanity", step, what)
			}
		}
		if hostTier && step%5 == 2 {
			// The host's view of its operations in flight is exact.
			each(step, what+" (sanity ongoing)", func(d *diffEngine) stepOut {
				return stepOut{"", d.e.SanityCheckOngoing(d.host.ongoing())}
			})
			require.NoError(t, outs[0].err, "step %d %s: sanity with the operations in flight", step, what)
		}
		// Drain on a schedule of its own (the stream's random numbers are
		// untouched), so that events coalesce across several steps.
		if kvEvents && (step%5 == 4 || what == "reset") {
			each(step, what+" (events)", func(d *diffEngine) stepOut {
				evs, err := d.e.TakeEvents(make([]core.Event, 1, 4))
				var b strings.Builder
				for _, e := range evs {
					fmt.Fprintf(&b, "%+v\n", e)
				}
				if d == engs[0] {
					for _, e := range evs[1:] {
						eventKinds[e.Kind]++
						if e.Kind == core.EventBlockStored && !hostTier {
							require.NotEmpty(t, e.SessionID, "step %d: a stored event lost its session", step)
						}
					}
				}
				return stepOut{b.String(), err}
			})
		}
	}
	if hybrid {
		t.Log("action kinds:", actionKinds)
		want := []string{core.ActionFreeDeviceKV.String(), core.ActionFreeDeviceSlots.String()}
		if hasSWA {
			want = append(want, core.ActionFreeDeviceKVFullOnly.String(), core.ActionSWARebuild.String())
			if steps >= 2000 { // rare: a locked path through a tombstone
				want = append(want, core.ActionRecoverSWAWithLockedFull.String())
			}
		}
		if hasMamba && cfg.MambaMaxPathStates > 0 {
			want = append(want, core.ActionMambaEvictExcessPathStates.String())
		}
		for _, k := range want {
			require.Positive(t, actionKinds[k], "the stream produced no %s action", k)
		}
	}
	if hostTier {
		t.Log("host:", engs[0].host.stats)
		t.Log("action kinds:", actionKinds)
		want := []string{core.ActionBackupKV.String(), core.ActionFreeHostSlots.String(), core.ActionFreeDeviceSlots.String()}
		if steps >= 1500 { // load-backs need a backup, an eviction and a hit, in that order
			require.Positive(t, engs[0].host.stats["plan"], "the stream loaded nothing back")
			if hasSWA {
				want = append(want, core.ActionRebuildFullToSWAMapping.String())
			}
		}
		for _, k := range want {
			require.Positive(t, actionKinds[k], "the stream produced no %s action", k)
		}
	}
	return eventKinds
}

// countedKinds are the action kinds hybrid and host-tier streams count.
var countedKinds = []string{
	core.ActionFreeDeviceKV.String(), core.ActionFreeDeviceKVFullOnly.String(), core.ActionFreeDeviceSlots.String(),
	core.ActionSWARebuild.String(), core.ActionRecoverSWAWithLockedFull.String(),
	core.ActionMambaEvictExcessPathStates.String(),
	core.ActionBackupKV.String(), core.ActionReplaceWriteThroughOnSplit.String(), core.ActionFreeHostSlots.String(),
	core.ActionRebuildFullToSWAMapping.String(),
}

// runPathCaps does what a host does with an insert's actions: it runs
// EvictExcessPathStates for each MambaEvictExcessPathStates action, and
// returns the normalised frees. The actions' node ids are read before the
// first call (which may reuse the engine's buffers).
func runPathCaps(d *diffEngine, acts []core.Action) string {
	var tails []core.NodeID
	for _, a := range acts {
		if a.Kind == core.ActionMambaEvictExcessPathStates {
			tails = append(tails, a.Node)
		}
	}
	var b strings.Builder
	for _, tail := range tails {
		frees, err := d.e.EvictExcessPathStates(tail)
		fmt.Fprintf(&b, " cap %v: %s %s", coreID(d.e, tail), d.norm(frees), errClass(err))
	}
	return b.String()
}

// hostSim is what a host keeps for the host tier during a differential
// run, one per engine: slot counters, a host pool of limited size, the
// write-throughs and load-backs in flight (with the locks that pin
// them), the host locks the stream took, the linker's offloads in
// flight. Every engine's copy sees the same outputs and so stays the
// same; what it does is written out and compared like any result.
type hostSim struct {
	writeBack bool
	nextDev   int32 // device slots for load-backs
	nextHost  int32 // host slots for backups and host inserts
	hostUsed  int   // Full host slots held (the pool the host limits)
	hostCap   int
	ack       int64
	offload   int64
	wt        []pendingWT
	lb        []pendingLB
	locks     []core.Receipt // host locks taken by the stream
	offloads  []pendingOffload
	stats     map[string]int // what the host did, for the log
}

// pendingWT is a write-through whose ack the host has not sent yet: the
// marked nodes (updated on splits) and the lock on the node it copied.
type pendingWT struct {
	ack   int64
	nodes []core.NodeID
	node  core.NodeID
	rc    core.Receipt
}

// pendingLB is a load-back not finished yet, with its anchor's locks.
type pendingLB struct {
	anchor  core.NodeID
	rc, hrc core.Receipt
}

// pendingOffload is an external offload not finished yet.
type pendingOffload struct {
	id    int64
	nodes []core.NodeID
}

func newHostSim(cfg core.Config) *hostSim {
	h := &hostSim{writeBack: cfg.WritePolicy == core.WriteBack,
		nextDev: 1 << 24, nextHost: 1 << 20, hostCap: 320, offload: 1 << 30, stats: map[string]int{}}
	if h.writeBack {
		// Write-back reclaims host copies of device data: a small host
		// still fills up now and then, and evictions drop instead.
		h.hostCap = 48
	}
	return h
}

func (h *hostSim) devSlots(n int) []int32 {
	v := make([]int32, n)
	for i := range v {
		v[i] = h.nextDev
		h.nextDev++
	}
	return v
}

func (h *hostSim) hostSlots(n int) []int32 {
	v := make([]int32, n)
	for i := range v {
		v[i] = h.nextHost
		h.nextHost++
	}
	return v
}

// reset forgets everything in flight (a reset released it all).
func (h *hostSim) reset() {
	h.wt, h.lb, h.locks, h.offloads, h.hostUsed = nil, nil, nil, nil, 0
}

// hostJob is one action the host must act on, copied out of the
// engine's buffers (the next call may reuse them).
type hostJob struct {
	kind  core.ActionKind
	node  core.NodeID
	nodes []core.NodeID
	ack   int64
}

// run does what a host does with acts: it frees host slots (counting
// them), updates its publish lists on splits, runs Mamba path caps and
// backs up BackupKV chains. After an eviction step (evicting) a
// write-back BackupKV leaf is then demoted, or dropped when the host has
// no room. deferAck leaves write-throughs pending for a later ack.
func (h *hostSim) run(d *diffEngine, acts []core.Action, evicting, deferAck bool) string {
	var jobs []hostJob
	for _, a := range acts {
		switch a.Kind {
		case core.ActionFreeHostSlots:
			if a.Component == core.Full {
				h.hostUsed -= len(a.Slots)
			}
		case core.ActionBackupKV, core.ActionReplaceWriteThroughOnSplit, core.ActionMambaEvictExcessPathStates:
			jobs = append(jobs, hostJob{a.Kind, a.Node, append([]core.NodeID(nil), a.Nodes...), a.Ack})
		}
	}
	var b strings.Builder
	done := map[core.NodeID]bool{} // an eviction may name a leaf twice
	for _, j := range jobs {
		switch j.kind {
		case core.ActionReplaceWriteThroughOnSplit:
			h.stats["split pending"]++
			for k := range h.wt {
				if h.wt[k].ack == j.ack {
					h.wt[k].nodes = replaceSplit(h.wt[k].nodes, j.nodes)
				}
			}
			for k := range h.offloads {
				if h.offloads[k].id == j.ack {
					h.offloads[k].nodes = replaceSplit(h.offloads[k].nodes, j.nodes)
				}
			}
		case core.ActionMambaEvictExcessPathStates:
			frees, err := d.e.EvictExcessPathStates(j.node)
			fmt.Fprintf(&b, " cap %v: %s %s", coreID(d.e, j.node), d.norm(frees), errClass(err))
		case core.ActionBackupKV:
			for _, id := range j.nodes {
				if evicting && done[id] {
					continue
				}
				done[id] = true
				ok := h.backup(&b, d, id, deferAck)
				if evicting && h.writeBack {
					if ok {
						h.stats["demote"]++
						acts, err := d.e.Demote(id)
						fmt.Fprintf(&b, " demote %v: %s %s", coreID(d.e, id), d.norm(acts), errClass(err))
						b.WriteString(h.run(d, acts, false, false))
					} else {
						h.stats["drop"]++
						dropped, acts, err := d.e.DropSubtreeNoHost(id)
						h.stats[fmt.Sprintf("drop dropped=%v %s", dropped, errClass(err))]++
						fmt.Fprintf(&b, " drop %v: %v %s %s", coreID(d.e, id), dropped, d.norm(acts), errClass(err))
						b.WriteString(h.run(d, acts, false, false))
					}
				}
				if !ok && !h.writeBack {
					break // write-through backs ancestors up first
				}
			}
		}
	}
	return b.String()
}

// alignedAtoms is the page-aligned atom count of n tokens.
func alignedAtoms(cfg core.Config, n int) int {
	if cfg.Bigram {
		n = max(n-1, 0)
	}
	return n / cfg.PageSize * cfg.PageSize
}

// replaceSplit replaces split[0] in nodes by split[1], split[2].
func replaceSplit(nodes, split []core.NodeID) []core.NodeID {
	var out []core.NodeID
	for _, id := range nodes {
		if id == split[0] {
			out = append(out, split[1], split[2])
		} else {
			out = append(out, id)
		}
	}
	return out
}

// backup backs node id up (spec, room on the host, commit) and, under
// write-through, publishes it under a lock and an ack (now, or later when
// deferAck). It reports whether the node's Full data is on the host.
func (h *hostSim) backup(b *strings.Builder, d *diffEngine, id core.NodeID, deferAck bool) bool {
	spec, err := d.e.BackupSpec(id)
	fmt.Fprintf(b, " backup %v:", coreID(d.e, id))
	if err != nil {
		h.stats["backup refused"]++
		b.WriteString(" " + errClass(err))
		return false
	}
	if over := h.hostUsed + len(spec.Full) - h.hostCap; over > 0 {
		acts, freed, err := d.e.EvictHost(core.Full, over, nil)
		fmt.Fprintf(b, " make room %d: %d %s %s", over, freed, d.norm(acts), errClass(err))
		b.WriteString(h.run(d, acts, false, false))
		if h.hostUsed+len(spec.Full) > h.hostCap {
			h.stats["host full"]++
			b.WriteString(" host full")
			return false
		}
		// Host evictions may have changed the SWA runs: ask again.
		if spec, err = d.e.BackupSpec(id); err != nil {
			b.WriteString(" " + errClass(err))
			return false
		}
	}
	b.WriteString(" " + d.norm(spec))
	c := core.BackupCommit{Mamba: -1}
	if spec.Full != nil {
		c.Full = h.hostSlots(len(spec.Full))
	}
	for _, e := range spec.SWA {
		c.SWA = append(c.SWA, h.hostSlots(len(e.Slots)))
	}
	if spec.Mamba >= 0 {
		c.Mamba = h.hostSlots(1)[0]
	}
	if err := d.e.CommitBackup(id, c); err != nil {
		b.WriteString(" commit " + errClass(err))
		return false
	}
	h.hostUsed += len(c.Full)
	h.stats["backup"]++
	if h.writeBack || c.Full == nil {
		return true
	}
	rc, err := d.e.Lock(id, 0)
	if err != nil {
		b.WriteString(" lock " + errClass(err))
		return true
	}
	h.ack++
	ids, err := d.e.MarkWriteThroughPending([]core.NodeID{id}, h.ack)
	fmt.Fprintf(b, " pending %d %s %s", h.ack, d.norm(ids), errClass(err))
	if err == nil && deferAck {
		h.stats["write-through deferred"]++
		h.wt = append(h.wt, pendingWT{ack: h.ack, nodes: append([]core.NodeID(nil), ids...), node: id, rc: rc})
		return true
	}
	if err == nil {
		fmt.Fprintf(b, " ack %s", errClass(d.e.FinishWriteThrough(ids, h.ack)))
	}
	fmt.Fprintf(b, " unlock %s", errClass(d.e.Unlock(id, rc, false)))
	return true
}

// loadBack brings anchor's host-only prefix back under a host lock and a
// device lock, finishing now or (deferFinish) at a later ack step.
func (h *hostSim) loadBack(b *strings.Builder, d *diffEngine, anchor core.NodeID, deferFinish bool) {
	fmt.Fprintf(b, " load-back %v:", coreID(d.e, anchor))
	hrc, err := d.e.HostLock(anchor)
	if err != nil {
		b.WriteString(" host-lock " + errClass(err))
		return
	}
	b.WriteString(" " + d.norm(hrc))
	rc, err := d.e.Lock(anchor, 0)
	if err != nil {
		fmt.Fprintf(b, " lock %s host-unlock %s", errClass(err), errClass(d.e.HostUnlock(anchor, hrc)))
		return
	}
	plan, err := d.e.LoadBackPlan(anchor)
	if err == nil {
		b.WriteString(" " + d.norm(plan))
		switch {
		case plan.Pinned:
			h.stats["plan pinned"]++
		case plan.Empty():
			h.stats["plan empty"]++
		default:
			h.stats["plan"]++
			if len(plan.SWA) > 0 {
				h.stats["plan with swa"]++
			}
			if plan.Mamba >= 0 {
				h.stats["plan with mamba"]++
			}
		}
	}
	if err == nil && !plan.Pinned && !plan.Empty() {
		c := core.LoadBackCommit{Mamba: -1}
		for _, e := range plan.Full {
			c.Full = append(c.Full, h.devSlots(len(e.Slots)))
		}
		for _, e := range plan.SWA {
			c.SWA = append(c.SWA, h.devSlots(len(e.Slots)))
		}
		if plan.Mamba >= 0 {
			c.Mamba = h.devSlots(1)[0]
		}
		acts, err := d.e.CommitLoadBack(anchor, c)
		fmt.Fprintf(b, " commit %s %s", d.norm(acts), errClass(err))
		if err == nil && deferFinish {
			h.stats["load-back deferred"]++
			h.lb = append(h.lb, pendingLB{anchor: anchor, rc: rc, hrc: hrc})
			return
		}
		if err == nil {
			fmt.Fprintf(b, " finish %s", errClass(d.e.FinishLoadBack(anchor)))
		}
	} else if err != nil {
		b.WriteString(" plan " + errClass(err))
	}
	fmt.Fprintf(b, " unlock %s host-unlock %s", errClass(d.e.Unlock(anchor, rc, false)), errClass(d.e.HostUnlock(anchor, hrc)))
}

// finish acknowledges every write-through, finishes every load-back and
// ends every offload in flight (ok decides the offloads' outcome).
func (h *hostSim) finish(b *strings.Builder, d *diffEngine, ok bool) {
	for _, p := range h.wt {
		fmt.Fprintf(b, " ack %d %s unlock %s", p.ack, errClass(d.e.FinishWriteThrough(p.nodes, p.ack)),
			errClass(d.e.Unlock(p.node, p.rc, false)))
	}
	for _, p := range h.lb {
		fmt.Fprintf(b, " finish %v %s unlock %s host-unlock %s", coreID(d.e, p.anchor), errClass(d.e.FinishLoadBack(p.anchor)),
			errClass(d.e.Unlock(p.anchor, p.rc, false)), errClass(d.e.HostUnlock(p.anchor, p.hrc)))
	}
	for _, p := range h.offloads {
		fmt.Fprintf(b, " offload %d %s", p.id, errClass(d.e.FinishLinkerOffload(p.nodes, p.id, ok)))
	}
	h.wt, h.lb, h.offloads = nil, nil, nil
}

// ongoing is the host's view of its operations in flight.
func (h *hostSim) ongoing() core.Ongoing {
	o := core.Ongoing{WriteThrough: []core.NodeID{}, LoadBack: []core.NodeID{}}
	for _, p := range h.wt {
		o.WriteThrough = append(o.WriteThrough, p.nodes...)
	}
	for _, p := range h.lb {
		o.LoadBack = append(o.LoadBack, p.anchor)
	}
	return o
}
