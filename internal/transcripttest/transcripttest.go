package transcripttest

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/internal/transcript"
)

// Target is what every command needs: the operations of host/native's
// Engine, with core's types. Every method returns an error because a
// remote target can fail in transport as well as in the tree.
type Target interface {
	Match(dst []int32, ns core.Namespace, tokens []uint32) (core.MatchResult, error)
	Insert(p core.InsertParams) (core.InsertResult, []core.Action, error)
	BeginInsert(p core.InsertParams) (core.InsertStep, error)
	ResumeInsert() (core.InsertStep, error)
	EndInsert() ([]core.Action, error)
	Lock(node core.NodeID, skip core.ComponentSet) (core.Receipt, error)
	Unlock(node core.NodeID, r core.Receipt, skipSWA bool) error
	Evict(c core.Component, want int, dst []core.Action) ([]core.Action, int, error)
	EvictStart(c core.Component, want int) error
	EvictNext() (core.EvictStep, error)
	EvictEnd() error
	SanityCheck() error
	Render() (string, error)
	Reset() error
}

// Inspector is what the inspection commands (nodes, leaves, receipts,
// inspect, dfs-order) and the node name "root" need beyond Target. Ids
// are in the target's form.
type Inspector interface {
	Root() (core.NodeID, error)
	Inspect(id core.NodeID) (core.NodeInfo, error)
	Nodes() ([]core.NodeID, error)
	DeviceLeaves() ([]core.NodeID, error)
	DFSWeightOrder(ids []core.NodeID) ([]int, error)
	LiveReceiptCount() (int, error)
}

// EventTaker is the events command's capability on a target that is not
// a core.Tree (host/native's Engine has it): it drains the target's KV
// events. The events' slices need only stay valid until the target's next
// call. A target without it needs a TreeIntrospector for events.
type EventTaker interface {
	TakeEvents(dst []core.Event) ([]core.Event, error)
}

// TreeIntrospector is what only a core.Tree offers: the hashes command,
// the events command (unless the target is an EventTaker), and receipts
// listed by serial (a target without it gets the serials the harness
// counted, checked against LiveReceiptCount).
type TreeIntrospector interface {
	TakeEvents(dst []core.Event) []core.Event
	PageHashes(node core.NodeID) ([]string, error)
	LiveReceipts() []uint64
}

// IDMapper is a target whose node ids are not the tree's own. Output
// prints ids in core form and literal handles such as n3.1 are read in
// core form, so that one recording serves every target.
type IDMapper interface {
	CoreID(id core.NodeID) core.NodeID   // the target's form to core's
	TargetID(id core.NodeID) core.NodeID // core's form to the target's
}

// SWAUnlocker is the unlock-swa command's capability: the early release
// of a lock's SWA part (and its Mamba part), Full staying locked. A
// core.Tree has it with exactly this signature.
type SWAUnlocker interface {
	UnlockSWA(node core.NodeID, r core.Receipt) ([]core.Action, error)
}

// PathStateEvictor is the evict-excess command's capability: the Mamba
// per-path cap that an insert's MambaEvictExcessPathStates action asks
// for. A core.Tree has it with exactly this signature.
type PathStateEvictor interface {
	EvictExcessPathStates(tail core.NodeID) ([]core.Action, error)
}

// LRUInspector is the lru command's capability: an auxiliary
// component's recency list, most recent first (ids in the target's
// form). Only a core.Tree is known to have it; the command changes
// nothing, so other targets may skip it.
type LRUInspector interface {
	LRUOrder(c core.Component, host bool) []core.NodeID
}

// HostBackuper is the backup command's capability: the host-tier backup
// of one node (BackupSpec, then CommitBackup with host slots the harness
// hands out). A core.Tree has it with exactly these signatures.
type HostBackuper interface {
	BackupSpec(node core.NodeID) (core.BackupSpec, error)
	CommitBackup(node core.NodeID, c core.BackupCommit) error
}

// Demoter is the demote command's capability: a backed-up evictable
// device leaf gives up its device data and stays host-only. A core.Tree
// has it with exactly this signature.
type Demoter interface {
	Demote(node core.NodeID) ([]core.Action, error)
}

// Options configures Run.
type Options struct {
	// New builds the target for a new command.
	New func(cfg core.Config) (Target, error)
	// ErrorText renders an error's message; nil means err.Error().
	ErrorText func(err error) string
}

