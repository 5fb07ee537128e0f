package abi

import (
	"github.com/radixkv/radixkv/core"
)

// AppendRequest appends the wire form of q to dst.
func AppendRequest(dst []byte, q *Request) []byte {
	b := putU32(dst, RequestMagic)
	b = putU16(b, Version)
	b = putU16(b, uint16(q.Op))
	b = putU32(b, q.Instance)
	b = putU32(b, 0) // flags
	b = putU64(b, q.ID)
	switch q.Op {
	case OpCreate:
		c := &q.Config
		b = putU32(b, uint32(c.PageSize))
		b = putU8(b, uint8(len(c.Components)))
		for _, comp := range c.Components {
			b = putU8(b, uint8(comp))
		}
		b = putStr(b, c.Policy)
		b = putBool(b, c.Bigram)
		b = putBool(b, c.HostTier)
		b = putU8(b, uint8(c.WritePolicy))
		b = putI32(b, int32(c.WriteThroughThreshold))
		b = putBool(b, c.KVEvents)
		b = putU8(b, uint8(c.HashConvention))
		b = putI32(b, int32(c.SWAWindow))
		b = putI32(b, int32(c.MambaChunkSize))
		b = putI32(b, int32(c.MambaMaxPathStates))
		b = putBool(b, c.ExternalLinker)
		b = putStr(b, c.MambaPolicy)
		md := c.MambaModel
		for _, v := range []int{md.SSMLayers, md.AttnLayers, md.MLPLayers, md.D, md.N} {
			b = putI32(b, int32(v))
		}
		b = putF64(b, c.MambaAlpha)
	case OpMatch, OpProtect:
		b = putNamespace(b, q.Insert.Namespace)
		b = putU32s(b, q.Insert.Tokens)
	case OpUnprotect:
		b = putU64(b, q.Serial)
	case OpInsert, OpBeginInsert:
		p := &q.Insert
		b = putNamespace(b, p.Namespace)
		b = putU32s(b, p.Tokens)
		b = putI32s(b, p.Slots)
		b = putInsertTail(b, p)
	case OpBeginInsertMatched:
		b = appendMatchedRequest(b, q)
	case OpBeginInsertMatchedUnlock:
		b = appendMatchedUnlockRequest(b, q)
	case OpMatchLock:
		b = putNamespace(b, q.Insert.Namespace)
		b = putU32s(b, q.Insert.Tokens)
		b = putU8(b, uint8(q.Skip))
	case OpLock:
		b = putID(b, q.Node, 0)
		b = putU8(b, uint8(q.Skip))
	case OpUnlock:
		b = putID(b, q.Node, 0)
		b = putReceipt(b, &q.Receipt, 0)
		b = putBool(b, q.SkipSWA)
	case OpUnlockSWAEarly, OpHostUnlock:
		b = putID(b, q.Node, 0)
		b = putReceipt(b, &q.Receipt, 0)
	case OpMambaSetAlpha:
		b = putF64(b, q.Alpha)
	case OpEvict, OpEvictStart, OpEvictHost:
		b = putU8(b, uint8(q.Component))
		b = putI64(b, q.Want)
	case OpLRUOrder:
		b = putU8(b, uint8(q.Component))
		b = putBool(b, q.Host)
	case OpInspect, OpEvictExcessPathStates, OpHostLock, OpBackupSpec, OpDemote, OpDropSubtreeNoHost,
		OpLoadBack, OpFinishLoadBack, OpStorageSpec, OpLinkerChain:
		b = putID(b, q.Node, 0)
	case OpDFSOrder:
		b = putIDs(b, q.Nodes, 0)
	case OpCommitBackup:
		c := &q.Backup
		b = putID(b, q.Node, 0)
		b = putOptI32s(b, c.Full)
		b = putSlotLists(b, c.SWA)
		b = putI32(b, c.Mamba)
	case OpMarkWriteThroughPending, OpFinishWriteThrough:
		b = putIDs(b, q.Nodes, 0)
		b = putI64(b, q.Ack)
	case OpCommitLoadBack:
		c := &q.LoadBack
		b = putID(b, q.Node, 0)
		b = putSlotLists(b, c.Full)
		b = putSlotLists(b, c.SWA)
		b = putI32(b, c.Mamba)
	case OpInsertHost:
		b = putID(b, q.Node, 0)
		b = putNamespace(b, q.Insert.Namespace)
		b = putU32s(b, q.Insert.Tokens)
		b = putI32s(b, q.Insert.Slots)
	case OpMarkLinkerPending:
		b = putIDs(b, q.Nodes, 0)
		b = putI64(b, q.OffloadID)
	case OpFinishLinkerOffload:
		b = putIDs(b, q.Nodes, 0)
		b = putI64(b, q.OffloadID)
		b = putBool(b, q.OK)
	case OpMarkLinkerStoredPath:
		b = putID(b, q.Node, 0)
		b = putID(b, q.Until, 0)
	case OpSanityCheckOngoing:
		b = putOptIDs(b, q.Ongoing.WriteThrough, 0)
		b = putOptIDs(b, q.Ongoing.LoadBack, 0)
	default:
		if q.Op.IsSnapshotOp() {
			b = appendSnapshotRequest(b, q.Op, &q.Snap)
		} else if q.Op.IsBlocksOp() {
			b = appendBlocksRequest(b, q.Op, &q.Blocks)
		}
	}
	return b
}

