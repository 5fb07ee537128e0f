package transcripttest

import (
	"fmt"
	"strings"

	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/internal/transcript"
)

// The host-tier (HiCache) commands. Each capability is an optional
// interface that a *core.Tree has with exactly these signatures; a target
// without one fails the command. host/native's engines have them all.

// WriteThroughMarker is the mark-pending and finish-wt commands'
// capability: the pending mark of a write-through and its ack.
type WriteThroughMarker interface {
	MarkWriteThroughPending(nodes []core.NodeID, ack int64) ([]core.NodeID, error)
	FinishWriteThrough(nodes []core.NodeID, ack int64) error
}

// LoadBacker is the load-back commands' capability: the plan of a
// load-back, its commit and its end.
type LoadBacker interface {
	LoadBackPlan(anchor core.NodeID) (core.LoadBackPlan, error)
	CommitLoadBack(anchor core.NodeID, c core.LoadBackCommit) ([]core.Action, error)
	FinishLoadBack(anchor core.NodeID) error
}

// HostLocker is the host-lock and host-unlock commands' capability: the
// lock that protects host copies from host eviction.
type HostLocker interface {
	HostLock(node core.NodeID) (core.Receipt, error)
	HostUnlock(node core.NodeID, r core.Receipt) error
}

// HostEvictor is the evict-host command's capability.
type HostEvictor interface {
	EvictHost(c core.Component, want int, dst []core.Action) ([]core.Action, int, error)
}

// HostInserter is the insert-host command's capability: KV fetched into
// host memory becomes a host-only node.
type HostInserter interface {
	InsertHost(anchor core.NodeID, ns core.Namespace, tokens []uint32, hostSlots []int32) (core.InsertHostResult, []core.Action, error)
}

// SubtreeDropper is the drop-subtree command's capability: a write-back
// eviction whose backup failed deletes the leaf and its host-only
// descendants.
type SubtreeDropper interface {
	DropSubtreeNoHost(node core.NodeID) (bool, []core.Action, error)
}

// StorageSpecer is the storage-spec and backfill commands' capability:
// storage (L3) keys of host data.
type StorageSpecer interface {
	StorageSpec(node core.NodeID) (core.StorageSpec, error)
	BackfillHashes() int
}

// Linker is the linker-* commands' capability: the external cache
// linker's marks.
type Linker interface {
	LinkerChain(node core.NodeID) ([]core.NodeID, error)
	MarkLinkerPending(nodes []core.NodeID, id int64) error
	FinishLinkerOffload(nodes []core.NodeID, id int64, ok bool) error
	MarkLinkerStoredPath(from, until core.NodeID) error
}

// OngoingChecker is the sanity-ongoing command's capability: the sanity
// check with the host's operations in flight.
type OngoingChecker interface {
	SanityCheckOngoing(o core.Ongoing) error
}

func capability[T any](h *harness, d *transcript.Cmd, what string) T {
	c, ok := h.tgt.(T)
	if !ok {
		d.Fatalf("%s: the target has no %s", d.Name, what)
	}
	return c
}

