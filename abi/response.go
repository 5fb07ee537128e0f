package abi

import (
	"slices"

	"github.com/radixkv/radixkv/core"
)

// AppendResponse appends the wire form of r to dst. On StatusError the
// body is Message and Actions; on StatusOK the op's result and Actions.
// Node ids are written in wire form (XORed with r.Tag, see [TagID]).
func AppendResponse(dst []byte, r *Response) []byte {
	b := AppendResponseHeader(dst, r.Op, r.Status, r.Code, r.Instance, r.ID)
	t := r.Tag
	if r.Status != StatusOK {
		b = putText(b, r.Message)
		return putActions(b, r.Actions, t)
	}
	switch r.Op {
	case OpVersion:
		b = putU32(b, r.ABIVersion)
		b = putStr(b, r.Impl)
	case OpCreate:
		b = putU32(b, r.Handle)
		b = putID(b, r.Root, t)
		b = putU32(b, r.PageSize)
		b = putU8(b, uint8(r.CompSet))
		b = putStr(b, r.Policy)
	case OpReset:
		b = putID(b, r.Root, t)
	case OpStats:
		s := &r.Stats
		var f []byte
		b, f = extend(b, 13)
		f = f[:13]
		le.PutUint64(f[0:], uint64(tagID(s.Root, t)))
		le.PutUint32(f[8:], s.PageSize)
		f[12] = uint8(s.Components)
		b = putStr(b, s.Policy)
		// The counters, flags and receipt count, written in place.
		const n = 16*NumComponents + 6
		b, f = extend(b, n)
		f = f[:n]
		for i, v := range s.Evictable {
			le.PutUint64(f[8*i:], uint64(v))
		}
		f = f[8*NumComponents:]
		for i, v := range s.Protected {
			le.PutUint64(f[8*i:], uint64(v))
		}
		f = f[8*NumComponents:]
		f[0], f[1] = boolByte(s.InsertInFlight), boolByte(s.EvictionInFlight)
		le.PutUint32(f[2:], s.LiveReceipts)
	case OpMatch, OpMatchLock:
		m := &r.Match
		b = putI32s(b, m.Indices)
		// Three ids and seven i32s, written in place.
		var f []byte
		b, f = extend(b, 52)
		f = f[:52]
		le.PutUint64(f[0:], uint64(tagID(m.LastDevice, t)))
		le.PutUint64(f[8:], uint64(tagID(m.LastHost, t)))
		le.PutUint64(f[16:], uint64(tagID(m.Best, t)))
		le.PutUint32(f[24:], uint32(int32(m.HostHitLen)))
		le.PutUint32(f[28:], uint32(int32(m.SWAHostHitLen)))
		le.PutUint32(f[32:], uint32(int32(m.SWABranchingSeqlen)))
		le.PutUint32(f[36:], uint32(int32(m.MambaHostHitLen)))
		le.PutUint32(f[40:], uint32(int32(m.MambaBranchingSeqlen)))
		le.PutUint32(f[44:], uint32(int32(m.FullKVHitLen)))
		le.PutUint32(f[48:], uint32(m.MambaSlot))
		if r.Op == OpMatchLock {
			b = putReceipt(b, &r.Receipt, t)
		}
	case OpInsert:
		b = putInsertResult(b, &r.Insert, t)
	case OpBeginInsert, OpResumeInsert, OpBeginInsertMatched, OpBeginInsertMatchedUnlock:
		b = putBool(b, r.Done)
		b = putInsertResult(b, &r.Insert, t)
		if r.Op == OpBeginInsertMatchedUnlock {
			b = putUnlockOutcome(b, &r.Unlock)
		}
	case OpLock, OpHostLock:
		b = putReceipt(b, &r.Receipt, t)
	case OpEvict, OpEvictHost:
		b = putI64(b, r.Freed)
	case OpEvictNext:
		b = putID(b, r.Node, t)
		b = putI64(b, r.Freed)
		b = putBool(b, r.Done)
	case OpInspect:
		b = putNodeInfo(b, &r.Info, t)
	case OpRender:
		b = putText(b, r.Text)
	case OpDeviceLeaves, OpNodes, OpLRUOrder, OpMarkWriteThroughPending, OpLinkerChain:
		b = putIDs(b, r.Nodes, t)
	case OpDFSOrder:
		b = putI32s(b, r.Order)
	case OpTakeEvents:
		b = putEvents(b, r.Events)
	case OpBackupSpec:
		s := &r.Spec
		b = putID(b, s.Node, t)
		b = putOptI32s(b, s.Full)
		b = putNodeSlots(b, s.SWA, t)
		b = putI32(b, s.Mamba)
	case OpDropSubtreeNoHost:
		b = putBool(b, r.Dropped)
	case OpLoadBack:
		p := &r.Plan
		b = putID(b, p.Anchor, t)
		b = putNodeSlots(b, p.Full, t)
		b = putNodeSlots(b, p.SWA, t)
		b = putI32(b, p.Mamba)
		b = putBool(b, p.Pinned)
	case OpInsertHost:
		h := &r.InsertHost
		b = putID(b, h.Node, t)
		b = putI32(b, int32(h.PrefixLen))
		b = putBool(b, h.Dropped)
	case OpStorageSpec:
		s := &r.Storage
		b = putID(b, s.Node, t)
		b = putStrs(b, s.PrefixKeys)
		b = putStrs(b, s.Full)
		b = putStrs(b, s.SWA)
		b = putStr(b, s.Mamba)
	case OpBackfillHashes:
		b = putU32(b, r.Hashed)
	case OpProtect:
		b = putU64(b, r.Protection.Serial)
		b = putI32(b, int32(r.Protection.Len))
	default:
		if r.Op.IsSnapshotOp() {
			b = appendSnapshotResult(b, r.Op, &r.Snap)
		} else if r.Op.IsBlocksOp() {
			b = appendBlocksResult(b, r.Op, &r.Blocks)
		}
	}
	return putActions(b, r.Actions, t)
}