func putNamespace(b []byte, ns core.Namespace) []byte {
	b = putStr(b, ns.ExtraKey)
	b = putStr(b, ns.CacheSalt)
	return putStr(b, ns.LoRA)
}

// namespaceInto decodes a namespace into ns, which is zero. A string
// equal to prev's (the namespace the request decoded into held before;
// nil: none) is reused rather than allocated again: a host's requests
// mostly come in one namespace, most often the empty one, whose three
// zero lengths are checked at once.
func (r *reader) namespaceInto(ns, prev *core.Namespace) {
	if r.err == nil && len(r.b)-r.off >= 12 && le.Uint64(r.b[r.off:]) == 0 && le.Uint32(r.b[r.off+8:]) == 0 {
		r.off += 12
		return
	}
	var e, c, l string
	if p := prev; p != nil {
		e, c, l = p.ExtraKey, p.CacheSalt, p.LoRA
	}
	ns.ExtraKey = r.strLike("namespace.extra_key", e)
	ns.CacheSalt = r.strLike("namespace.cache_salt", c)
	ns.LoRA = r.strLike("namespace.lora", l)
}

// ReceiptSize is the wire size of a receipt.
const ReceiptSize = 42

// putReceipt writes the receipt's fields in place after one length
// check.
func putReceipt(b []byte, rc *core.Receipt, tag uint32) []byte {
	var f []byte
	b, f = extend(b, ReceiptSize)
	f = f[:ReceiptSize]
	le.PutUint64(f[0:], uint64(tagID(rc.Node, tag)))
	le.PutUint64(f[8:], rc.Serial)
	le.PutUint64(f[16:], uint64(int64(rc.Delta)))
	le.PutUint64(f[24:], uint64(rc.SWAUUID))
	le.PutUint64(f[32:], uint64(rc.SWAHostUUID))
	f[40], f[41] = uint8(rc.Skipped), boolByte(rc.Host)
	return b
}

// receiptInto decodes a receipt into rc: in place when all of it is
// there and well formed, else field by field (which names the failure).
func (r *reader) receiptInto(rc *core.Receipt) {
	if f := r.b[min(r.off, len(r.b)):]; r.err == nil && len(f) >= ReceiptSize && f[41] <= 1 {
		f = f[:ReceiptSize]
		rc.Node = core.NodeID(le.Uint64(f[0:]))
		rc.Serial = le.Uint64(f[8:])
		rc.Delta = int(int64(le.Uint64(f[16:])))
		rc.SWAUUID = int64(le.Uint64(f[24:]))
		rc.SWAHostUUID = int64(le.Uint64(f[32:]))
		rc.Skipped, rc.Host = core.ComponentSet(f[40]), f[41] == 1
		r.off += ReceiptSize
		return
	}
	rc.Node = core.NodeID(r.u64("receipt.node"))
	rc.Serial = r.u64("receipt.serial")
	rc.Delta = int(r.i64("receipt.delta"))
	rc.SWAUUID = r.i64("receipt.swa_uuid")
	rc.SWAHostUUID = r.i64("receipt.swa_host_uuid")
	rc.Skipped = core.ComponentSet(r.u8("receipt.skipped"))
	rc.Host = r.boolean("receipt.host")
}

