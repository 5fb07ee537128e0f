package native

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/radixkv/radixkv/abi"
	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/internal/transcript"
	"github.com/stretchr/testify/require"
)

// TestEngines_Transcripts replays core's transcript scripts
// (core/testdata/*.txt, see core/transcript_test.go for the commands)
// through every engine and compares with the recorded output, which the
// core tree itself produced. Node ids are printed in core form (see
// coreID) and literal handles such as n3.1 are converted to each
// engine's form; the one other normalisation is that the "node 0x…: "
// prefix the dispatcher puts before a stale-node error (naming the id as
// the host sent it) is removed. Regenerate the scripts from core, never
// from here.
func TestEngines_Transcripts(t *testing.T) {
	if transcript.Rewriting() {
		t.Skip("the scripts are owned by core: rewrite them with go test ./core -rewrite")
	}
	paths, err := filepath.Glob("../../core/testdata/*.txt")
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	forEachEngine(t, func(t *testing.T, ctor engineCtor) {
		_, wire := newEngine(t, ctor, core.Config{PageSize: 1}).(*wireEngine)
		for _, path := range paths {
			t.Run(filepath.Base(path), func(t *testing.T) {
				data, err := os.ReadFile(path)
				require.NoError(t, err)
				if why := unsupportedCommand(string(data), wire); why != "" {
					t.Skipf("skipping %s: %s", filepath.Base(path), why)
				}
				h := &engineHarness{ctor: ctor}
				defer h.close()
				transcript.Run(t, path, func(t *testing.T, d *transcript.Cmd) string {
					out := h.do(d)
					if h.e != nil {
						if err := h.e.SanityCheck(); err != nil {
							t.Errorf("%s: %s: sanity check failed after the command: %v", d.Pos, d.Line, err)
						}
					}
					return out
				})
			})
		}
	})
}

// transcriptArgs lists the commands the engine harness runs and the
// arguments each takes.
var transcriptArgs = map[string][]string{
	"new":           {"page", "policy", "bigram", "host-tier", "kv-events", "write-back", "components"},
	"insert":        {"tokens", "slots", "ns", "prev", "prio", "chunked", "track", "session", "as"},
	"begin-insert":  {"tokens", "slots", "ns", "prev", "prio", "chunked", "track", "session", "as"},
	"resume-insert": {"as"},
	"end-insert":    {},
	"match":         {"tokens", "ns", "as"},
	"lock":          {"node", "skip", "as"},
	"unlock":        {"node", "receipt", "skip-swa", "forge"},
	"evict":         {"n", "comp"},
	"evict-start":   {"n", "comp"},
	"evict-next":    {}, "evict-end": {}, "render": {}, "sanity": {}, "nodes": {},
	"leaves": {}, "receipts": {}, "reset": {},
	"inspect":   {"node"},
	"dfs-order": {"nodes"},
}

var parenList = regexp.MustCompile(`\([^)]*\)`)

