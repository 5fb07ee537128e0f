// Package dispatch runs the radixkv ABI: it decodes a request, calls the
// [core.Tree] it names and encodes the result and the host's actions.
//
// The WebAssembly module (package wasm) and the in-process engine of
// host/native both call [Dispatcher.Call], so the bytes a host sees are
// produced by the very same code on either path. The wire format is
// specified in abi/SPEC.md.
//
// # Buffers
//
// The slice Call returns is the dispatcher's own response buffer: it is
// valid until the next Call on the same Dispatcher, which overwrites it.
// Copy it to keep it. Call does not retain the request slice after it
// returns; the tree keeps its own copies of tokens and slots.
//
// A host that may read words in place (SetRequestViewer) lets the
// dispatcher read a request's token and slot arrays from the request
// bytes instead of decoding them into buffers of its own; what it keeps
// past the call (a match's tokens) it copies, except from CallKeeping,
// whose caller keeps the request bytes as they are until its next
// CallKeeping.
//
// # Instances and node ids
//
// A Dispatcher owns many trees, each named by a u32 handle. Handles start
// at 1 and are never reused, not even after destroy. Node ids travel in
// wire form: the core handle with its high 32 bits (the generation) XORed
// with a per-instance tag, so a node id issued by one instance presented
// to another resolves to a generation no live node has, and core rejects
// it as a stale handle instead of aliasing one of its own nodes.
//
// # Kept matches
//
// Each instance keeps its last successful match (request id, tokens and
// result indices) for begin_insert_matched, which inserts those tokens,
// and the match's slots first, without the host sending them again
// (abi/SPEC.md §4.3.1). The dispatcher's decode buffers and the
// instance's change owner on every match; nothing is copied (tokens read
// in place, see Buffers, are copied unless CallKeeping brought them).
//
// # Failures
//
// Call never panics. Every input is validated (by the codec, then by
// core); core leaves a tree unchanged when it returns an error. Should a
// bug panic anyway, Call recovers, answers code internal, and marks the
// instance poisoned: it refuses every op but reset and destroy until
// reset.
package dispatch

import (
	"errors"
	"fmt"
	"math"

	"github.com/radixkv/radixkv/abi"
	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/core/blockcache"
	ssm "github.com/radixkv/radixkv/core/snapshot"
)

// Impl is the implementation name the version op reports.
const Impl = "radixkv"

type instance struct {
	tree     *core.Tree
	tag      uint32
	poisoned string
	// snap is the instance's SSM snapshot index, made on first use;
	// snapCfg is the configuration it (and a reset) starts from.
	snap    *ssm.Index
	snapCfg ssm.Config
	// blocks is the instance's block-cache facade, made on first use (its
	// lookups use snap); blocksCfg is what it starts from.
	blocks    *blockcache.Cache
	blocksCfg blockcache.Config
	// The instance's last match, for begin_insert_matched: its request
	// id (0: none), tokens and result indices, in buffers the instance
	// owns (swapped with the dispatcher's, never copied).
	matchID  uint64
	matchTok []uint32
	matchIdx []int32
	// tokBuf is the instance's own token buffer, which matchTok is a
	// prefix of unless it views a kept request (Dispatcher.viewer).
	tokBuf []uint32
}

// Dispatcher owns core trees by handle and answers ABI requests. It is
// synchronous and not safe for concurrent use, like core.Tree.
type Dispatcher struct {
	trees map[uint32]*instance
	last  uint32 // last issued handle
	// hot is the instance of handle hotH, the last one looked up: calls
	// come in runs on one instance, and a map lookup costs hundreds of
	// nanoseconds in the WebAssembly build. Destroy clears it.
	hotH uint32
	hot  *instance

	req  abi.Request
	resp abi.Response
	out  []byte

	// view, when set, reads request arrays in place (SetRequestViewer);
	// keeping is set during CallKeeping; viewer is the instance whose
	// kept match views the last CallKeeping's request, which the next
	// one makes stale.
	view    abi.WordViewer
	keeping bool
	viewer  *instance

	// scratch reused across calls
	toks  []uint32
	slots []int32
	ids   []core.NodeID
	idx   []int32
	cat   []int32 // begin_insert_matched's slots: the match's, then the request's
	acts  []core.Action
	order []int32
	evs   []core.Event
}