// doHost runs the host-tier commands; ok is false for other names.
func (h *harness) doHost(d *transcript.Cmd) (string, bool) {
	switch d.Name {
	case "mark-pending":
		wt := capability[WriteThroughMarker](h, d, "write-through marks")
		ids, err := wt.MarkWriteThroughPending(h.nodes(d, "nodes"), int64(d.Int("ack")))
		if err != nil {
			return h.errOut(err, nil), true
		}
		return "pending " + h.formatIDs(ids) + "\n", true
	case "finish-wt":
		wt := capability[WriteThroughMarker](h, d, "write-through marks")
		return h.okOr(wt.FinishWriteThrough(h.nodes(d, "nodes"), int64(d.Int("ack")))), true
	case "write-through":
		return h.cmdWriteThrough(d), true
	case "plan-load-back":
		lb := capability[LoadBacker](h, d, "load-back")
		id := h.node(d, "node")
		p, err := lb.LoadBackPlan(id)
		if err != nil {
			return h.errOut(err, nil), true
		}
		if h.plans == nil {
			h.plans = map[core.NodeID]core.LoadBackPlan{}
		}
		h.plans[id] = p
		return h.formatPlan(p), true
	case "commit-load-back":
		return h.cmdCommitLoadBack(d), true
	case "finish-load-back":
		lb := capability[LoadBacker](h, d, "load-back")
		return h.okOr(lb.FinishLoadBack(h.node(d, "node"))), true
	case "load-back":
		return h.cmdLoadBack(d), true
	case "host-lock":
		return h.cmdHostLock(d), true
	case "host-unlock":
		hl := capability[HostLocker](h, d, "host locks")
		id := h.node(d, "node")
		r := h.receipt(d)
		if d.Has("forge") {
			r.Node = h.node(d, "forge")
		}
		if err := hl.HostUnlock(id, r); err != nil {
			return h.errOut(err, nil), true
		}
		delete(h.live, r.Serial)
		return "ok\n", true
	case "evict-host":
		he := capability[HostEvictor](h, d, "host eviction")
		acts, freed, err := he.EvictHost(h.comp(d), d.Int("n"), nil)
		if err != nil {
			return h.errOut(err, acts), true
		}
		return fmt.Sprintf("freed=%d\n", freed) + h.formatActions(acts), true
	case "insert-host":
		return h.cmdInsertHost(d), true
	case "drop-subtree":
		sd := capability[SubtreeDropper](h, d, "subtree drop")
		ok, acts, err := sd.DropSubtreeNoHost(h.node(d, "node"))
		if err != nil {
			return h.errOut(err, acts), true
		}
		return fmt.Sprintf("dropped=%v\n", ok) + h.formatActions(acts), true
	case "storage-spec":
		return h.cmdStorageSpec(d), true
	case "backfill":
		ss := capability[StorageSpecer](h, d, "storage keys")
		return fmt.Sprintf("hashed=%d\n", ss.BackfillHashes()), true
	case "linker-chain":
		lk := capability[Linker](h, d, "external linker")
		ids, err := lk.LinkerChain(h.node(d, "node"))
		if err != nil {
			return h.errOut(err, nil), true
		}
		return "chain " + h.formatIDs(ids) + "\n", true
	case "linker-pending":
		lk := capability[Linker](h, d, "external linker")
		return h.okOr(lk.MarkLinkerPending(h.nodes(d, "nodes"), int64(d.Int("id")))), true
	case "linker-finish":
		lk := capability[Linker](h, d, "external linker")
		ok := true
		if d.Has("ok") {
			ok = d.Bool("ok")
		}
		return h.okOr(lk.FinishLinkerOffload(h.nodes(d, "nodes"), int64(d.Int("id")), ok)), true
	case "linker-stored":
		lk := capability[Linker](h, d, "external linker")
		var until core.NodeID
		if d.Has("until") {
			until = h.node(d, "until")
		}
		return h.okOr(lk.MarkLinkerStoredPath(h.node(d, "node"), until)), true
	case "sanity-ongoing":
		oc := capability[OngoingChecker](h, d, "sanity check with operations in flight")
		var o core.Ongoing
		if d.Has("wt") {
			o.WriteThrough = append([]core.NodeID{}, h.nodes(d, "wt")...)
		}
		if d.Has("lb") {
			o.LoadBack = append([]core.NodeID{}, h.nodes(d, "lb")...)
		}
		return h.okOr(oc.SanityCheckOngoing(o)), true
	}
	return "", false
}

// nodes resolves a list of node arguments.
func (h *harness) nodes(d *transcript.Cmd, key string) []core.NodeID {
	names := d.Strings(key)
	ids := make([]core.NodeID, len(names))
	for k, n := range names {
		ids[k] = h.lookup(d, n)
	}
	return ids
}

// receipt returns the receipt named by receipt=.
func (h *harness) receipt(d *transcript.Cmd) core.Receipt {
	name := d.String("receipt")
	r, ok := h.receipts[name]
	if !ok {
		d.Fatalf("no receipt named %q", name)
	}
	return r
}

func (h *harness) hostSlots(n int) []int32 {
	v := seq(h.nextHost, n)
	h.nextHost += int32(n)
	return v
}

func (h *harness) auxSlots(n int) []int32 {
	v := seq(h.nextAux, n)
	h.nextAux += int32(n)
	return v
}

// backupOne runs backup's spec and commit on id, writing what it copies
// to b; it reports success.
func (h *harness) backupOne(b *strings.Builder, hb HostBackuper, id core.NodeID, prefix string) bool {
	spec, err := hb.BackupSpec(id)
	if err != nil {
		b.WriteString(prefix + h.errOut(err, nil))
		return false
	}
	c := core.BackupCommit{Mamba: -1}
	if spec.Full != nil {
		c.Full = h.hostSlots(len(spec.Full))
		fmt.Fprintf(b, "%sfull %s -> host %s\n", prefix, formatInts(spec.Full), formatInts(c.Full))
	}
	for _, e := range spec.SWA {
		c.SWA = append(c.SWA, h.hostSlots(len(e.Slots)))
		fmt.Fprintf(b, "%sswa %v %s -> host %s\n", prefix, h.show(e.Node), formatInts(e.Slots), formatInts(c.SWA[len(c.SWA)-1]))
	}
	if spec.Mamba >= 0 {
		c.Mamba = h.hostSlots(1)[0]
		fmt.Fprintf(b, "%smamba %d -> host %d\n", prefix, spec.Mamba, c.Mamba)
	}
	if spec.Empty() {
		b.WriteString(prefix + "nothing to copy\n")
	}
	if err := hb.CommitBackup(id, c); err != nil {
		b.WriteString(prefix + h.errOut(err, nil))
		return false
	}
	return true
}