// unsupportedCommand scans a script's command lines (the same framing
// as package transcript: a command starts after a blank or comment line,
// its output after "----" runs to a blank line, or between doubled
// separators) and says why the harness cannot run it: a command or
// argument that is not an Engine operation (core-only inspection, KV
// events), or, on a wire engine, kv-events, whose take_events op ABI
// version 1 reserves. It returns "" when every command is supported.
func unsupportedCommand(script string, wire bool) string {
	lines := strings.Split(strings.ReplaceAll(script, "\r\n", "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		fields := strings.Fields(parenList.ReplaceAllString(l, "()"))
		known, ok := transcriptArgs[fields[0]]
		if !ok {
			return fmt.Sprintf("line %d: command %q is not an Engine operation", i+1, fields[0])
		}
		for _, f := range fields[1:] {
			key, _, _ := strings.Cut(f, "=")
			if !slices.Contains(known, key) {
				return fmt.Sprintf("line %d: %s takes argument %q, which the engine harness does not know", i+1, fields[0], key)
			}
			if wire && key == "kv-events" {
				return fmt.Sprintf("line %d: kv-events needs the take_events op, which ABI version %d reserves", i+1, abi.Version)
			}
		}
		// Skip the command's input and output.
		for i+1 < len(lines) && lines[i+1] != "----" && strings.TrimSpace(lines[i+1]) != "" {
			i++
		}
		if i+1 < len(lines) && lines[i+1] == "----" {
			i++
			if i+1 < len(lines) && lines[i+1] == "----" {
				for i += 2; i+1 < len(lines) && !(lines[i] == "----" && lines[i+1] == "----"); i++ {
				}
				i++
			} else {
				for i+1 < len(lines) && lines[i+1] != "" {
					i++
				}
			}
		}
	}
	return ""
}

// inspector is what the transcripts need beyond Engine: the direct
// engine answers from its tree, the wire engines through ABI ops that
// Engine does not expose.
type inspector interface {
	root() (core.NodeID, error)
	inspect(id core.NodeID) (core.NodeInfo, error)
	nodeList(op abi.Op) ([]core.NodeID, error) // OpNodes or OpDeviceLeaves
	dfsOrder(ids []core.NodeID) ([]int, error)
	liveReceipts() (int, error)
}

func (e *directEngine) root() (core.NodeID, error) { return e.t.Root(), nil }
func (e *directEngine) inspect(id core.NodeID) (core.NodeInfo, error) {
	return e.t.Inspect(id)
}
func (e *directEngine) nodeList(op abi.Op) ([]core.NodeID, error) {
	if op == abi.OpNodes {
		return e.t.Nodes(), nil
	}
	return e.t.DeviceLeaves(), nil
}
func (e *directEngine) dfsOrder(ids []core.NodeID) ([]int, error) { return e.t.DFSWeightOrder(ids) }
func (e *directEngine) liveReceipts() (int, error)                { return e.t.LiveReceiptCount(), nil }

func (e *wireEngine) root() (core.NodeID, error) {
	s, err := e.stats()
	if err != nil {
		return 0, err
	}
	return e.fromWire(s.Root), nil
}

func (e *wireEngine) inspect(id core.NodeID) (core.NodeInfo, error) {
	e.q.Node = e.toWire(id)
	err := e.roundTrip(abi.OpInspect)
	e.q.Node = 0
	if err != nil {
		return core.NodeInfo{}, err
	}
	info := e.r.Info
	info.ID, info.Parent = e.fromWire(info.ID), e.fromWire(info.Parent)
	for i, c := range info.Children {
		info.Children[i] = e.fromWire(c)
	}
	return info, nil
}

func (e *wireEngine) nodeList(op abi.Op) ([]core.NodeID, error) {
	if err := e.roundTrip(op); err != nil {
		return nil, err
	}
	ids := e.r.Nodes
	for i, id := range ids {
		ids[i] = e.fromWire(id)
	}
	return ids, nil
}

func (e *wireEngine) dfsOrder(ids []core.NodeID) ([]int, error) {
	e.q.Nodes = make([]core.NodeID, len(ids))
	for i, id := range ids {
		e.q.Nodes[i] = e.toWire(id)
	}
	err := e.roundTrip(abi.OpDFSOrder)
	e.q.Nodes = nil
	if err != nil {
		return nil, err
	}
	out := make([]int, len(e.r.Order))
	for i, p := range e.r.Order {
		out[i] = int(p)
	}
	return out, nil
}

func (e *wireEngine) liveReceipts() (int, error) {
	s, err := e.stats()
	if err != nil {
		return 0, err
	}
	return int(s.LiveReceipts), nil
}

// engineHarness is the state one script builds up on one engine.
type engineHarness struct {
	ctor     engineCtor
	e        Engine
	page     int
	bigram   bool
	comps    core.ComponentSet
	nextSlot int32
	names    map[string]core.NodeID // caller-form ids
	receipts map[string]core.Receipt
	live     map[uint64]bool // serials locked and not yet released
}

func (h *engineHarness) close() {
	if h.e != nil {
		_ = h.e.Close()
	}
}

func (h *engineHarness) ins() inspector { return h.e.(inspector) }

// show prints a caller-form id in core form.
func (h *engineHarness) show(id core.NodeID) core.NodeID { return coreID(h.e, id) }

func (h *engineHarness) do(d *transcript.Cmd) string {
	if d.Name != "new" && h.e == nil {
		d.Fatalf("no engine yet: start the script with new")
	}
	switch d.Name {
	case "new":
		return h.cmdNew(d)
	case "insert":
		p := h.insertParams(d)
		res, acts, err := h.e.Insert(p)
		if err != nil {
			return h.errOut(err, acts)
		}
		return h.bind(d, res.LastDevice) + h.formatResult(res) + h.formatActions(acts)
	case "begin-insert":
		step, err := h.e.BeginInsert(h.insertParams(d))
		return h.formatStep(d, step, err)
	case "resume-insert":
		step, err := h.e.ResumeInsert()
		return h.formatStep(d, step, err)
	case "end-insert":
		acts, err := h.e.EndInsert()
		if err != nil {
			return h.errOut(err, acts)
		}
		if len(acts) == 0 {
			return "no actions\n"
		}
		return h.formatActions(acts)
	case "match":
		return h.cmdMatch(d)
	case "lock":
		return h.cmdLock(d)
	case "unlock":
		return h.cmdUnlock(d)
	case "evict":
		acts, freed, err := h.e.Evict(h.comp(d), d.Int("n"), nil)
		if err != nil {
			return h.errOut(err, acts)
		}
		return fmt.Sprintf("freed=%d\n", freed) + h.formatActions(acts)
	case "evict-start":
		return h.okOr(h.e.EvictStart(h.comp(d), d.Int("n")))
	case "evict-next":
		step, err := h.e.EvictNext()
		if err != nil {
			return h.errOut(err, step.Actions)
		}
		var b strings.Builder
		if step.Node != 0 {
			fmt.Fprintf(&b, "evicted %v%s freed=%d", h.show(step.Node), h.nameOf(step.Node), step.Freed)
		} else {
			b.WriteString("no leaf")
		}
		if step.Done {
			b.WriteString(" done")
		}
		b.WriteByte('\n')
		b.WriteString(h.formatActions(step.Actions))
		return b.String()
	case "evict-end":
		return h.okOr(h.e.EvictEnd())
	case "render":
		return h.render()
	case "sanity":
		return h.okOr(h.e.SanityCheck())
	case "nodes", "leaves":
		op := abi.OpNodes
		if d.Name == "leaves" {
			op = abi.OpDeviceLeaves
		}
		ids, err := h.ins().nodeList(op)
		if err != nil {
			return h.errOut(err, nil)
		}
		return h.formatIDs(ids) + "\n"
	case "receipts":
		n, err := h.ins().liveReceipts()
		if err != nil {
			return h.errOut(err, nil)
		}
		live := make([]uint64, 0, len(h.live))
		for s := range h.live {
			live = append(live, s)
		}
		slices.Sort(live)
		if n != len(live) {
			d.Fatalf("engine holds %d live receipts, the harness counted %v", n, live)
		}
		return fmt.Sprintf("live=%v\n", live)
	case "reset":
		if err := h.e.Reset(); err != nil {
			return h.errOut(err, nil)
		}
		clear(h.live)
		return h.render()
	case "inspect":
		return h.cmdInspect(d)
	case "dfs-order":
		return h.cmdDFSOrder(d)
	}
	d.Fatalf("unknown command %q", d.Name)
	return ""
}

func (h *engineHarness) okOr(err error) string {
	if err != nil {
		return h.errOut(err, nil)
	}
	return "ok\n"
}

func (h *engineHarness) render() string {
	s, err := h.e.Render()
	if err != nil {
		return h.errOut(err, nil)
	}
	return s
}

func (h *engineHarness) cmdNew(d *transcript.Cmd) string {
	cfg := core.Config{
		PageSize: d.IntOr("page", 1),
		Policy:   d.StringOr("policy", ""),
		Bigram:   d.Bool("bigram"),
		HostTier: d.Bool("host-tier"),
		KVEvents: d.Bool("kv-events"),
	}
	for _, name := range d.Strings("components") {
		cfg.Components = append(cfg.Components, parseComponent(d, name))
	}
	if d.Bool("write-back") {
		cfg.WritePolicy = core.WriteBack
	}
	e, err := h.ctor(cfg)
	if err != nil {
		return h.errOut(err, nil)
	}
	h.close()
	comps := core.ComponentSet(0).With(core.Full)
	for _, c := range cfg.Components {
		comps = comps.With(c)
	}
	*h = engineHarness{
		ctor: h.ctor, e: e, page: cfg.PageSize, bigram: cfg.Bigram, comps: comps, nextSlot: 100,
		names: map[string]core.NodeID{}, receipts: map[string]core.Receipt{}, live: map[uint64]bool{},
	}
	return h.render()
}

func parseComponent(d *transcript.Cmd, name string) core.Component {
	for c := core.Full; c <= core.Mamba; c++ {
		if c.String() == name {
			return c
		}
	}
	d.Fatalf("unknown component %q (full, swa, mamba)", name)
	return 0
}

func (h *engineHarness) comp(d *transcript.Cmd) core.Component {
	return parseComponent(d, d.StringOr("comp", "full"))
}

// alignedAtoms is the page-aligned atom count of n tokens.
func (h *engineHarness) alignedAtoms(n int) int {
	if h.bigram {
		n = max(n-1, 0)
	}
	return n / h.page * h.page
}

func (h *engineHarness) insertParams(d *transcript.Cmd) core.InsertParams {
	p := core.InsertParams{
		Namespace:     parseNamespace(d),
		Tokens:        d.Uint32s("tokens"),
		Slots:         d.Int32s("slots"),
		PrevPrefixLen: d.IntOr("prev", 0),
		Priority:      int64(d.IntOr("prio", 0)),
		Chunked:       d.Bool("chunked"),
		TrackAdopted:  d.Bool("track"),
		SessionID:     d.StringOr("session", ""),
	}
	if p.Tokens == nil {
		d.Fatalf("missing argument tokens=(...)")
	}
	if p.Slots == nil {
		p.Slots = make([]int32, h.alignedAtoms(len(p.Tokens)))
		for k := range p.Slots {
			p.Slots[k] = h.nextSlot
			h.nextSlot++
		}
	}
	return p
}

// parseNamespace reads ns=salt:s,extra:e,lora:l.
func parseNamespace(d *transcript.Cmd) core.Namespace {
	var ns core.Namespace
	v := d.StringOr("ns", "")
	if v == "" {
		return ns
	}
	for _, part := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(part, ":")
		if !ok {
			d.Fatalf("namespace part %q is not field:value", part)
		}
		switch k {
		case "salt":
			ns.CacheSalt = val
		case "extra":
			ns.ExtraKey = val
		case "lora":
			ns.LoRA = val
		default:
			d.Fatalf("unknown namespace field %q (salt, extra, lora)", k)
		}
	}
	return ns
}