// AppendResponseHeader appends a response header.
// It writes the fixed fields in place after one length check: each append
// is a call and a capacity check in the WebAssembly build.
func AppendResponseHeader(dst []byte, op Op, st Status, code Code, instance uint32, id uint64) []byte {
	b, h := extend(dst, ResponseHeaderSize)
	h = h[:ResponseHeaderSize]
	le.PutUint32(h[0:], ResponseMagic)
	le.PutUint16(h[4:], Version)
	le.PutUint16(h[6:], uint16(op))
	le.PutUint16(h[8:], uint16(st))
	le.PutUint16(h[10:], uint16(code))
	le.PutUint32(h[12:], instance)
	le.PutUint64(h[16:], id)
	return b
}

func putInsertResult(b []byte, ir *core.InsertResult, t uint32) []byte {
	var f []byte
	b, f = extend(b, 19)
	f = f[:19]
	le.PutUint32(f[0:], uint32(int32(ir.PrefixLen)))
	le.PutUint32(f[4:], uint32(int32(ir.TotalLen)))
	le.PutUint64(f[8:], uint64(tagID(ir.LastDevice, t)))
	f[16], f[17], f[18] = boolByte(ir.MambaExist), boolByte(ir.SWABranchInserted), boolByte(ir.Adopted != nil)
	if ir.Adopted != nil {
		b = putU8(b, uint8(len(ir.Adopted)))
		for _, rs := range ir.Adopted {
			b = putU32(b, uint32(len(rs)))
			for _, rg := range rs {
				b = putI32(b, int32(rg.Start))
				b = putI32(b, int32(rg.End))
			}
		}
	}
	return b
}

func putNodeInfo(b []byte, in *core.NodeInfo, t uint32) []byte {
	b = putID(b, in.ID, t)
	b = putID(b, in.Parent, t)
	b = putIDs(b, in.Children, t)
	b = putNamespace(b, in.Namespace)
	b = putU32s(b, in.Key)
	b = putU8(b, NumComponents)
	for c := range NumComponents {
		b = putBool(b, in.Device[c] != nil)
		b = putI32s(b, in.Device[c])
		b = putBool(b, in.Host[c] != nil)
		b = putI32s(b, in.Host[c])
		b = putU32(b, in.Lock[c])
		b = putU32(b, in.HostLock[c])
	}
	b = putI64(b, in.Hits)
	b = putI64(b, in.Priority)
	b = putI64(b, in.LastAccess)
	b = putI64(b, in.Creation)
	b = putBool(b, in.DLeaf)
	b = putI64(b, in.SWAUUID)
	b = putBool(b, in.HLeaf)
	b = putI64(b, in.WriteThroughPending)
	b = putID(b, in.PinnedBy, t)
	b = putBool(b, in.ExternalStored)
	return putI64(b, in.ExternalPending)
}

