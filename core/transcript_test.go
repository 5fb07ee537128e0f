package core_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/internal/transcript"
)

// TestTranscripts replays every testdata/*.txt script against a tree and
// compares each command's output with the recorded one. Regenerate with
//
//	go test ./core -run TestTranscripts -rewrite
//
// and review the diff like code. Commands (node arguments take a name
// bound with as=, "root", or a literal handle such as n3.1):
//
//	new [page=N] [policy=P] [bigram] [host-tier] [write-back] [kv-events]
//	    [hash=sglang|vllm]
//	    [components=(full swa mamba)]      fresh tree; prints its render
//	insert tokens=(..) [slots=(..)] [ns=salt:s,extra:e,lora:l] [prev=N]
//	    [prio=N] [chunked] [track] [session=S] [as=name]
//	begin-insert <insert args> | resume-insert | end-insert
//	match tokens=(..) [ns=..] [as=name]   binds name to LastDevice
//	lock node=X [skip=(swa)] [as=r]        prints the receipt
//	unlock node=X receipt=r [skip-swa] [forge=Y]
//	    forge=Y presents the receipt as if it had been taken on Y
//	evict n=N [comp=full] | evict-start n=N [comp=full] | evict-next | evict-end
//	render | sanity | nodes | leaves | receipts | reset
//	inspect node=X | dfs-order nodes=(X Y ..)
//	events                                 drains and prints KV events
//	hashes node=X                          storage page hashes (hex)
//
// When insert omits slots, it gets one per aligned atom from a counter
// that starts at 100 on each new (and is echoed). Every error prints as
// "error: <message>". After each command the tree's sanity check must pass.
func TestTranscripts(t *testing.T) {
	paths, err := filepath.Glob("testdata/*.txt")
	require.NoError(t, err)
	require.NotEmpty(t, paths, "no transcript scripts in testdata")
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			h := &harness{}
			transcript.Run(t, path, func(t *testing.T, d *transcript.Cmd) string {
				out := h.do(d)
				if h.tree != nil {
					if err := h.tree.SanityCheck(); err != nil {
						t.Errorf("%s: %s: sanity check failed after the command: %v", d.Pos, d.Line, err)
					}
				}
				return out
			})
		})
	}
}

// harness is the state one script builds up.
type harness struct {
	tree     *core.Tree
	page     int
	bigram   bool
	nextSlot int32
	names    map[string]core.NodeID
	receipts map[string]core.Receipt
}

func (h *harness) do(d *transcript.Cmd) string {
	if d.Name != "new" && h.tree == nil {
		d.Fatalf("no tree yet: start the script with new")
	}
	switch d.Name {
	case "new":
		return h.cmdNew(d)
	case "insert":
		p := h.insertParams(d)
		res, acts, err := h.tree.Insert(p)
		if err != nil {
			return h.errOut(err, acts)
		}
		return h.bind(d, res.LastDevice) + h.formatResult(res) + core.FormatActions(acts)
	case "begin-insert":
		p := h.insertParams(d)
		step, err := h.tree.BeginInsert(p)
		return h.formatStep(d, step, err)
	case "resume-insert":
		step, err := h.tree.ResumeInsert()
		return h.formatStep(d, step, err)
	case "end-insert":
		acts := h.tree.EndInsert()
		if len(acts) == 0 {
			return "no actions\n"
		}
		return core.FormatActions(acts)
	case "match":
		return h.cmdMatch(d)
	case "lock":
		return h.cmdLock(d)
	case "unlock":
		return h.cmdUnlock(d)
	case "evict":
		acts, freed, err := h.tree.Evict(h.comp(d), d.Int("n"), nil)
		if err != nil {
			return h.errOut(err, acts)
		}
		return fmt.Sprintf("freed=%d\n", freed) + core.FormatActions(acts)
	case "evict-start":
		if err := h.tree.EvictStart(h.comp(d), d.Int("n")); err != nil {
			return h.errOut(err, nil)
		}
		return "ok\n"
	case "evict-next":
		step, err := h.tree.EvictNext()
		if err != nil {
			return h.errOut(err, step.Actions)
		}
		var b strings.Builder
		if step.Node != 0 {
			fmt.Fprintf(&b, "evicted %v%s freed=%d", step.Node, h.nameOf(step.Node), step.Freed)
		} else {
			b.WriteString("no leaf")
		}
		if step.Done {
			b.WriteString(" done")
		}
		b.WriteByte('\n')
		b.WriteString(core.FormatActions(step.Actions))
		return b.String()
	case "evict-end":
		h.tree.EvictEnd()
		return "ok\n"
	case "render":
		return h.tree.Render()
	case "sanity":
		if err := h.tree.SanityCheck(); err != nil {
			return h.errOut(err, nil)
		}
		return "ok\n"
	case "nodes":
		return h.formatIDs(h.tree.Nodes()) + "\n"
	case "leaves":
		return h.formatIDs(h.tree.DeviceLeaves()) + "\n"
	case "receipts":
		return fmt.Sprintf("live=%v\n", h.tree.LiveReceipts())
	case "reset":
		h.tree.Reset()
		return h.tree.Render()
	case "inspect":
		return h.cmdInspect(d)
	case "dfs-order":
		return h.cmdDFSOrder(d)
	case "events":
		var b strings.Builder
		for _, e := range h.tree.TakeEvents(nil) {
			b.WriteString(e.String())
			b.WriteByte('\n')
		}
		if b.Len() == 0 {
			return "no events\n"
		}
		return b.String()
	case "hashes":
		hs, err := h.tree.PageHashes(h.node(d, "node"))
		if err != nil {
			return h.errOut(err, nil)
		}
		return strings.Join(hs, "\n") + "\n"
	}
	d.Fatalf("unknown command %q", d.Name)
	return ""
}