// New returns a Dispatcher with no instances.
func New() *Dispatcher {
	return &Dispatcher{trees: make(map[uint32]*instance), out: make([]byte, 0, 4096)}
}

// Tag returns the node-id tag of instance handle h (see the package doc).
// It is a fixed bijective mix of h, so distinct handles have distinct,
// non-zero tags.
func Tag(h uint32) uint32 {
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}

// Call decodes req, runs it and returns the encoded response, valid until
// the next Call. It never panics and always returns a well-formed
// response.
func (d *Dispatcher) Call(req []byte) (out []byte) {
	return d.call(req, false)
}

// SetRequestViewer makes later calls read the bulk arrays of requests
// (abi.DecodeRequestViewing) through v, in place of the request bytes,
// where v can; nil restores the copies. Wire bytes and answers are the
// same either way. A host whose request buffer holds words in their
// memory order (a little-endian host calling in its own process) saves
// decoding each token and slot once.
func (d *Dispatcher) SetRequestViewer(v abi.WordViewer) { d.view = v }

// CallKeeping is Call for a caller that keeps req's bytes unchanged until
// its next CallKeeping on d (Call may come in between, on other
// buffers): a match's tokens viewed in req (SetRequestViewer) are then
// kept for begin_insert_matched as they are, not copied. The next
// CallKeeping drops a match kept that way before it reads its own
// request, so such a match is never used once its bytes may have changed
// (a later insert naming it answers stale_match).
func (d *Dispatcher) CallKeeping(req []byte) []byte {
	d.DropKept()
	return d.call(req, true)
}

// DropKept forgets a match kept as a view of the last CallKeeping's
// request (none: nothing changes), so that a later insert naming it
// answers stale_match: a caller whose promise to keep those bytes ends
// early (it frees or reuses the buffer) calls it first.
func (d *Dispatcher) DropKept() {
	if inst := d.viewer; inst != nil {
		d.viewer = nil
		inst.matchID, inst.matchTok = 0, nil
	}
}

func (d *Dispatcher) call(req []byte, keeping bool) (out []byte) {
	d.resp.Reset()
	d.keeping = keeping
	defer func() {
		if p := recover(); p != nil {
			out = d.recovered(p)
		}
	}()
	q := &d.req
	q.Insert.Tokens, q.Insert.Slots, q.Nodes = d.toks, d.slots, d.ids
	var err error
	if d.view != nil {
		err = abi.DecodeRequestViewing(q, req, d.view)
	} else {
		err = abi.DecodeRequest(q, req)
	}
	d.keepScratch()
	r := &d.resp
	r.Op, r.Instance, r.ID = q.Op, q.Instance, q.ID
	if err != nil {
		return d.fail(err)
	}
	if err := d.run(q, r); err != nil {
		return d.fail(err)
	}
	d.out = abi.AppendResponse(d.out[:0], r)
	if len(d.evs) > 0 {
		// The events are encoded: drop them rather than keep their
		// hashes and tokens alive until the next take_events.
		clear(d.evs)
		d.evs = d.evs[:0]
	}
	return d.out
}

func (d *Dispatcher) keepScratch() {
	q := &d.req
	v := q.Views()
	if cap(q.Insert.Tokens) > cap(d.toks) && v&abi.ViewTokens == 0 {
		d.toks = q.Insert.Tokens[:0]
	}
	if cap(q.Insert.Slots) > cap(d.slots) && v&abi.ViewSlots == 0 {
		d.slots = q.Insert.Slots[:0]
	}
	if cap(q.Nodes) > cap(d.ids) {
		d.ids = q.Nodes[:0]
	}
}

// fail encodes an error response, keeping any actions already set (core
// hands out actions the host must run even when a call fails).
func (d *Dispatcher) fail(err error) []byte {
	r := &d.resp
	r.Status = abi.StatusError
	r.Code, r.Message = codeAndMessage(err)
	d.out = abi.AppendResponse(d.out[:0], r)
	return d.out
}

// codeAndMessage is err's wire code and text.
func codeAndMessage(err error) (abi.Code, string) {
	var ae *abi.Error
	if errors.As(err, &ae) {
		return ae.Code, ae.Msg
	}
	return CodeOf(err), err.Error()
}