// EventMinSize is the wire size of a KV event whose arrays and strings
// are empty (the fixed part plus five counts).
const EventMinSize = 36

// putEvents appends a KV event list. Block hashes are not node ids: they
// travel as the tree computed them, untagged. The strings are the host's
// own bytes (namespace and insert fields), echoed unchanged.
func putEvents(b []byte, evs []core.Event) []byte {
	b = putU32(b, uint32(len(evs)))
	for i := range evs {
		e := &evs[i]
		b = putU8(b, uint8(e.Kind))
		b = putU8(b, uint8(e.Medium))
		b = putBool(b, e.HasParent)
		b = putU8(b, 0) // reserved
		b = putI64(b, e.ParentBlockHash)
		b = putU32(b, uint32(e.BlockSize))
		b = putI64s(b, e.BlockHashes)
		b = putU32s(b, e.TokenIDs)
		b = putStr(b, e.CacheSalt)
		b = putStr(b, e.SessionID)
		b = putStr(b, e.LoRA)
	}
	return b
}

func putI64s(b []byte, v []int64) []byte {
	b = putU32(b, uint32(len(v)))
	b, out := extend(b, 8*len(v))
	for _, x := range v {
		le.PutUint64(out, uint64(x))
		out = out[8:]
	}
	return b
}

func putActions(b []byte, acts []core.Action, t uint32) []byte {
	b = putU32(b, uint32(len(acts)))
	for i := range acts {
		a := &acts[i]
		// Kind, component, reserved, node and ack, written in place.
		var f []byte
		b, f = extend(b, 20)
		f = f[:20]
		f[0], f[1], f[2], f[3] = uint8(a.Kind), uint8(a.Component), 0, 0
		le.PutUint64(f[4:], uint64(tagID(a.Node, t)))
		le.PutUint64(f[12:], uint64(a.Ack))
		b = putIDs(b, a.Nodes, t)
		b = putI32s(b, a.Slots)
		b = putI32s(b, a.Incoming)
	}
	return b
}

// DecodeResponse decodes b into r (node ids stay in wire form; r.Tag is
// zero). It returns an *Error on a malformed response.
func DecodeResponse(r *Response, b []byte) error {
	return DecodeResponseWith(r, b, nil)
}

// Scratch holds buffers a host reuses across responses. Decoding with it,
// a response's action list and action slots, and a take_events
// response's event list with its block hashes and token ids, live in
// these buffers and stay valid until the next decode with the same
// Scratch — the same lifetime core gives its own actions. With a viewer
// (SetWordViewer) the slot lists and token ids may be views of the
// decoded bytes instead, valid while those are unchanged too. Reused buffers
// spare a host the fresh allocation (and first-touch page faults) of
// every evicted slot list.
type Scratch struct {
	acts   []core.Action
	slots  []int32
	events []core.Event
	hashes []int64
	tokens []uint32
	view   WordViewer // see SetWordViewer
	// policy is the last stats response's policy name, reused while it
	// does not change: a host asks for stats around every eviction.
	policy string
}

// reset empties s's buffers, keeping their capacity. The event list is
// cleared so that it does not keep the previous decode's strings alive.
func (s *Scratch) reset() {
	clear(s.events)
	s.acts, s.slots, s.events, s.hashes, s.tokens = s.acts[:0], s.slots[:0], s.events[:0], s.hashes[:0], s.tokens[:0]
}

// policy decodes a stats response's policy name, as the scratch's last
// one when it is the same (no allocation).
func (r *reader) policy() string {
	if r.s == nil {
		return r.str("policy")
	}
	r.s.policy = r.strLike("policy", r.s.policy)
	return r.s.policy
}

