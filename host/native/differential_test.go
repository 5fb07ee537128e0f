package native

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/radixkv/radixkv/core"
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
	for seed := uint64(1); seed <= 4; seed++ {
		cfg := core.Config{PageSize: []int{1, 2, 4, 2}[seed%4], Policy: policies[int(seed*3)%len(policies)], Bigram: seed == 4}
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
	swa := []core.Component{core.Full, core.SWA}
	mamba := []core.Component{core.Full, core.Mamba}
	all := []core.Component{core.Full, core.SWA, core.Mamba}
	cfgs := []core.Config{
		{PageSize: 2, Components: swa, SWAWindow: 8},
		{PageSize: 2, Components: mamba, MambaMaxPathStates: 2, Policy: "lfu"},
		{PageSize: 2, Components: all, SWAWindow: 8, MambaChunkSize: 4, MambaMaxPathStates: 3},
		{PageSize: 1, Components: all, SWAWindow: 3, MambaMaxPathStates: 1, Policy: "priority", KVEvents: true},
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
		for _, k := range hybridKinds {
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
			b.WriteString(d.norm(m))
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
			b.WriteString(d.norm(res) + d.norm(acts) + runPathCaps(d, acts))
			return stepOut{b.String(), d.e.Unlock(m.LastDevice, rc, release)}
		})
		return what
	}
	for step := range steps {
		var what string
		// A hybrid stream draws one more number per step (a Full-only
		// stream is the same as before hybrid trees existed).
		own := hybrid && rng.IntN(6) == 0
		switch op := rng.IntN(100); {
		case own:
			if what = hybridStep(step); what == "" {
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
				return stepOut{d.norm(m.Actions) + func() string {
					if err != nil {
						return ""
					}
					return d.norm(m)
				}(), err}
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
				if resumable && hybrid {
					// As a host does: run each barrier's work, then
					// resume, until done. (The tree is not touched
					// otherwise while the insert is suspended.)
					st, err := d.e.BeginInsert(params)
					out := d.norm(st)
					for err == nil && !st.Done {
						out += runPathCaps(d, st.Actions)
						st, err = d.e.ResumeInsert()
						out += " / " + d.norm(st)
					}
					if err == nil {
						d.nodes = append(d.nodes, st.Result.LastDevice)
						out += runPathCaps(d, st.Actions)
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
					out += runPathCaps(d, acts)
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
				return stepOut{fmt.Sprintf("freed=%d ", freed) + d.norm(acts), err}
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
				return stepOut{d.norm(st), err}
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
			each(step, what, func(d *diffEngine) stepOut { return stepOut{"", d.e.Reset()} })
		}
		each(step, what+" (render)", func(d *diffEngine) stepOut {
			s, err := d.e.Render()
			return stepOut{s, err}
		})
		if step%25 == 0 || (hybrid && step%5 == 0) {
			each(step, what+" (sanity)", func(d *diffEngine) stepOut { return stepOut{"", d.e.SanityCheck()} })
			if hybrid {
				require.NoError(t, outs[0].err, "step %d %s: sanity", step, what)
			}
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
						if e.Kind == core.EventBlockStored {
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
	return eventKinds
}

// hybridKinds are the action kinds a hybrid stream counts.
var hybridKinds = []string{
	core.ActionFreeDeviceKV.String(), core.ActionFreeDeviceKVFullOnly.String(), core.ActionFreeDeviceSlots.String(),
	core.ActionSWARebuild.String(), core.ActionRecoverSWAWithLockedFull.String(),
	core.ActionMambaEvictExcessPathStates.String(),
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