func (h *engineHarness) cmdMatch(d *transcript.Cmd) string {
	ns := parseNamespace(d)
	tokens := d.Uint32s("tokens")
	if tokens == nil {
		d.Fatalf("missing argument tokens=(...)")
	}
	r, err := h.e.Match(nil, ns, tokens)
	if err != nil {
		return h.errOut(err, r.Actions)
	}
	var b strings.Builder
	b.WriteString(h.bind(d, r.LastDevice))
	fmt.Fprintf(&b, "device=%d indices=%s last-device=%v last-host=%v best=%v full-hit=%d host-hit=%d\n",
		r.DeviceLen, formatInts(append([]int32{}, r.Indices...)), h.show(r.LastDevice), h.show(r.LastHost), h.show(r.Best), r.FullKVHitLen, r.HostHitLen)
	if r.SWAHostHitLen != 0 || r.SWABranchingSeqlen != -1 || r.MambaHostHitLen != 0 || r.MambaBranchingSeqlen != -1 {
		fmt.Fprintf(&b, "swa-host-hit=%d swa-branching=%d mamba-host-hit=%d mamba-branching=%d\n",
			r.SWAHostHitLen, r.SWABranchingSeqlen, r.MambaHostHitLen, r.MambaBranchingSeqlen)
	}
	b.WriteString(h.formatActions(r.Actions))
	return b.String()
}