// receipt is receiptInto for a receipt of its own.
func (r *reader) receipt() core.Receipt {
	var rc core.Receipt
	r.receiptInto(&rc)
	return rc
}

// DecodeRequest decodes b into q, reusing the capacity of q's Tokens,
// Slots, Nodes and Config.Components slices (an empty array decodes as
// nil, so a caller that wants to keep its scratch holds it separately). On failure it
// returns an *Error whose Code is the wire code; the header fields of q
// (Op, Instance, ID) are set whenever the header could be read, so that a
// response can echo them.
func DecodeRequest(q *Request, b []byte) error { return decodeRequest(q, b, nil) }

func decodeRequest(q *Request, b []byte, v WordViewer) error {
	toks, slots, nodes, comps := q.Insert.Tokens[:0], q.Insert.Slots[:0], q.Nodes[:0], q.Config.Components[:0]
	// A view of an earlier request is no buffer to decode into.
	if startsAt(toks, q.viewTok) {
		toks = nil
	}
	if startsAt(slots, q.viewSlot) {
		slots = nil
	}
	prevNS := q.Insert.Namespace
	resetRequest(q)
	if len(b) < RequestHeaderSize {
		return errorf(CodeTruncated, "request of %d bytes is shorter than the %d-byte header", len(b), RequestHeaderSize)
	}
	// The header's length is checked: read it in place rather than field
	// by field through the reader.
	h := b[:RequestHeaderSize]
	magic, version, flags := le.Uint32(h[0:]), le.Uint16(h[4:]), le.Uint32(h[12:])
	q.Op, q.Instance, q.ID = Op(le.Uint16(h[6:])), le.Uint32(h[8:]), le.Uint64(h[16:])
	r := reader{b: b, off: RequestHeaderSize, view: v}
	switch {
	case magic != RequestMagic:
		return errorf(CodeBadMagic, "magic 0x%08x is not the request magic 0x%08x (\"RKVQ\")", magic, RequestMagic)
	case version != Version:
		return errorf(CodeBadVersion, "request version %d, this guest speaks version %d", version, Version)
	case flags != 0:
		return errorf(CodeMalformed, "header flags 0x%08x must be 0 in version %d", flags, Version)
	case !q.Op.Known():
		return errorf(CodeUnknownOp, "op 0x%04x is not defined in version %d", uint16(q.Op), Version)
	case !q.Op.NeedsInstance() && q.Instance != 0:
		return errorf(CodeMalformed, "%s takes instance 0, got %d", q.Op, q.Instance)
	case q.Op.NeedsInstance() && q.Instance == 0:
		return errorf(CodeUnknownInstance, "%s needs an instance handle; 0 is never issued", q.Op)
	}
	switch q.Op {
	case OpCreate:
		c := &q.Config
		c.PageSize = int(r.u32("page_size"))
		n := int(r.u8("component count"))
		raw := r.take("components", n)
		for _, v := range raw {
			comps = append(comps, core.Component(v))
		}
		if len(comps) > 0 {
			c.Components = comps
		}
		c.Policy = r.str("policy")
		c.Bigram = r.boolean("bigram")
		c.HostTier = r.boolean("host_tier")
		c.WritePolicy = core.WritePolicy(r.u8("write_policy"))
		c.WriteThroughThreshold = int(r.i32("write_through_threshold"))
		c.KVEvents = r.boolean("kv_events")
		c.HashConvention = core.HashConvention(r.u8("hash_convention"))
		c.SWAWindow = int(r.i32("swa_window"))
		c.MambaChunkSize = int(r.i32("mamba_chunk_size"))
		c.MambaMaxPathStates = int(r.i32("mamba_max_path_states"))
		c.ExternalLinker = r.boolean("external_linker")
		c.MambaPolicy = r.str("mamba_policy")
		md := &c.MambaModel
		md.SSMLayers, md.AttnLayers, md.MLPLayers = int(r.i32("mamba_ssm_layers")), int(r.i32("mamba_attn_layers")), int(r.i32("mamba_mlp_layers"))
		md.D, md.N = int(r.i32("mamba_d")), int(r.i32("mamba_n"))
		c.MambaAlpha = r.f64("mamba_alpha")
	case OpMatch:
		r.namespaceInto(&q.Insert.Namespace, &prevNS)
		q.Insert.Tokens = r.tokensIn(q, toks)
	case OpProtect:
		r.namespaceInto(&q.Insert.Namespace, &prevNS)
		q.Insert.Tokens = r.u32s("tokens", toks)
	case OpUnprotect:
		q.Serial = r.u64("serial")
	case OpInsert, OpBeginInsert:
		p := &q.Insert
		r.namespaceInto(&p.Namespace, &prevNS)
		p.Tokens = r.tokensIn(q, toks)
		p.Slots = r.slotsIn(q, slots)
		decodeInsertTail(&r, p)
	case OpBeginInsertMatched:
		decodeMatchedRequest(&r, q, slots, &prevNS)
	case OpBeginInsertMatchedUnlock:
		decodeMatchedUnlockRequest(&r, q, slots, &prevNS)
	case OpMatchLock:
		r.namespaceInto(&q.Insert.Namespace, &prevNS)
		q.Insert.Tokens = r.tokensIn(q, toks)
		q.Skip = core.ComponentSet(r.u8("skip"))
	case OpLock:
		q.Node = core.NodeID(r.u64("node"))
		q.Skip = core.ComponentSet(r.u8("skip"))
	case OpUnlock:
		q.Node = core.NodeID(r.u64("node"))
		r.receiptInto(&q.Receipt)
		q.SkipSWA = r.boolean("skip_swa")
	case OpUnlockSWAEarly, OpHostUnlock:
		q.Node = core.NodeID(r.u64("node"))
		r.receiptInto(&q.Receipt)
	case OpMambaSetAlpha:
		q.Alpha = r.f64("alpha")
	case OpEvict, OpEvictStart, OpEvictHost:
		q.Component = core.Component(r.u8("component"))
		q.Want = r.i64("want")
	case OpLRUOrder:
		q.Component = core.Component(r.u8("component"))
		q.Host = r.boolean("host")
	case OpInspect, OpEvictExcessPathStates, OpHostLock, OpBackupSpec, OpDemote, OpDropSubtreeNoHost,
		OpStorageSpec, OpLinkerChain:
		q.Node = core.NodeID(r.u64("node"))
	case OpLoadBack, OpFinishLoadBack:
		q.Node = core.NodeID(r.u64("anchor"))
	case OpDFSOrder:
		q.Nodes = r.ids("ids", nodes)
	case OpCommitBackup:
		q.Node = core.NodeID(r.u64("node"))
		q.Backup.Full = r.optI32s("full")
		q.Backup.SWA = r.slotLists("swa")
		q.Backup.Mamba = r.i32("mamba")
	case OpMarkWriteThroughPending, OpFinishWriteThrough:
		q.Nodes = r.ids("nodes", nodes)
		q.Ack = r.i64("ack")
	case OpCommitLoadBack:
		q.Node = core.NodeID(r.u64("anchor"))
		q.LoadBack.Full = r.slotLists("full")
		q.LoadBack.SWA = r.slotLists("swa")
		q.LoadBack.Mamba = r.i32("mamba")
	case OpInsertHost:
		q.Node = core.NodeID(r.u64("anchor"))
		r.namespaceInto(&q.Insert.Namespace, &prevNS)
		q.Insert.Tokens = r.u32s("tokens", toks)
		q.Insert.Slots = r.i32s("host_slots", slots)
	case OpMarkLinkerPending:
		q.Nodes = r.ids("nodes", nodes)
		q.OffloadID = r.i64("offload_id")
	case OpFinishLinkerOffload:
		q.Nodes = r.ids("nodes", nodes)
		q.OffloadID = r.i64("offload_id")
		q.OK = r.boolean("ok")
	case OpMarkLinkerStoredPath:
		q.Node = core.NodeID(r.u64("from"))
		q.Until = core.NodeID(r.u64("until"))
	case OpSanityCheckOngoing:
		q.Ongoing.WriteThrough = r.optIDs("write_through")
		q.Ongoing.LoadBack = r.optIDs("load_back")
	default:
		if q.Op.IsSnapshotOp() {
			decodeSnapshotRequest(&r, q.Op, &q.Snap, toks)
		} else if q.Op.IsBlocksOp() {
			decodeBlocksRequest(&r, q.Op, &q.Blocks, toks)
		}
	}
	r.end()
	if r.err != nil {
		return r.err
	}
	return nil
}

// namespace is namespaceInto for a namespace of its own.
func (r *reader) namespace() core.Namespace {
	var ns core.Namespace
	r.namespaceInto(&ns, nil)
	return ns
}