func (d *Dispatcher) recovered(p any) []byte {
	q := &d.req
	msg := fmt.Sprintf("internal error during %s: %v", q.Op, p)
	if inst, ok := d.trees[q.Instance]; ok && q.Op.NeedsInstance() {
		inst.poisoned = msg
		msg += "; the instance is poisoned until reset"
	}
	d.resp.Reset()
	d.resp.Op, d.resp.Instance, d.resp.ID = q.Op, q.Instance, q.ID
	return d.fail(&abi.Error{Code: abi.CodeInternal, Msg: msg})
}

var sentinels = []struct {
	err  error
	code abi.Code
}{
	{core.ErrInvalidConfig, abi.CodeInvalidConfig},
	{core.ErrUnknownPolicy, abi.CodeUnknownPolicy},
	{core.ErrUnsupported, abi.CodeUnsupported},
	{core.ErrInvalidArgument, abi.CodeInvalidArgument},
	{core.ErrStaleNode, abi.CodeStaleNode},
	{core.ErrReceipt, abi.CodeReceipt},
	{core.ErrInsertInFlight, abi.CodeInsertInFlight},
	{core.ErrNoInsert, abi.CodeNoInsert},
	{core.ErrEvictionInFlight, abi.CodeEvictionInFlight},
	{core.ErrNoEviction, abi.CodeNoEviction},
	{core.ErrBusy, abi.CodeBusy},
	{core.ErrBroken, abi.CodeBroken},
	{core.ErrSanity, abi.CodeSanity},
	{ssm.ErrInvalidConfig, abi.CodeInvalidConfig},
	{ssm.ErrInvalidArgument, abi.CodeInvalidArgument},
	{ssm.ErrSanity, abi.CodeSanity},
	{ssm.ErrUnknownKey, abi.CodeUnknownKey},
	{ssm.ErrUnknownSession, abi.CodeUnknownSession},
	{ssm.ErrWrongAdapter, abi.CodeWrongAdapter},
	{ssm.ErrResident, abi.CodeResident},
	{ssm.ErrSlotInUse, abi.CodeSlotInUse},
	{blockcache.ErrInvalidConfig, abi.CodeInvalidConfig},
	{blockcache.ErrInvalidArgument, abi.CodeInvalidArgument},
	{blockcache.ErrSanity, abi.CodeSanity},
	{blockcache.ErrBlockInUse, abi.CodeBlockInUse},
	{blockcache.ErrOverRelease, abi.CodeOverRelease},
}

// CodeOf maps an error returned by core to its wire code (internal for an
// error that wraps no known sentinel).
func CodeOf(err error) abi.Code {
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			return s.code
		}
	}
	return abi.CodeInternal
}

// testHook, when set by tests, runs before each op (to inject panics).
var testHook func(op abi.Op)