func (h *engineHarness) cmdLock(d *transcript.Cmd) string {
	id := h.node(d, "node")
	var skip core.ComponentSet
	for _, name := range d.Strings("skip") {
		skip = skip.With(parseComponent(d, name))
	}
	name := d.StringOr("as", "")
	r, err := h.e.Lock(id, skip)
	if err != nil {
		return h.errOut(err, nil)
	}
	if name == "" {
		name = "r" + strconv.FormatUint(r.Serial, 10)
	}
	h.receipts[name] = r
	h.live[r.Serial] = true
	return fmt.Sprintf("receipt %s: serial=%d node=%v delta=%d swa-uuid=%d skipped=%v\n",
		name, r.Serial, h.show(r.Node), r.Delta, r.SWAUUID, r.Skipped)
}

func (h *engineHarness) cmdUnlock(d *transcript.Cmd) string {
	id := h.node(d, "node")
	name := d.String("receipt")
	r, ok := h.receipts[name]
	if !ok {
		d.Fatalf("no receipt named %q", name)
	}
	if d.Has("forge") {
		r.Node = h.node(d, "forge")
	}
	if err := h.e.Unlock(id, r, d.Bool("skip-swa")); err != nil {
		return h.errOut(err, nil)
	}
	delete(h.live, r.Serial)
	return "ok\n"
}