// cmdWriteThrough runs a BackupKV chain the way a write-through
// controller does, with the ack at once: per node, back up, lock, mark
// pending under the next ack of a counter (1 on each new), acknowledge,
// unlock. The first failure stops the chain.
func (h *harness) cmdWriteThrough(d *transcript.Cmd) string {
	hb := capability[HostBackuper](h, d, "host-tier backup")
	wt := capability[WriteThroughMarker](h, d, "write-through marks")
	var b strings.Builder
	for _, id := range h.nodes(d, "nodes") {
		fmt.Fprintf(&b, "%v%s:\n", h.show(id), h.nameOf(id))
		if !h.backupOne(&b, hb, id, "  ") {
			break
		}
		r, err := h.tgt.Lock(id, 0)
		if err != nil {
			b.WriteString("  " + h.errOut(err, nil))
			break
		}
		h.ack++
		ids, err := wt.MarkWriteThroughPending([]core.NodeID{id}, h.ack)
		if err != nil {
			b.WriteString("  " + h.errOut(err, nil))
		} else if err := wt.FinishWriteThrough(ids, h.ack); err != nil {
			b.WriteString("  " + h.errOut(err, nil))
		} else {
			fmt.Fprintf(&b, "  acked %d\n", h.ack)
		}
		if err := h.tgt.Unlock(id, r, false); err != nil {
			b.WriteString("  " + h.errOut(err, nil))
			break
		}
	}
	return b.String()
}

func (h *harness) formatPlan(p core.LoadBackPlan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "plan anchor=%v atoms=%d", h.show(p.Anchor), p.Atoms())
	if p.Pinned {
		b.WriteString(" pinned")
	}
	if p.Empty() {
		b.WriteString(" empty")
	}
	b.WriteByte('\n')
	for _, e := range p.Full {
		fmt.Fprintf(&b, "full %v host %s\n", h.show(e.Node), formatInts(e.Slots))
	}
	for _, e := range p.SWA {
		fmt.Fprintf(&b, "swa %v host %s\n", h.show(e.Node), formatInts(e.Slots))
	}
	if p.Mamba >= 0 {
		fmt.Fprintf(&b, "mamba host %d\n", p.Mamba)
	}
	return b.String()
}

// commitLoadBack fills plan p with device slots (Full from the insert
// counter, SWA and Mamba from the auxiliary counter) and commits it.
func (h *harness) commitLoadBack(b *strings.Builder, lb LoadBacker, anchor core.NodeID, p core.LoadBackPlan) bool {
	c := core.LoadBackCommit{Mamba: -1}
	for _, e := range p.Full {
		v := seq(h.nextSlot, len(e.Slots))
		h.nextSlot += int32(len(e.Slots))
		c.Full = append(c.Full, v)
		fmt.Fprintf(b, "load full %v %s -> %s\n", h.show(e.Node), formatInts(e.Slots), formatInts(v))
	}
	for _, e := range p.SWA {
		v := h.auxSlots(len(e.Slots))
		c.SWA = append(c.SWA, v)
		fmt.Fprintf(b, "load swa %v %s -> %s\n", h.show(e.Node), formatInts(e.Slots), formatInts(v))
	}
	if p.Mamba >= 0 {
		c.Mamba = h.auxSlots(1)[0]
		fmt.Fprintf(b, "load mamba %d -> %d\n", p.Mamba, c.Mamba)
	}
	acts, err := lb.CommitLoadBack(anchor, c)
	if err != nil {
		b.WriteString(h.errOut(err, acts))
		return false
	}
	b.WriteString(h.formatActions(acts))
	return true
}

// cmdCommitLoadBack commits the plan plan-load-back last returned for
// the anchor (a host copies what its plan said, even when the tree has
// changed since), or a fresh plan when there is none. It commits a Pinned
// or empty plan too: the tree must refuse or accept it.
func (h *harness) cmdCommitLoadBack(d *transcript.Cmd) string {
	lb := capability[LoadBacker](h, d, "load-back")
	id := h.node(d, "node")
	var b strings.Builder
	p, ok := h.plans[id]
	if ok {
		delete(h.plans, id)
	} else {
		var err error
		if p, err = lb.LoadBackPlan(id); err != nil {
			return h.errOut(err, nil)
		}
		b.WriteString(h.formatPlan(p))
	}
	h.commitLoadBack(&b, lb, id, p)
	return b.String()
}