func (d *Dispatcher) run(q *abi.Request, r *abi.Response) error {
	if testHook != nil {
		testHook(q.Op)
	}
	switch q.Op {
	case abi.OpVersion:
		r.ABIVersion, r.Impl = uint32(abi.Version), Impl
		return nil
	case abi.OpCreate:
		return d.create(q, r)
	}
	inst, ok := d.hot, d.hot != nil && d.hotH == q.Instance
	if !ok {
		if inst, ok = d.trees[q.Instance]; ok {
			d.hotH, d.hot = q.Instance, inst
		}
	}
	if !ok {
		why := "was never issued"
		if q.Instance <= d.last {
			why = "was destroyed"
		}
		return &abi.Error{Code: abi.CodeUnknownInstance, Msg: fmt.Sprintf("instance %d %s", q.Instance, why)}
	}
	switch q.Op {
	case abi.OpDestroy:
		delete(d.trees, q.Instance)
		d.hotH, d.hot = 0, nil
		if d.viewer == inst {
			d.viewer = nil
		}
		return nil
	case abi.OpReset:
		inst.tree.Reset()
		inst.poisoned = ""
		inst.matchID, inst.matchTok = 0, nil
		if d.viewer == inst {
			d.viewer = nil
		}
		inst.snap, inst.blocks = nil, nil // the next snapshot or block op starts empty
		r.Tag, r.Root = inst.tag, inst.tree.Root()
		return nil
	}
	if inst.poisoned != "" {
		return &abi.Error{Code: abi.CodeBroken, Msg: "instance refuses work until reset: " + inst.poisoned}
	}
	t, tag := inst.tree, inst.tag
	r.Tag = tag
	switch q.Op {
	case abi.OpStats:
		s := &r.Stats
		s.Root, s.PageSize, s.Components, s.Policy = t.Root(), uint32(t.PageSize()), t.Components(), t.Policy()
		for c := range abi.NumComponents {
			s.Evictable[c] = int64(t.Evictable(core.Component(c)))
			s.Protected[c] = int64(t.Protected(core.Component(c)))
		}
		s.InsertInFlight, s.EvictionInFlight = t.InsertInFlight(), t.EvictionInFlight()
		s.LiveReceipts = uint32(t.LiveReceiptCount())
		return nil
	case abi.OpMatch:
		return d.match(inst, q, r)
	case abi.OpMatchLock:
		// Exactly match, then lock of its LastDevice: a failed lock
		// leaves the match (and the kept match) standing, as two calls
		// would, and answers the lock's error with the match's actions.
		if err := d.match(inst, q, r); err != nil {
			return err
		}
		last := r.Match.LastDevice
		var err error
		r.Receipt, err = t.Lock(last, q.Skip)
		return nodeErr(err, abi.TagID(last, tag))
	case abi.OpBeginInsertMatchedUnlock:
		// Exactly begin_insert_matched, then, when it completed, unlock:
		// the unlock's outcome is reported beside the insert's, which
		// stands either way.
		if err := d.matchedParams(inst, q); err != nil {
			return err
		}
		if err := d.beginInsert(t, q, r); err != nil || !r.Done {
			return err
		}
		q.Receipt.Node = abi.TagID(q.Receipt.Node, tag)
		if uerr := nodeErr(t.Unlock(abi.TagID(q.Node, tag), q.Receipt, q.SkipSWA), q.Node); uerr != nil {
			r.Unlock.Code, r.Unlock.Message = codeAndMessage(uerr)
		} else {
			r.Unlock.Released = true
		}
		return nil
	case abi.OpBeginInsertMatched:
		if err := d.matchedParams(inst, q); err != nil {
			return err
		}
		return d.beginInsert(t, q, r)
	case abi.OpInsert:
		res, acts, err := t.Insert(q.Insert)
		r.Insert, r.Actions = res, acts
		return err
	case abi.OpBeginInsert:
		return d.beginInsert(t, q, r)
	case abi.OpResumeInsert:
		step, err := t.ResumeInsert()
		r.Done, r.Insert, r.Actions = step.Done, step.Result, step.Actions
		return err
	case abi.OpEndInsert:
		r.Actions = t.EndInsert()
		return nil
	case abi.OpLock:
		rc, err := t.Lock(abi.TagID(q.Node, tag), q.Skip)
		r.Receipt = rc
		return nodeErr(err, q.Node)
	case abi.OpUnlock:
		q.Receipt.Node = abi.TagID(q.Receipt.Node, tag)
		return nodeErr(t.Unlock(abi.TagID(q.Node, tag), q.Receipt, q.SkipSWA), q.Node)
	case abi.OpUnlockSWAEarly:
		rc := q.Receipt
		rc.Node = abi.TagID(rc.Node, tag)
		acts, err := t.UnlockSWA(abi.TagID(q.Node, tag), rc)
		r.Actions = acts
		return nodeErr(err, q.Node)
	case abi.OpMambaSetAlpha:
		return t.SetMambaAlpha(q.Alpha)
	case abi.OpEvictExcessPathStates:
		acts, err := t.EvictExcessPathStates(abi.TagID(q.Node, tag))
		r.Actions = acts
		return nodeErr(err, q.Node)
	case abi.OpEvict:
		want, err := wantOf(q.Want)
		if err != nil {
			return err
		}
		acts, freed, err := t.Evict(q.Component, want, d.acts[:0])
		if cap(acts) > cap(d.acts) {
			d.acts = acts[:0]
		}
		r.Actions, r.Freed = acts, int64(freed)
		return err
	case abi.OpEvictStart:
		want, err := wantOf(q.Want)
		if err != nil {
			return err
		}
		return t.EvictStart(q.Component, want)
	case abi.OpEvictNext:
		step, err := t.EvictNext()
		r.Node, r.Freed, r.Done, r.Actions = step.Node, int64(step.Freed), step.Done, step.Actions
		return err
	case abi.OpEvictEnd:
		t.EvictEnd()
		return nil
	case abi.OpSanityCheck:
		return t.SanityCheck()
	case abi.OpInspect:
		info, err := t.Inspect(abi.TagID(q.Node, tag))
		r.Info = info
		return nodeErr(err, q.Node)
	case abi.OpRender:
		r.Text = t.Render()
		return nil
	case abi.OpDeviceLeaves:
		r.Nodes = t.DeviceLeaves()
		return nil
	case abi.OpNodes:
		r.Nodes = t.Nodes()
		return nil
	case abi.OpLRUOrder:
		r.Nodes = t.LRUOrder(q.Component, q.Host)
		return nil
	case abi.OpDFSOrder:
		untag(q.Nodes, tag)
		pos, err := t.DFSWeightOrder(q.Nodes)
		if err != nil {
			return err
		}
		d.order = d.order[:0]
		for _, p := range pos {
			d.order = append(d.order, int32(p))
		}
		r.Order = d.order
		return nil
	case abi.OpTakeEvents:
		d.evs = t.TakeEvents(d.evs[:0])
		r.Events = d.evs
		return nil
	case abi.OpSanityCheckOngoing:
		untag(q.Ongoing.WriteThrough, tag)
		untag(q.Ongoing.LoadBack, tag)
		return t.SanityCheckOngoing(q.Ongoing)
	}
	if q.Op.IsSnapshotOp() {
		return runSnapshot(inst, q, r)
	}
	if q.Op.IsBlocksOp() {
		return runBlocks(inst, q, r)
	}
	if ok, err := d.runHost(t, tag, q, r); ok {
		return err
	}
	return &abi.Error{Code: abi.CodeUnknownOp, Msg: fmt.Sprintf("%s has no handler", q.Op)}
}