func (h *engineHarness) cmdInspect(d *transcript.Cmd) string {
	info, err := h.ins().inspect(h.node(d, "node"))
	if err != nil {
		return h.errOut(err, nil)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "id=%v parent=%v children=%s\n", h.show(info.ID), h.show(info.Parent), h.formatIDs(info.Children))
	if !info.Namespace.IsDefault() {
		fmt.Fprintf(&b, "ns extra=%q salt=%q lora=%q\n", info.Namespace.ExtraKey, info.Namespace.CacheSalt, info.Namespace.LoRA)
	}
	fmt.Fprintf(&b, "key=%s\n", formatInts(info.Key))
	for c := core.Full; c <= core.Mamba; c++ {
		if h.comps.Has(c) {
			fmt.Fprintf(&b, "%s device=%s host=%s lock=%d host-lock=%d\n", c,
				formatInts(info.Device[c]), formatInts(info.Host[c]), info.Lock[c], info.HostLock[c])
		}
	}
	fmt.Fprintf(&b, "hits=%d priority=%d creation=%d access=%d d-leaf=%v\n",
		info.Hits, info.Priority, info.Creation, info.LastAccess, info.DLeaf)
	return b.String()
}

func (h *engineHarness) cmdDFSOrder(d *transcript.Cmd) string {
	names := d.Strings("nodes")
	ids := make([]core.NodeID, len(names))
	for k, n := range names {
		ids[k] = h.lookup(d, n)
	}
	order, err := h.ins().dfsOrder(ids)
	if err != nil {
		return h.errOut(err, nil)
	}
	picked := make([]string, len(order))
	for k, pos := range order {
		picked[k] = names[pos]
	}
	return fmt.Sprintf("order=%v (%s)\n", order, strings.Join(picked, " "))
}

func (h *engineHarness) formatStep(d *transcript.Cmd, step core.InsertStep, err error) string {
	if err != nil {
		return h.errOut(err, step.Actions)
	}
	var b strings.Builder
	if step.Done {
		b.WriteString("done\n")
		b.WriteString(h.bind(d, step.Result.LastDevice))
		b.WriteString(h.formatResult(step.Result))
	} else {
		b.WriteString("suspended\n")
	}
	b.WriteString(h.formatActions(step.Actions))
	return b.String()
}

