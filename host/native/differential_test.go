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

// runDifferential drives engs with seed's stream for steps steps and
// compares them after every step. When the engines record KV events it
// also drains them every few steps (and after each reset), compares
// them, and returns how many of each kind were seen.
func runDifferential(t *testing.T, seed uint64, steps int, engs []*diffEngine) map[core.EventKind]int {
	kvEvents := engs[0].e.Config().KVEvents
	eventKinds := map[core.EventKind]int{}
	g := newWorkloadGen(seed)
	rng := g.rng
	nextSlot := int32(0)
	outs := make([]stepOut, len(engs))
	classes := map[string]int{}
	defer func() { t.Log(classes) }()
	// each applies fn to every engine and compares.
	each := func(step int, what string, fn func(d *diffEngine) stepOut) {
		for i, d := range engs {
			outs[i] = fn(d)
		}
		compareStep(t, step, what, engs, outs)
		classes[strings.Fields(what)[0]+" "+errClass(outs[0].err)]++
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
	for step := range steps {
		var what string
		switch op := rng.IntN(100); {
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
			resumable := rng.IntN(3) == 0
			what = fmt.Sprintf("insert resumable=%v %+v", resumable, params)
			each(step, what, func(d *diffEngine) stepOut {
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
				return stepOut{d.norm(res) + d.norm(acts), err}
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
			what = fmt.Sprintf("unlock receipt#%d mispair=%v node#%d", kr, mispair, kn)
			skipSWA := rng.IntN(8) == 0
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
			what = fmt.Sprintf("evict want=%d", want)
			each(step, what, func(d *diffEngine) stepOut {
				acts, freed, err := d.e.Evict(core.Full, want, make([]core.Action, 1))
				return stepOut{fmt.Sprintf("freed=%d ", freed) + d.norm(acts), err}
			})
		case op < 92:
			want := rng.IntN(16)
			sub := rng.IntN(4)
			what = fmt.Sprintf("step-wise evict %d want=%d", sub, want)
			each(step, what, func(d *diffEngine) stepOut {
				switch sub {
				case 0:
					return stepOut{"", d.e.EvictStart(core.Full, want)}
				case 3:
					return stepOut{"", d.e.EvictEnd()}
				}
				st, err := d.e.EvictNext()
				return stepOut{d.norm(st), err}
			})
		case op < 97:
			what = "sizes"
			each(step, what, func(d *diffEngine) stepOut {
				ev, err1 := d.e.Evictable(core.Full)
				pr, err2 := d.e.Protected(core.Full)
				o, err3 := d.e.Evictable(core.Component(7))
				return stepOut{fmt.Sprintf("%d %d %d", ev, pr, o), errors.Join(err1, err2, err3)}
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
		if step%25 == 0 {
			each(step, what+" (sanity)", func(d *diffEngine) stepOut { return stepOut{"", d.e.SanityCheck()} })
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
	return eventKinds
}