// match runs q's match on inst's tree into the dispatcher's index
// buffer, puts the result and its actions in r and keeps it as inst's
// last match. match and match_lock share it. The result goes straight
// into r: a MatchResult returned or held in a local costs a bulk zeroing
// and copies in the WebAssembly build.
func (d *Dispatcher) match(inst *instance, q *abi.Request, r *abi.Response) error {
	var err error
	r.Match, err = inst.tree.Match(d.idx[:0], q.Insert.Namespace, q.Insert.Tokens)
	m := &r.Match
	if cap(m.Indices) > cap(d.idx) {
		d.idx = m.Indices[:0]
	}
	r.Actions = m.Actions
	d.keepMatch(inst, q, m.Indices, err)
	return err
}

// beginInsert runs q.Insert's begin_insert into r (begin_insert and
// both begin_insert_matched ops share it). The step is taken apart in
// place rather than copied field by field out of a local.
func (d *Dispatcher) beginInsert(t *core.Tree, q *abi.Request, r *abi.Response) error {
	step, err := t.BeginInsert(q.Insert)
	r.Done, r.Insert, r.Actions = step.Done, step.Result, step.Actions
	return err
}

// keepMatch makes a match inst's last match (none when it failed). The
// decoded tokens and the result indices change owner: the instance keeps
// them and gives the dispatcher its previous buffers for the next call.
//
// Tokens read in place of the request (SetRequestViewer) are copied into
// the instance's buffer, since the request's bytes change after the call;
// from CallKeeping they are kept as they are, a view of bytes its caller
// keeps until its next CallKeeping, which drops the match first.
func (d *Dispatcher) keepMatch(inst *instance, q *abi.Request, idx []int32, err error) {
	if d.viewer == inst {
		d.viewer = nil // replaced below, either way
	}
	if err != nil {
		inst.matchID = 0
		return
	}
	inst.matchID = q.ID
	switch tok := q.Insert.Tokens; {
	case q.Views()&abi.ViewTokens == 0:
		inst.matchTok = tok
		inst.tokBuf, d.toks = tok, inst.tokBuf[:0]
	case d.keeping:
		inst.matchTok, d.viewer = tok, inst
	default:
		inst.tokBuf = append(inst.tokBuf[:0], tok...)
		inst.matchTok = inst.tokBuf
	}
	inst.matchIdx, d.idx = idx, inst.matchIdx[:0]
}