func (h *engineHarness) formatResult(r core.InsertResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "prefix=%d total=%d last=%v", r.PrefixLen, r.TotalLen, h.show(r.LastDevice))
	if !r.MambaExist {
		b.WriteString(" mamba-exist=false")
	}
	b.WriteByte('\n')
	if r.Adopted != nil {
		b.WriteString("adopted")
		if slices.IndexFunc(r.Adopted, func(rs []core.Range) bool { return len(rs) > 0 }) < 0 {
			b.WriteString(" none")
		}
		for c, rs := range r.Adopted {
			if len(rs) == 0 {
				continue
			}
			fmt.Fprintf(&b, " %s=", core.Component(c))
			for k, rg := range rs {
				if k > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, "[%d,%d)", rg.Start, rg.End)
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// formatActions renders actions with their node ids in core form.
func (h *engineHarness) formatActions(acts []core.Action) string {
	out := make([]core.Action, len(acts))
	for i, a := range acts {
		a.Node = h.show(a.Node)
		a.Nodes = append([]core.NodeID(nil), a.Nodes...)
		for k := range a.Nodes {
			a.Nodes[k] = h.show(a.Nodes[k])
		}
		out[i] = a
	}
	return core.FormatActions(out)
}

func (h *engineHarness) bind(d *transcript.Cmd, id core.NodeID) string {
	var b strings.Builder
	if (d.Name == "insert" || d.Name == "begin-insert") && !d.Has("slots") {
		n := h.alignedAtoms(len(d.Uint32s("tokens")))
		fmt.Fprintf(&b, "slots=%s\n", formatInts(seqSlots(int(h.nextSlot)-n, n)))
	}
	if name := d.StringOr("as", ""); name != "" {
		h.names[name] = id
		fmt.Fprintf(&b, "%s = %v\n", name, h.show(id))
	}
	return b.String()
}

// wireNodePrefix is what the dispatcher puts before a stale-node error.
var wireNodePrefix = regexp.MustCompile(`node 0x[0-9a-f]{16}: `)

func (h *engineHarness) errOut(err error, acts []core.Action) string {
	return "error: " + wireNodePrefix.ReplaceAllString(err.Error(), "") + "\n" + h.formatActions(acts)
}

func (h *engineHarness) node(d *transcript.Cmd, key string) core.NodeID {
	return h.lookup(d, d.String(key))
}

// lookup resolves a bound name, "root", or a literal core-form handle
// nSLOT.GEN (converted to the engine's form).
func (h *engineHarness) lookup(d *transcript.Cmd, v string) core.NodeID {
	if id, ok := h.names[v]; ok {
		return id
	}
	if v == "root" {
		id, err := h.ins().root()
		if err != nil {
			d.Fatalf("root: %v", err)
		}
		return id
	}
	if rest, ok := strings.CutPrefix(v, "n"); ok {
		s, g, ok := strings.Cut(rest, ".")
		slot, err1 := strconv.ParseUint(s, 10, 32)
		gen, err2 := strconv.ParseUint(g, 10, 32)
		if ok && err1 == nil && err2 == nil {
			return engineID(h.e, core.NodeID(gen<<32|(slot+1)))
		}
	}
	d.Fatalf("unknown node %q: bind it with as=, or write root or a handle like n3.1", v)
	return 0
}

func (h *engineHarness) nameOf(id core.NodeID) string {
	var names []string
	for n, x := range h.names {
		if x == id {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return ""
	}
	slices.Sort(names)
	return " (" + strings.Join(names, ",") + ")"
}

func (h *engineHarness) formatIDs(ids []core.NodeID) string {
	parts := make([]string, len(ids))
	for k, id := range ids {
		parts[k] = h.show(id).String() + strings.ReplaceAll(h.nameOf(id), " ", "")
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// formatInts renders numbers with runs of three or more as a-b; nil
// prints as "-" (as core's transcripts do).
func formatInts[T ~int32 | ~uint32](v []T) string {
	if v == nil {
		return "-"
	}
	var b strings.Builder
	b.WriteByte('[')
	for i := 0; i < len(v); {
		j := i
		for j+1 < len(v) && v[j+1] == v[j]+1 {
			j++
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.FormatInt(int64(v[i]), 10))
		if j-i >= 2 {
			fmt.Fprintf(&b, "-%d", int64(v[j]))
			i = j + 1
		} else {
			i++
		}
	}
	b.WriteByte(']')
	return b.String()
}