// cmdLoadBack runs a whole load-back the way a controller does: host
// lock and lock the anchor, plan, commit (unless the plan is empty or
// pinned), finish, unlock both.
func (h *harness) cmdLoadBack(d *transcript.Cmd) string {
	lb := capability[LoadBacker](h, d, "load-back")
	hl := capability[HostLocker](h, d, "host locks")
	id := h.node(d, "node")
	var b strings.Builder
	hr, err := hl.HostLock(id)
	if err != nil {
		return h.errOut(err, nil)
	}
	r, err := h.tgt.Lock(id, 0)
	if err != nil {
		_ = hl.HostUnlock(id, hr)
		return h.errOut(err, nil)
	}
	p, err := lb.LoadBackPlan(id)
	if err != nil {
		b.WriteString(h.errOut(err, nil))
	} else {
		b.WriteString(h.formatPlan(p))
		if !p.Pinned && !p.Empty() && h.commitLoadBack(&b, lb, id, p) {
			if err := lb.FinishLoadBack(id); err != nil {
				b.WriteString(h.errOut(err, nil))
			}
		}
	}
	if err := h.tgt.Unlock(id, r, false); err != nil {
		b.WriteString(h.errOut(err, nil))
	}
	if err := hl.HostUnlock(id, hr); err != nil {
		b.WriteString(h.errOut(err, nil))
	}
	return b.String()
}

func (h *harness) cmdHostLock(d *transcript.Cmd) string {
	hl := capability[HostLocker](h, d, "host locks")
	id := h.node(d, "node")
	name := d.StringOr("as", "")
	r, err := hl.HostLock(id)
	if err != nil {
		return h.errOut(err, nil)
	}
	if name == "" {
		name = fmt.Sprintf("h%d", r.Serial)
	}
	h.receipts[name] = r
	h.live[r.Serial] = true
	return fmt.Sprintf("host receipt %s: serial=%d node=%v swa-host-uuid=%d skipped=%v\n",
		name, r.Serial, h.show(r.Node), r.SWAHostUUID, r.Skipped)
}

// cmdInsertHost inserts host KV below an anchor; slots default to the
// host counter, one per aligned atom. It prints the host slots the host
// must free itself (the matched prefix, or all when dropped or matched).
func (h *harness) cmdInsertHost(d *transcript.Cmd) string {
	hi := capability[HostInserter](h, d, "host insert")
	anchor := h.node(d, "node")
	tokens := d.Uint32s("tokens")
	if tokens == nil {
		d.Fatalf("missing argument tokens=(...)")
	}
	slots := d.Int32s("slots")
	var b strings.Builder
	if slots == nil {
		slots = h.hostSlots(h.alignedAtoms(len(tokens)))
		fmt.Fprintf(&b, "host slots=%s\n", formatInts(slots))
	}
	res, acts, err := hi.InsertHost(anchor, parseNamespace(d), tokens, slots)
	if err != nil {
		return b.String() + h.errOut(err, acts)
	}
	if name := d.StringOr("as", ""); name != "" && res.Node != 0 {
		h.names[name] = res.Node
		fmt.Fprintf(&b, "%s = %v\n", name, h.show(res.Node))
	}
	node := "-"
	if res.Node != 0 {
		node = h.show(res.Node).String()
	}
	fmt.Fprintf(&b, "node=%s prefix=%d dropped=%v\n", node, res.PrefixLen, res.Dropped)
	L := min(h.alignedAtoms(len(tokens)), len(slots))
	free := slots[:min(res.PrefixLen, L)]
	if res.Dropped || res.PrefixLen >= L {
		free = slots[:L]
	}
	if len(free) > 0 {
		fmt.Fprintf(&b, "host frees %s\n", formatInts(free))
	}
	b.WriteString(h.formatActions(acts))
	return b.String()
}

// shortKey abbreviates a storage key (a hex page hash) to 16 characters.
func shortKey(k string) string {
	if len(k) > 16 {
		return k[:16]
	}
	return k
}

func shortKeys(ks []string) string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = shortKey(k)
	}
	return "[" + strings.Join(out, " ") + "]"
}

func (h *harness) cmdStorageSpec(d *transcript.Cmd) string {
	ss := capability[StorageSpecer](h, d, "storage keys")
	s, err := ss.StorageSpec(h.node(d, "node"))
	if err != nil {
		return h.errOut(err, nil)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "node=%v\n", h.show(s.Node))
	fmt.Fprintf(&b, "prefix %s\n", shortKeys(s.PrefixKeys))
	fmt.Fprintf(&b, "full %s\n", shortKeys(s.Full))
	if h.comps.Has(core.SWA) || s.SWA != nil {
		fmt.Fprintf(&b, "swa %s\n", shortKeys(s.SWA))
	}
	if h.comps.Has(core.Mamba) || s.Mamba != "" {
		m := "-"
		if s.Mamba != "" {
			m = shortKey(s.Mamba)
		}
		fmt.Fprintf(&b, "mamba %s\n", m)
	}
	return b.String()
}