// Run replays the script at path (see the package documentation for its
// commands) and checks the target's invariants after every command.
func Run(t *testing.T, path string, opts Options) {
	t.Helper()
	h := &harness{opts: opts}
	defer h.close()
	transcript.Run(t, path, func(t *testing.T, d *transcript.Cmd) string {
		out := h.do(d)
		if h.tgt != nil {
			if err := h.tgt.SanityCheck(); err != nil {
				t.Errorf("%s: %s: sanity check failed after the command: %v", d.Pos, d.Line, err)
			}
		}
		return out
	})
}

// harness is the state one script builds up.
type harness struct {
	opts     Options
	tgt      Target
	page     int
	bigram   bool
	comps    core.ComponentSet
	nextSlot int32
	nextHost int32 // host slots handed out by backup
	nextAux  int32 // SWA and Mamba device slots handed out by load-backs
	ack      int64 // write-through acks issued by write-through
	hostTier bool
	linker   bool
	plans    map[core.NodeID]core.LoadBackPlan // by plan-load-back, for commit-load-back
	names    map[string]core.NodeID            // target-form ids
	receipts map[string]core.Receipt
	live     map[uint64]bool // serials locked and not yet released
}

func (h *harness) close() {
	if c, ok := h.tgt.(io.Closer); ok {
		_ = c.Close()
	}
}

// inspector returns the target's Inspector, failing cmd without one.
func (h *harness) inspector(d *transcript.Cmd) Inspector {
	ins, ok := h.tgt.(Inspector)
	if !ok {
		d.Fatalf("%s: the target has no inspection operations", d.Name)
	}
	return ins
}

// introspector returns the target's TreeIntrospector, failing cmd
// without one.
func (h *harness) introspector(d *transcript.Cmd) TreeIntrospector {
	ti, ok := h.tgt.(TreeIntrospector)
	if !ok {
		d.Fatalf("%s: only a core.Tree supports this command", d.Name)
	}
	return ti
}

// show prints a target-form id in core form.
func (h *harness) show(id core.NodeID) core.NodeID {
	if m, ok := h.tgt.(IDMapper); ok {
		return m.CoreID(id)
	}
	return id
}

func (h *harness) do(d *transcript.Cmd) string {
	if d.Name != "new" && h.tgt == nil {
		d.Fatalf("no tree yet: start the script with new")
	}
	switch d.Name {
	case "new":
		return h.cmdNew(d)
	case "insert":
		res, acts, err := h.tgt.Insert(h.insertParams(d))
		if err != nil {
			return h.errOut(err, acts)
		}
		return h.bind(d, res.LastDevice) + h.formatResult(res) + h.formatActions(acts)
	case "begin-insert":
		step, err := h.tgt.BeginInsert(h.insertParams(d))
		return h.formatStep(d, step, err)
	case "resume-insert":
		step, err := h.tgt.ResumeInsert()
		return h.formatStep(d, step, err)
	case "end-insert":
		return h.actionsOr(h.tgt.EndInsert())
	case "match":
		return h.cmdMatch(d)
	case "lock":
		return h.cmdLock(d)
	case "unlock":
		return h.cmdUnlock(d)
	case "evict":
		acts, freed, err := h.tgt.Evict(h.comp(d), d.Int("n"), nil)
		if err != nil {
			return h.errOut(err, acts)
		}
		return fmt.Sprintf("freed=%d\n", freed) + h.formatActions(acts)
	case "evict-start":
		return h.okOr(h.tgt.EvictStart(h.comp(d), d.Int("n")))
	case "evict-next":
		return h.cmdEvictNext()
	case "evict-end":
		return h.okOr(h.tgt.EvictEnd())
	case "render":
		return h.render()
	case "sanity":
		return h.okOr(h.tgt.SanityCheck())
	case "nodes", "leaves":
		ins := h.inspector(d)
		list := ins.Nodes
		if d.Name == "leaves" {
			list = ins.DeviceLeaves
		}
		ids, err := list()
		if err != nil {
			return h.errOut(err, nil)
		}
		return h.formatIDs(ids) + "\n"
	case "receipts":
		return h.cmdReceipts(d)
	case "reset":
		if err := h.tgt.Reset(); err != nil {
			return h.errOut(err, nil)
		}
		clear(h.live)
		return h.render()
	case "inspect":
		return h.cmdInspect(d)
	case "dfs-order":
		return h.cmdDFSOrder(d)
	case "events":
		var evs []core.Event
		if et, ok := h.tgt.(EventTaker); ok {
			var err error
			if evs, err = et.TakeEvents(nil); err != nil {
				return h.errOut(err, nil)
			}
		} else {
			evs = h.introspector(d).TakeEvents(nil)
		}
		var b strings.Builder
		for _, e := range evs {
			b.WriteString(e.String())
			b.WriteByte('\n')
		}
		if b.Len() == 0 {
			return "no events\n"
		}
		return b.String()
	case "unlock-swa":
		return h.cmdUnlockSWA(d)
	case "evict-excess":
		pe, ok := h.tgt.(PathStateEvictor)
		if !ok {
			d.Fatalf("%s: the target cannot evict excess Mamba path states", d.Name)
		}
		acts, err := pe.EvictExcessPathStates(h.node(d, "node"))
		return h.actionsOr(acts, err)
	case "lru":
		li, ok := h.tgt.(LRUInspector)
		if !ok {
			d.Fatalf("%s: the target has no recency-list inspection", d.Name)
		}
		return h.formatIDs(li.LRUOrder(h.comp(d), d.Bool("host"))) + "\n"
	case "backup":
		return h.cmdBackup(d)
	case "demote":
		dm, ok := h.tgt.(Demoter)
		if !ok {
			d.Fatalf("%s: the target cannot demote", d.Name)
		}
		acts, err := dm.Demote(h.node(d, "node"))
		return h.actionsOr(acts, err)
	case "hashes":
		hs, err := h.introspector(d).PageHashes(h.node(d, "node"))
		if err != nil {
			return h.errOut(err, nil)
		}
		return strings.Join(hs, "\n") + "\n"
	}
	if out, ok := h.doHost(d); ok {
		return out
	}
	d.Fatalf("unknown command %q", d.Name)
	return ""
}