// DecodeResponseWith is DecodeResponse reusing s's buffers (s may be nil).
func DecodeResponseWith(r *Response, b []byte, s *Scratch) error {
	*r = Response{}
	if len(b) < ResponseHeaderSize {
		return errorf(CodeTruncated, "response of %d bytes is shorter than the %d-byte header", len(b), ResponseHeaderSize)
	}
	d := reader{b: b, s: s}
	if s != nil {
		s.reset()
	}
	magic := d.u32("magic")
	version := d.u16("version")
	r.Op = Op(d.u16("op"))
	r.Status = Status(d.u16("status"))
	r.Code = Code(d.u16("code"))
	r.Instance = d.u32("instance")
	r.ID = d.u64("request_id")
	switch {
	case magic != ResponseMagic:
		return errorf(CodeBadMagic, "magic 0x%08x is not the response magic 0x%08x (\"RKVS\")", magic, ResponseMagic)
	case version != Version:
		return errorf(CodeBadVersion, "response version %d, this codec speaks version %d", version, Version)
	case r.Status > StatusError:
		return errorf(CodeMalformed, "status %d is neither 0 nor 1", r.Status)
	}
	if r.Status == StatusError {
		r.Message = d.str("message")
		r.Actions = d.actions()
		d.end()
		if d.err != nil {
			return d.err
		}
		return nil
	}
	switch r.Op {
	case OpVersion:
		r.ABIVersion = d.u32("abi_version")
		r.Impl = d.str("implementation")
	case OpCreate:
		r.Handle = d.u32("instance")
		r.Root = core.NodeID(d.u64("root"))
		r.PageSize = d.u32("page_size")
		r.CompSet = core.ComponentSet(d.u8("components"))
		r.Policy = d.str("policy")
	case OpReset:
		r.Root = core.NodeID(d.u64("root"))
	case OpStats:
		s := &r.Stats
		s.Root = core.NodeID(d.u64("root"))
		s.PageSize = d.u32("page_size")
		s.Components = core.ComponentSet(d.u8("components"))
		s.Policy = d.policy()
		for i := range s.Evictable {
			s.Evictable[i] = d.i64("evictable")
		}
		for i := range s.Protected {
			s.Protected[i] = d.i64("protected")
		}
		s.InsertInFlight = d.boolean("insert_in_flight")
		s.EvictionInFlight = d.boolean("eviction_in_flight")
		s.LiveReceipts = d.u32("live_receipts")
	case OpMatch, OpMatchLock:
		m := &r.Match
		m.Indices = d.i32s("indices", nil)
		m.DeviceLen = len(m.Indices)
		d.matchFields(m)
		if r.Op == OpMatchLock {
			r.Receipt = d.receipt()
		}
	case OpInsert:
		r.Insert = d.insertResult()
	case OpBeginInsert, OpResumeInsert, OpBeginInsertMatched, OpBeginInsertMatchedUnlock:
		r.Done = d.boolean("done")
		r.Insert = d.insertResult()
		if r.Op == OpBeginInsertMatchedUnlock {
			r.Unlock = d.unlockOutcome()
		}
	case OpLock, OpHostLock:
		r.Receipt = d.receipt()
	case OpEvict, OpEvictHost:
		r.Freed = d.i64("freed")
	case OpEvictNext:
		r.Node = core.NodeID(d.u64("node"))
		r.Freed = d.i64("freed")
		r.Done = d.boolean("done")
	case OpInspect:
		r.Info = d.nodeInfo()
	case OpRender:
		r.Text = d.str("text")
	case OpDeviceLeaves, OpNodes, OpLRUOrder, OpMarkWriteThroughPending, OpLinkerChain:
		r.Nodes = d.ids("nodes", nil)
	case OpDFSOrder:
		r.Order = d.i32s("order", nil)
	case OpTakeEvents:
		r.Events = d.events()
	case OpBackupSpec:
		s := &r.Spec
		s.Node = core.NodeID(d.u64("node"))
		s.Full = d.optI32s("full")
		s.SWA = d.nodeSlots("swa")
		s.Mamba = d.i32("mamba")
	case OpDropSubtreeNoHost:
		r.Dropped = d.boolean("dropped")
	case OpLoadBack:
		p := &r.Plan
		p.Anchor = core.NodeID(d.u64("anchor"))
		p.Full = d.nodeSlots("full")
		p.SWA = d.nodeSlots("swa")
		p.Mamba = d.i32("mamba")
		p.Pinned = d.boolean("pinned")
	case OpInsertHost:
		h := &r.InsertHost
		h.Node = core.NodeID(d.u64("node"))
		h.PrefixLen = int(d.i32("prefix_len"))
		h.Dropped = d.boolean("dropped")
	case OpStorageSpec:
		s := &r.Storage
		s.Node = core.NodeID(d.u64("node"))
		s.PrefixKeys = d.strs("prefix_keys")
		s.Full = d.strs("full")
		s.SWA = d.strs("swa")
		s.Mamba = d.str("mamba")
	case OpBackfillHashes:
		r.Hashed = d.u32("hashed")
	case OpProtect:
		r.Protection.Serial = d.u64("serial")
		r.Protection.Len = int(d.i32("len"))
	default:
		if r.Op.IsSnapshotOp() {
			decodeSnapshotResult(&d, r.Op, &r.Snap)
		} else if r.Op.IsBlocksOp() {
			decodeBlocksResult(&d, r.Op, &r.Blocks)
		}
	}
	r.Actions = d.actions()
	d.end()
	if d.err != nil {
		return d.err
	}
	return nil
}