func (h *harness) cmdNew(d *transcript.Cmd) string {
	cfg := core.Config{
		PageSize: d.IntOr("page", 1),
		Policy:   d.StringOr("policy", ""),
		Bigram:   d.Bool("bigram"),
		HostTier: d.Bool("host-tier"),
		KVEvents: d.Bool("kv-events"),
		Components: func() []core.Component {
			var cs []core.Component
			for _, name := range d.Strings("components") {
				cs = append(cs, parseComponent(d, name))
			}
			return cs
		}(),
	}
	if d.Bool("write-back") {
		cfg.WritePolicy = core.WriteBack
	}
	switch conv := d.StringOr("hash", "sglang"); conv {
	case "sglang":
	case "vllm":
		cfg.HashConvention = core.HashVLLM
	default:
		d.Fatalf("unknown hash convention %q (sglang, vllm)", conv)
	}
	tree, err := core.New(cfg)
	if err != nil {
		return h.errOut(err, nil)
	}
	*h = harness{
		tree:     tree,
		page:     cfg.PageSize,
		bigram:   cfg.Bigram,
		nextSlot: 100,
		names:    map[string]core.NodeID{},
		receipts: map[string]core.Receipt{},
	}
	return tree.Render()
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

func (h *harness) comp(d *transcript.Cmd) core.Component {
	return parseComponent(d, d.StringOr("comp", "full"))
}

// insertParams reads insert's arguments; omitted slots come from the
// harness counter, one per aligned atom.
func (h *harness) insertParams(d *transcript.Cmd) core.InsertParams {
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
		atoms := len(p.Tokens)
		if h.bigram {
			atoms = max(atoms-1, 0)
		}
		atoms = atoms / h.page * h.page
		p.Slots = make([]int32, atoms)
		for k := range p.Slots {
			p.Slots[k] = h.nextSlot
			h.nextSlot++
		}
	}
	return p
}

// parseNamespace reads ns=salt:s,extra:e,lora:l (any subset, any order).
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

func (h *harness) cmdMatch(d *transcript.Cmd) string {
	ns := parseNamespace(d)
	tokens := d.Uint32s("tokens")
	if tokens == nil {
		d.Fatalf("missing argument tokens=(...)")
	}
	r, err := h.tree.Match(nil, ns, tokens)
	if err != nil {
		return h.errOut(err, r.Actions)
	}
	var b strings.Builder
	b.WriteString(h.bind(d, r.LastDevice))
	fmt.Fprintf(&b, "device=%d indices=%s last-device=%v last-host=%v best=%v full-hit=%d host-hit=%d\n",
		r.DeviceLen, formatInts(append([]int32{}, r.Indices...)), r.LastDevice, r.LastHost, r.Best, r.FullKVHitLen, r.HostHitLen)
	if r.SWAHostHitLen != 0 || r.SWABranchingSeqlen != -1 || r.MambaHostHitLen != 0 || r.MambaBranchingSeqlen != -1 {
		fmt.Fprintf(&b, "swa-host-hit=%d swa-branching=%d mamba-host-hit=%d mamba-branching=%d\n",
			r.SWAHostHitLen, r.SWABranchingSeqlen, r.MambaHostHitLen, r.MambaBranchingSeqlen)
	}
	b.WriteString(core.FormatActions(r.Actions))
	return b.String()
}

func (h *harness) cmdLock(d *transcript.Cmd) string {
	id := h.node(d, "node")
	var skip core.ComponentSet
	for _, name := range d.Strings("skip") {
		skip = skip.With(parseComponent(d, name))
	}
	name := d.StringOr("as", "")
	r, err := h.tree.Lock(id, skip)
	if err != nil {
		return h.errOut(err, nil)
	}
	if name == "" {
		name = "r" + strconv.FormatUint(r.Serial, 10)
	}
	h.receipts[name] = r
	return fmt.Sprintf("receipt %s: serial=%d node=%v delta=%d swa-uuid=%d skipped=%v\n",
		name, r.Serial, r.Node, r.Delta, r.SWAUUID, r.Skipped)
}