// matchedParams completes begin_insert_matched's insert parameters in
// q.Insert from inst's last match, or answers stale_match and leaves q
// as it was. It works in place: an InsertParams copied or returned costs
// a bulk zeroing and copies in the WebAssembly build.
func (d *Dispatcher) matchedParams(inst *instance, q *abi.Request) error {
	m, p := &q.Matched, &q.Insert
	switch {
	case m.MatchID == 0 || m.MatchID != inst.matchID:
		last := "no match is kept"
		if inst.matchID != 0 {
			last = fmt.Sprintf("the last match is request %d", inst.matchID)
		}
		return &abi.Error{Code: abi.CodeStaleMatch, Msg: fmt.Sprintf("match request %d is not the instance's last match (%s)", m.MatchID, last)}
	case uint64(m.Tokens) > uint64(len(inst.matchTok)) || uint64(m.Slots) > uint64(len(inst.matchIdx)):
		return &abi.Error{Code: abi.CodeStaleMatch, Msg: fmt.Sprintf("match request %d has %d tokens and %d slots; %d and %d asked for",
			m.MatchID, len(inst.matchTok), len(inst.matchIdx), m.Tokens, m.Slots)}
	}
	p.Tokens = nil
	if m.Tokens > 0 {
		// The tree's last Match read these tokens in this buffer, which
		// the instance has owned since: the insert may skip comparing
		// what the match compared (core checks the tree is unchanged).
		p.Tokens, p.AfterMatch = inst.matchTok[:m.Tokens], true
	}
	if k := int(m.Slots); k > 0 {
		// The codec decoded the sent slots k entries into the request's
		// buffer when it had room: put the match's before them there.
		// Sent slots read in place go after the match's in the
		// instance's own buffer when the insert takes all of them (what
		// is written lies past the kept indices). Otherwise join both in
		// a buffer of their own.
		n := len(p.Slots)
		if q.Views()&abi.ViewSlots != 0 && k == len(inst.matchIdx) {
			p.Slots = append(inst.matchIdx, p.Slots...)
			inst.matchIdx = p.Slots[:k]
			// Still the buffer the tree's Match wrote them to (unless the
			// append moved them, which core sees): the tree need not
			// check them again.
			p.MatchedSlots = k
		} else if full := d.slots[:cap(d.slots)]; n > 0 && k+n <= len(full) && &full[k] == &p.Slots[0] {
			p.Slots = full[:k+n]
			copy(p.Slots, inst.matchIdx[:k])
		} else {
			d.cat = append(append(d.cat[:0], inst.matchIdx[:k]...), p.Slots...)
			p.Slots = d.cat
		}
	}
	return nil
}

func (d *Dispatcher) create(q *abi.Request, r *abi.Response) error {
	if d.last == math.MaxUint32 {
		return &abi.Error{Code: abi.CodeExhausted, Msg: "all 2^32-1 instance handles were issued"}
	}
	cfg := q.Config
	cfg.Components = append([]core.Component(nil), cfg.Components...)
	t, err := core.New(cfg)
	if err != nil {
		return err
	}
	d.last++
	h := d.last
	inst := &instance{tree: t, tag: Tag(h)}
	d.trees[h] = inst
	r.Tag = inst.tag
	r.Handle, r.Root, r.PageSize, r.CompSet, r.Policy = h, t.Root(), uint32(t.PageSize()), t.Components(), t.Policy()
	return nil
}