func (d *reader) insertResult() core.InsertResult {
	var ir core.InsertResult
	ir.PrefixLen = int(d.i32("prefix_len"))
	ir.TotalLen = int(d.i32("total_len"))
	ir.LastDevice = core.NodeID(d.u64("last_device"))
	ir.MambaExist = d.boolean("mamba_exist")
	ir.SWABranchInserted = d.boolean("swa_branch_inserted")
	if d.boolean("adopted_present") {
		n := int(d.u8("adopted component count"))
		ir.Adopted = make([][]core.Range, 0, n)
		for range n {
			k := d.count("adopted ranges", 8)
			var rs []core.Range
			for range k {
				rs = append(rs, core.Range{Start: int(d.i32("range.start")), End: int(d.i32("range.end"))})
			}
			ir.Adopted = append(ir.Adopted, rs)
		}
	}
	return ir
}

func (d *reader) nodeInfo() core.NodeInfo {
	var in core.NodeInfo
	in.ID = core.NodeID(d.u64("id"))
	in.Parent = core.NodeID(d.u64("parent"))
	in.Children = d.ids("children", nil)
	in.Namespace = d.namespace()
	in.Key = d.u32s("key", nil)
	if n := d.u8("component count"); n != NumComponents && d.err == nil {
		d.fail(CodeMalformed, "node info lists %d components, version %d has %d", n, Version, NumComponents)
	}
	for c := range NumComponents {
		if d.boolean("device_present") {
			in.Device[c] = d.i32s("device", nil)
			if in.Device[c] == nil {
				in.Device[c] = []int32{}
			}
		} else {
			d.i32s("device", nil)
		}
		if d.boolean("host_present") {
			in.Host[c] = d.i32s("host", nil)
			if in.Host[c] == nil {
				in.Host[c] = []int32{}
			}
		} else {
			d.i32s("host", nil)
		}
		in.Lock[c] = d.u32("lock")
		in.HostLock[c] = d.u32("host_lock")
	}
	in.Hits = d.i64("hits")
	in.Priority = d.i64("priority")
	in.LastAccess = d.i64("last_access")
	in.Creation = d.i64("creation")
	in.DLeaf = d.boolean("dleaf")
	in.SWAUUID = d.i64("swa_uuid")
	in.HLeaf = d.boolean("hleaf")
	in.WriteThroughPending = d.i64("write_through_pending")
	in.PinnedBy = core.NodeID(d.u64("pinned_by"))
	in.ExternalStored = d.boolean("external_stored")
	in.ExternalPending = d.i64("external_pending")
	return in
}

func (d *reader) actions() []core.Action {
	n := d.count("actions", ActionMinSize)
	if n == 0 {
		return nil
	}
	var acts []core.Action
	if d.s != nil {
		acts = d.s.acts[:0]
	} else {
		acts = make([]core.Action, 0, n)
	}
	for range n {
		var a core.Action
		a.Kind = core.ActionKind(d.u8("action.kind"))
		a.Component = core.Component(d.u8("action.component"))
		if v := d.u16("action.reserved"); v != 0 && d.err == nil {
			d.fail(CodeMalformed, "action reserved field %d must be 0", v)
		}
		a.Node = core.NodeID(d.u64("action.node"))
		a.Ack = d.i64("action.ack")
		a.Nodes = d.ids("action.nodes", nil)
		a.Slots = d.actionSlots("action.slots")
		a.Incoming = d.actionSlots("action.incoming")
		if d.err != nil {
			return nil
		}
		acts = append(acts, a)
	}
	if d.s != nil {
		d.s.acts = acts
	}
	return acts
}

// ActionMinSize is the wire size of an action whose arrays are empty (the
// fixed part plus three counts).
const ActionMinSize = 32