func (h *harness) cmdUnlock(d *transcript.Cmd) string {
	id := h.node(d, "node")
	name := d.String("receipt")
	r, ok := h.receipts[name]
	if !ok {
		d.Fatalf("no receipt named %q", name)
	}
	if d.Has("forge") {
		r.Node = h.node(d, "forge")
	}
	if err := h.tree.Unlock(id, r, d.Bool("skip-swa")); err != nil {
		return h.errOut(err, nil)
	}
	return "ok\n"
}

func (h *harness) cmdInspect(d *transcript.Cmd) string {
	info, err := h.tree.Inspect(h.node(d, "node"))
	if err != nil {
		return h.errOut(err, nil)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "id=%v parent=%v children=%s\n", info.ID, info.Parent, h.formatIDs(info.Children))
	if !info.Namespace.IsDefault() {
		fmt.Fprintf(&b, "ns extra=%q salt=%q lora=%q\n", info.Namespace.ExtraKey, info.Namespace.CacheSalt, info.Namespace.LoRA)
	}
	fmt.Fprintf(&b, "key=%s\n", formatInts(info.Key))
	for c := core.Full; c <= core.Mamba; c++ {
		if h.tree.Components().Has(c) {
			fmt.Fprintf(&b, "%s device=%s host=%s lock=%d host-lock=%d\n", c,
				formatInts(info.Device[c]), formatInts(info.Host[c]), info.Lock[c], info.HostLock[c])
		}
	}
	fmt.Fprintf(&b, "hits=%d priority=%d creation=%d access=%d d-leaf=%v\n",
		info.Hits, info.Priority, info.Creation, info.LastAccess, info.DLeaf)
	return b.String()
}

func (h *harness) cmdDFSOrder(d *transcript.Cmd) string {
	names := d.Strings("nodes")
	ids := make([]core.NodeID, len(names))
	for k, n := range names {
		ids[k] = h.lookup(d, n)
	}
	order, err := h.tree.DFSWeightOrder(ids)
	if err != nil {
		return h.errOut(err, nil)
	}
	picked := make([]string, len(order))
	for k, pos := range order {
		picked[k] = names[pos]
	}
	return fmt.Sprintf("order=%v (%s)\n", order, strings.Join(picked, " "))
}

// formatStep prints one step of a resumable insert.
func (h *harness) formatStep(d *transcript.Cmd, step core.InsertStep, err error) string {
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
	b.WriteString(core.FormatActions(step.Actions))
	return b.String()
}

func (h *harness) formatResult(r core.InsertResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "prefix=%d total=%d last=%v", r.PrefixLen, r.TotalLen, r.LastDevice)
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

// bind handles as=name (binding id) and echoes defaulted insert slots.
func (h *harness) bind(d *transcript.Cmd, id core.NodeID) string {
	var b strings.Builder
	if d.Name == "insert" || d.Name == "begin-insert" {
		if !d.Has("slots") {
			// The counter moved by the aligned length just inserted.
			n := len(d.Uint32s("tokens"))
			if h.bigram {
				n = max(n-1, 0)
			}
			n = n / h.page * h.page
			fmt.Fprintf(&b, "slots=%s\n", formatInts(seq(h.nextSlot-int32(n), n)))
		}
	}
	if name := d.StringOr("as", ""); name != "" {
		h.names[name] = id
		fmt.Fprintf(&b, "%s = %v\n", name, id)
	}
	return b.String()
}

func seq(from int32, n int) []int32 {
	out := make([]int32, n)
	for k := range out {
		out[k] = from + int32(k)
	}
	return out
}

// errOut renders an error and any actions that came with it.
func (h *harness) errOut(err error, acts []core.Action) string {
	return "error: " + err.Error() + "\n" + core.FormatActions(acts)
}

// node resolves the node argument key.
func (h *harness) node(d *transcript.Cmd, key string) core.NodeID {
	return h.lookup(d, d.String(key))
}

// lookup resolves a bound name, "root", or a literal handle nSLOT.GEN.
func (h *harness) lookup(d *transcript.Cmd, v string) core.NodeID {
	if id, ok := h.names[v]; ok {
		return id
	}
	if v == "root" {
		return h.tree.Root()
	}
	if rest, ok := strings.CutPrefix(v, "n"); ok {
		s, g, ok := strings.Cut(rest, ".")
		slot, err1 := strconv.ParseUint(s, 10, 32)
		gen, err2 := strconv.ParseUint(g, 10, 32)
		if ok && err1 == nil && err2 == nil {
			return core.NodeID(gen<<32 | (slot + 1))
		}
	}
	d.Fatalf("unknown node %q: bind it with as=, or write root or a handle like n3.1", v)
	return 0
}

// nameOf returns " (name)" for the names bound to id, for readability.
func (h *harness) nameOf(id core.NodeID) string {
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

func (h *harness) formatIDs(ids []core.NodeID) string {
	parts := make([]string, len(ids))
	for k, id := range ids {
		parts[k] = id.String() + strings.ReplaceAll(h.nameOf(id), " ", "")
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// formatInts renders numbers with runs of three or more as a-b, like the
// tree's own renderer; nil prints as "-".
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