// actionsOr prints an error (with any actions that came with it), the
// actions, or "no actions".
func (h *harness) actionsOr(acts []core.Action, err error) string {
	if err != nil {
		return h.errOut(err, acts)
	}
	if len(acts) == 0 {
		return "no actions\n"
	}
	return h.formatActions(acts)
}

func (h *harness) okOr(err error) string {
	if err != nil {
		return h.errOut(err, nil)
	}
	return "ok\n"
}

func (h *harness) render() string {
	s, err := h.tgt.Render()
	if err != nil {
		return h.errOut(err, nil)
	}
	return s
}

func (h *harness) cmdNew(d *transcript.Cmd) string {
	cfg := core.Config{
		PageSize: d.IntOr("page", 1),
		Policy:   d.StringOr("policy", ""),
		Bigram:   d.Bool("bigram"),
		HostTier: d.Bool("host-tier"),
		KVEvents: d.Bool("kv-events"),

		WriteThroughThreshold: d.IntOr("wt-threshold", 0),
		ExternalLinker:        d.Bool("linker"),

		SWAWindow:          d.IntOr("window", 0),
		MambaChunkSize:     d.IntOr("mamba-chunk", 0),
		MambaMaxPathStates: d.IntOr("mamba-cap", 0),
	}
	for _, name := range d.Strings("components") {
		cfg.Components = append(cfg.Components, parseComponent(d, name))
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
	tgt, err := h.opts.New(cfg)
	if err != nil {
		return h.errOut(err, nil)
	}
	h.close()
	comps := core.ComponentSet(0).With(core.Full)
	for _, c := range cfg.Components {
		comps = comps.With(c)
	}
	*h = harness{
		opts: h.opts, tgt: tgt, page: cfg.PageSize, bigram: cfg.Bigram, comps: comps, nextSlot: 100, nextHost: 1000,
		nextAux: 500, hostTier: cfg.HostTier, linker: cfg.ExternalLinker,
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

func (h *harness) comp(d *transcript.Cmd) core.Component {
	return parseComponent(d, d.StringOr("comp", "full"))
}

// alignedAtoms is the page-aligned atom count of n tokens.
func (h *harness) alignedAtoms(n int) int {
	if h.bigram {
		n = max(n-1, 0)
	}
	return n / h.page * h.page
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

		SWAEvictedSeqlen:   d.IntOr("swa-evicted", 0),
		SWABranchingSeqlen: d.IntOr("swa-branching", 0),
	}
	// A Mamba tree needs the request's state slot: without mamba= the
	// insert gets -1, which the tree refuses for a non-empty key.
	p.MambaSlot = int32(d.IntOr("mamba", 0))
	if !d.Has("mamba") && h.comps.Has(core.Mamba) {
		p.MambaSlot = -1
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
	r, err := h.tgt.Match(nil, ns, tokens)
	if err != nil {
		return h.errOut(err, r.Actions)
	}
	var b strings.Builder
	b.WriteString(h.bind(d, r.LastDevice))
	if name := d.StringOr("best", ""); name != "" {
		h.names[name] = r.Best
		fmt.Fprintf(&b, "%s = %v\n", name, h.show(r.Best))
	}
	fmt.Fprintf(&b, "device=%d indices=%s last-device=%v last-host=%v best=%v full-hit=%d host-hit=%d\n",
		r.DeviceLen, formatInts(append([]int32{}, r.Indices...)), h.show(r.LastDevice), h.show(r.LastHost), h.show(r.Best), r.FullKVHitLen, r.HostHitLen)
	// The auxiliary fields print for the components the tree has, and
	// in any tree when they leave their neutral values (which would be a
	// bug in a tree without that component).
	var aux []string
	if h.comps.Has(core.SWA) || r.SWABranchingSeqlen != -1 || r.SWAHostHitLen != 0 {
		aux = append(aux, fmt.Sprintf("swa-branching=%d swa-host-hit=%d", r.SWABranchingSeqlen, r.SWAHostHitLen))
	}
	if h.comps.Has(core.Mamba) || r.MambaBranchingSeqlen != -1 || r.MambaHostHitLen != 0 || r.MambaSlot != -1 {
		aux = append(aux, fmt.Sprintf("mamba-branching=%d mamba-host-hit=%d mamba-slot=%d", r.MambaBranchingSeqlen, r.MambaHostHitLen, r.MambaSlot))
	}
	if len(aux) > 0 {
		b.WriteString(strings.Join(aux, " "))
		b.WriteByte('\n')
	}
	b.WriteString(h.formatActions(r.Actions))
	return b.String()
}

func (h *harness) cmdLock(d *transcript.Cmd) string {
	id := h.node(d, "node")
	var skip core.ComponentSet
	for _, name := range d.Strings("skip") {
		skip = skip.With(parseComponent(d, name))
	}
	name := d.StringOr("as", "")
	r, err := h.tgt.Lock(id, skip)
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
	if err := h.tgt.Unlock(id, r, d.Bool("skip-swa")); err != nil {
		return h.errOut(err, nil)
	}
	delete(h.live, r.Serial)
	return "ok\n"
}

// cmdUnlockSWA releases a receipt's SWA part (and Mamba part) early and
// prints the frees; the receipt stays live until its final unlock, which
// must then pass skip-swa.
func (h *harness) cmdUnlockSWA(d *transcript.Cmd) string {
	su, ok := h.tgt.(SWAUnlocker)
	if !ok {
		d.Fatalf("%s: the target has no early SWA release", d.Name)
	}
	id := h.node(d, "node")
	name := d.String("receipt")
	r, ok := h.receipts[name]
	if !ok {
		d.Fatalf("no receipt named %q", name)
	}
	if d.Has("forge") {
		r.Node = h.node(d, "forge")
	}
	return h.actionsOr(su.UnlockSWA(id, r))
}

// cmdBackup backs a node up to the host tier: it prints the spec, hands
// out host slots for it from a counter (1000 on each new), and commits.
func (h *harness) cmdBackup(d *transcript.Cmd) string {
	hb, ok := h.tgt.(HostBackuper)
	if !ok {
		d.Fatalf("%s: the target has no host-tier backup", d.Name)
	}
	var b strings.Builder
	h.backupOne(&b, hb, h.node(d, "node"), "")
	return b.String()
}

func (h *harness) cmdEvictNext() string {
	step, err := h.tgt.EvictNext()
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
}

// cmdReceipts prints the live receipts' serials: the tree's own list
// where the target has one, else the harness's, after checking the
// target's count.
func (h *harness) cmdReceipts(d *transcript.Cmd) string {
	if ti, ok := h.tgt.(TreeIntrospector); ok {
		return fmt.Sprintf("live=%v\n", ti.LiveReceipts())
	}
	n, err := h.inspector(d).LiveReceiptCount()
	if err != nil {
		return h.errOut(err, nil)
	}
	live := make([]uint64, 0, len(h.live))
	for s := range h.live {
		live = append(live, s)
	}
	slices.Sort(live)
	if n != len(live) {
		d.Fatalf("the target holds %d live receipts, the harness counted %v", n, live)
	}
	return fmt.Sprintf("live=%v\n", live)
}

func (h *harness) cmdInspect(d *transcript.Cmd) string {
	info, err := h.inspector(d).Inspect(h.node(d, "node"))
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
			fmt.Fprintf(&b, "%s device=%s host=%s lock=%d host-lock=%d", c,
				formatInts(info.Device[c]), formatInts(info.Host[c]), info.Lock[c], info.HostLock[c])
			if c == core.SWA {
				fmt.Fprintf(&b, " uuid=%d", info.SWAUUID)
			}
			b.WriteByte('\n')
		}
	}
	fmt.Fprintf(&b, "hits=%d priority=%d creation=%d access=%d d-leaf=%v\n",
		info.Hits, info.Priority, info.Creation, info.LastAccess, info.DLeaf)
	if h.hostTier || h.linker {
		fmt.Fprintf(&b, "h-leaf=%v wt-pending=%d pinned-by=%v ext-stored=%v ext-pending=%d\n",
			info.HLeaf, info.WriteThroughPending, h.show(info.PinnedBy), info.ExternalStored, info.ExternalPending)
	}
	return b.String()
}

func (h *harness) cmdDFSOrder(d *transcript.Cmd) string {
	names := d.Strings("nodes")
	ids := make([]core.NodeID, len(names))
	for k, n := range names {
		ids[k] = h.lookup(d, n)
	}
	order, err := h.inspector(d).DFSWeightOrder(ids)
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
	b.WriteString(h.formatActions(step.Actions))
	return b.String()
}

func (h *harness) formatResult(r core.InsertResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "prefix=%d total=%d last=%v", r.PrefixLen, r.TotalLen, h.show(r.LastDevice))
	// mamba-exist is vacuously true without Mamba, swa-branch-inserted
	// false without SWA: print them with their component, or when off
	// their neutral value.
	if h.comps.Has(core.Mamba) || !r.MambaExist {
		fmt.Fprintf(&b, " mamba-exist=%v", r.MambaExist)
	}
	if h.comps.Has(core.SWA) || r.SWABranchInserted {
		fmt.Fprintf(&b, " swa-branch-inserted=%v", r.SWABranchInserted)
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
func (h *harness) formatActions(acts []core.Action) string {
	if _, ok := h.tgt.(IDMapper); !ok {
		return core.FormatActions(acts)
	}
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

// bind handles as=name (binding id) and echoes defaulted insert slots.
func (h *harness) bind(d *transcript.Cmd, id core.NodeID) string {
	var b strings.Builder
	if (d.Name == "insert" || d.Name == "begin-insert") && !d.Has("slots") {
		// The counter moved by the aligned length just inserted.
		n := h.alignedAtoms(len(d.Uint32s("tokens")))
		fmt.Fprintf(&b, "slots=%s\n", formatInts(seq(h.nextSlot-int32(n), n)))
	}
	if name := d.StringOr("as", ""); name != "" {
		h.names[name] = id
		fmt.Fprintf(&b, "%s = %v\n", name, h.show(id))
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
	msg := err.Error()
	if h.opts.ErrorText != nil {
		msg = h.opts.ErrorText(err)
	}
	return "error: " + msg + "\n" + h.formatActions(acts)
}

// node resolves the node argument key.
func (h *harness) node(d *transcript.Cmd, key string) core.NodeID {
	return h.lookup(d, d.String(key))
}

// lookup resolves a bound name, "root", or a literal core-form handle
// nSLOT.GEN (converted to the target's form).
func (h *harness) lookup(d *transcript.Cmd, v string) core.NodeID {
	if id, ok := h.names[v]; ok {
		return id
	}
	if v == "root" {
		id, err := h.inspector(d).Root()
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
			id := core.NodeID(gen<<32 | (slot + 1))
			if m, ok := h.tgt.(IDMapper); ok {
				id = m.TargetID(id)
			}
			return id
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
		parts[k] = h.show(id).String() + strings.ReplaceAll(h.nameOf(id), " ", "")
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