// actionSlots decodes one of an action's slot arrays, into the Scratch's
// slot buffer when there is one. An empty array decodes as nil.
func (d *reader) actionSlots(field string) []int32 {
	if d.s == nil {
		return d.i32s(field, nil)
	}
	if v, ok := d.viewI32s(field); ok {
		return v
	}
	k := len(d.s.slots)
	d.s.slots = d.appendI32s(field, d.s.slots)
	if len(d.s.slots) == k {
		return nil
	}
	return d.s.slots[k:len(d.s.slots):len(d.s.slots)]
}

// events decodes a KV event list (into the Scratch's buffers when there
// is one). Empty arrays decode as nil.
func (d *reader) events() []core.Event {
	n := d.count("events", EventMinSize)
	if n == 0 {
		return nil
	}
	var evs []core.Event
	if d.s != nil {
		evs = d.s.events[:0]
	} else {
		evs = make([]core.Event, 0, n)
	}
	for range n {
		var e core.Event
		e.Kind = core.EventKind(d.u8("event.kind"))
		e.Medium = core.Medium(d.u8("event.medium"))
		e.HasParent = d.boolean("event.has_parent")
		if v := d.u8("event.reserved"); v != 0 && d.err == nil {
			d.fail(CodeMalformed, "event reserved field %d must be 0", v)
		}
		e.ParentBlockHash = d.i64("event.parent_block_hash")
		e.BlockSize = int(d.u32("event.block_size"))
		if d.s != nil {
			k := len(d.s.hashes)
			d.s.hashes = d.appendI64s("event.block_hashes", d.s.hashes)
			if len(d.s.hashes) > k {
				e.BlockHashes = d.s.hashes[k:len(d.s.hashes):len(d.s.hashes)]
			}
			if v, ok := d.viewU32s("event.token_ids"); ok {
				e.TokenIDs = v
			} else {
				k = len(d.s.tokens)
				d.s.tokens = d.appendU32s("event.token_ids", d.s.tokens)
				if len(d.s.tokens) > k {
					e.TokenIDs = d.s.tokens[k:len(d.s.tokens):len(d.s.tokens)]
				}
			}
		} else {
			e.BlockHashes = d.appendI64s("event.block_hashes", nil)
			e.TokenIDs = d.u32s("event.token_ids", nil)
		}
		e.CacheSalt = d.str("event.cache_salt")
		e.SessionID = d.str("event.session_id")
		e.LoRA = d.str("event.lora")
		if d.err != nil {
			return nil
		}
		evs = append(evs, e)
	}
	if d.s != nil {
		d.s.events = evs
	}
	return evs
}

// appendI64s decodes an i64 array and appends it to dst.
func (r *reader) appendI64s(field string, dst []int64) []int64 {
	n := r.count(field, 8)
	b := r.take(field, 8*n)
	if n == 0 || len(b) != 8*n {
		return dst
	}
	dst = slices.Grow(dst, n)
	for i := range n {
		dst = append(dst, int64(le.Uint64(b[8*i:])))
	}
	return dst
}

// appendU32s decodes a u32 array and appends it to dst.
func (r *reader) appendU32s(field string, dst []uint32) []uint32 {
	n := r.count(field, 4)
	b := r.take(field, 4*n)
	if n == 0 || len(b) != 4*n {
		return dst
	}
	k := len(dst)
	dst = slices.Grow(dst, n)[:k+n]
	getWords(dst[k:], b)
	return dst
}

// matchFields decodes the match result's fields after its indices.
func (d *reader) matchFields(m *core.MatchResult) {
	m.LastDevice = core.NodeID(d.u64("last_device"))
	m.LastHost = core.NodeID(d.u64("last_host"))
	m.Best = core.NodeID(d.u64("best"))
	m.HostHitLen = int(d.i32("host_hit_len"))
	m.SWAHostHitLen = int(d.i32("swa_host_hit_len"))
	m.SWABranchingSeqlen = int(d.i32("swa_branching_seqlen"))
	m.MambaHostHitLen = int(d.i32("mamba_host_hit_len"))
	m.MambaBranchingSeqlen = int(d.i32("mamba_branching_seqlen"))
	m.FullKVHitLen = int(d.i32("full_kv_hit_len"))
	m.MambaSlot = d.i32("mamba_slot")
}