// runHost runs the host-tier, storage and linker ops. It reports false
// for any other op.
func (d *Dispatcher) runHost(t *core.Tree, tag uint32, q *abi.Request, r *abi.Response) (bool, error) {
	node := abi.TagID(q.Node, tag)
	switch q.Op {
	case abi.OpHostLock:
		rc, err := t.HostLock(node)
		r.Receipt = rc
		return true, nodeErr(err, q.Node)
	case abi.OpHostUnlock:
		rc := q.Receipt
		rc.Node = abi.TagID(rc.Node, tag)
		return true, nodeErr(t.HostUnlock(node, rc), q.Node)
	case abi.OpBackupSpec:
		spec, err := t.BackupSpec(node)
		r.Spec = spec
		return true, nodeErr(err, q.Node)
	case abi.OpCommitBackup:
		return true, nodeErr(t.CommitBackup(node, q.Backup), q.Node)
	case abi.OpMarkWriteThroughPending:
		untag(q.Nodes, tag)
		ids, err := t.MarkWriteThroughPending(q.Nodes, q.Ack)
		r.Nodes = ids
		return true, err
	case abi.OpFinishWriteThrough:
		untag(q.Nodes, tag)
		return true, t.FinishWriteThrough(q.Nodes, q.Ack)
	case abi.OpDemote:
		acts, err := t.Demote(node)
		r.Actions = acts
		return true, nodeErr(err, q.Node)
	case abi.OpDropSubtreeNoHost:
		dropped, acts, err := t.DropSubtreeNoHost(node)
		r.Dropped, r.Actions = dropped, acts
		return true, nodeErr(err, q.Node)
	case abi.OpLoadBack:
		plan, err := t.LoadBackPlan(node)
		r.Plan = plan
		return true, nodeErr(err, q.Node)
	case abi.OpCommitLoadBack:
		acts, err := t.CommitLoadBack(node, q.LoadBack)
		r.Actions = acts
		return true, nodeErr(err, q.Node)
	case abi.OpFinishLoadBack:
		return true, nodeErr(t.FinishLoadBack(node), q.Node)
	case abi.OpInsertHost:
		res, acts, err := t.InsertHost(node, q.Insert.Namespace, q.Insert.Tokens, q.Insert.Slots)
		r.InsertHost, r.Actions = res, acts
		return true, nodeErr(err, q.Node)
	case abi.OpEvictHost:
		want, err := wantOf(q.Want)
		if err != nil {
			return true, err
		}
		acts, freed, err := t.EvictHost(q.Component, want, d.acts[:0])
		if cap(acts) > cap(d.acts) {
			d.acts = acts[:0]
		}
		r.Actions, r.Freed = acts, int64(freed)
		return true, err
	case abi.OpStorageSpec:
		spec, err := t.StorageSpec(node)
		r.Storage = spec
		return true, nodeErr(err, q.Node)
	case abi.OpBackfillHashes:
		r.Hashed = uint32(t.BackfillHashes())
		return true, nil
	case abi.OpLinkerChain:
		ids, err := t.LinkerChain(node)
		r.Nodes = ids
		return true, nodeErr(err, q.Node)
	case abi.OpMarkLinkerPending:
		untag(q.Nodes, tag)
		return true, t.MarkLinkerPending(q.Nodes, q.OffloadID)
	case abi.OpFinishLinkerOffload:
		untag(q.Nodes, tag)
		return true, t.FinishLinkerOffload(q.Nodes, q.OffloadID, q.OK)
	case abi.OpMarkLinkerStoredPath:
		return true, t.MarkLinkerStoredPath(node, abi.TagID(q.Until, tag))
	case abi.OpProtect:
		p, err := t.Protect(q.Insert.Namespace, q.Insert.Tokens)
		r.Protection = p
		return true, err
	case abi.OpUnprotect:
		return true, t.Unprotect(q.Serial)
	}
	return false, nil
}

// untag converts the ids of a request's list to core form, in place.
func untag(ids []core.NodeID, tag uint32) {
	for i, id := range ids {
		ids[i] = abi.TagID(id, tag)
	}
}

// wantOf converts an eviction amount to the platform int (core checks
// its sign).
func wantOf(w int64) (int, error) {
	if int64(int(w)) != w {
		return 0, fmt.Errorf("%w: evict want %d does not fit this platform's int", core.ErrInvalidArgument, w)
	}
	return int(w), nil
}

// nodeErr prefixes a stale-node error with the id as the host sent it
// (core's message names the id in core form).
func nodeErr(err error, wire core.NodeID) error {
	if err != nil && errors.Is(err, core.ErrStaleNode) {
		return fmt.Errorf("node 0x%016x: %w", uint64(wire), err)
	}
	return err
}

// runSnapshot runs the snapshot index ops on inst's index.
func runSnapshot(inst *instance, q *abi.Request, r *abi.Response) error {
	sq, res := &q.Snap, &r.Snap
	if q.Op == abi.OpSnapshotConfigure {
		cfg := sq.Config
		if cfg.Marconi != nil {
			m := *cfg.Marconi
			cfg.Marconi = &m
		}
		x, err := ssm.New(cfg)
		if err != nil {
			return err
		}
		inst.snap, inst.snapCfg = x, cfg
		if inst.blocks != nil {
			inst.blocks.UseSnapshots(x)
		}
		return nil
	}
	x, err := inst.index()
	if err != nil {
		return err
	}
	switch q.Op {
	case abi.OpSnapshotLookup:
		res.Match, err = x.Lookup(sq.Tokens, int(sq.Matched), sq.Session, sq.Adapter)
	case abi.OpSnapshotInsert:
		switch sq.Kind {
		case ssm.Tail:
			res.Displaced, err = x.InsertTail(sq.Tokens, sq.Adapter, sq.Slot, sq.Session)
		case ssm.Sibling:
			res.Displaced, err = x.InsertSibling(sq.Tokens, sq.Adapter, sq.Slot, sq.Session)
		default:
			res.Displaced, err = x.Insert(sq.Tokens, sq.Adapter, sq.Slot, sq.Session)
		}
	case abi.OpSnapshotEvict:
		if sq.ToTier {
			res.Evict, res.Evicted, err = x.EvictToTier(int(sq.MinTokens))
		} else {
			var slot int32
			slot, res.Evicted = x.EvictLRU()
			res.Evict = ssm.TierEvict{Slot: slot}
		}
	case abi.OpSnapshotPromote:
		err = x.Promote(sq.Key, sq.Adapter, sq.Slot, sq.Session)
	case abi.OpSnapshotForget:
		err = x.Forget(sq.Key, sq.Adapter)
	case abi.OpSnapshotEndSession:
		res.Displaced, err = x.EndSession(sq.Session)
	case abi.OpSnapshotStats:
		res.Stats, res.Alpha = x.Stats(), x.Alpha()
	}
	return err
}

// index returns inst's snapshot index, making it on first use.
func (inst *instance) index() (*ssm.Index, error) {
	if inst.snap == nil {
		x, err := ssm.New(inst.snapCfg)
		if err != nil { // unreachable: the configuration was accepted before
			return nil, err
		}
		inst.snap = x
	}
	return inst.snap, nil
}

// runBlocks runs the block-cache ops on inst's block cache.
func runBlocks(inst *instance, q *abi.Request, r *abi.Response) error {
	bq, res := &q.Blocks, &r.Blocks
	x, err := inst.index()
	if err != nil {
		return err
	}
	if q.Op == abi.OpBlocksConfigure {
		cfg := blockcache.Config{BlockSize: int(bq.BlockSize), SubBlockTail: bq.SubBlockTail}
		c, err := blockcache.New(cfg)
		if err != nil {
			return err
		}
		c.UseSnapshots(x)
		inst.blocks, inst.blocksCfg = c, cfg
		return nil
	}
	if inst.blocks == nil {
		cfg := inst.blocksCfg
		if cfg.BlockSize == 0 {
			cfg.BlockSize = inst.tree.PageSize()
		}
		c, err := blockcache.New(cfg)
		if err != nil { // unreachable: page sizes are positive
			return err
		}
		c.UseSnapshots(x)
		inst.blocks = c
	}
	c := inst.blocks
	switch q.Op {
	case abi.OpBlocksLookup:
		res.Match, err = c.Lookup(bq.Tokens, bq.Session, bq.Adapter)
	case abi.OpBlocksPeek:
		res.Match.MatchedTokens = c.Peek(bq.Tokens, bq.Adapter)
	case abi.OpBlocksInsert:
		res.Acquired, err = c.Insert(bq.Tokens, bq.Table, bq.Disks, int(bq.Matched), bq.Adapter)
	case abi.OpBlocksRelease:
		if bq.Matched == -1 {
			err = c.Release(bq.Tokens, bq.Adapter)
		} else {
			err = c.ReleaseMatched(bq.Tokens, int(bq.Matched), bq.Adapter)
		}
	case abi.OpBlocksEvict:
		if bq.Want < 0 {
			return fmt.Errorf("%w: evict want %d is negative", blockcache.ErrInvalidArgument, bq.Want)
		}
		res.Evicted = c.Evict(int(bq.Want))
	case abi.OpBlocksStats:
		res.Stats = c.Stats()
		res.Stats.Snapshots = ssm.Stats{}
	}
	return err
}
