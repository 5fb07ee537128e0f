package abi

import "github.com/radixkv/radixkv/core"

// OpBeginInsertMatched is begin_insert whose tokens, and the first slots,
// are not sent again: they are taken from the instance's last match,
// which the guest keeps (SPEC.md §4.3.1). A request's tokens are the bulk
// of the bytes a host sends, and a serving loop inserts the tokens it
// matched on arrival, so this spares an encode and a decode of each.
const OpBeginInsertMatched Op = 0x0080

// CodeStaleMatch answers begin_insert_matched when the match it names is
// not the instance's last match (another match, a reset or a failed
// match came since) or holds fewer tokens or slots than it asks for. The
// host sends the insert in full instead; nothing changed.
const CodeStaleMatch Code = 10

func init() {
	registerOp(OpBeginInsertMatched, "begin_insert_matched")
	codeNames[CodeStaleMatch] = "stale_match"
}

// MatchedRef is begin_insert_matched's reference to the instance's last
// match: the insert's tokens are the first Tokens of that match's tokens
// and its first Slots slots are the first Slots indices of its result.
type MatchedRef struct {
	MatchID uint64 // the request id of the match
	Tokens  uint32
	Slots   uint32
}

// appendMatchedRequest appends begin_insert_matched's body. q.Insert.Slots
// holds the slots after the Matched.Slots taken from the match;
// q.Insert.Tokens is not sent (the match's are used).
func appendMatchedRequest(b []byte, q *Request) []byte {
	p, m := &q.Insert, &q.Matched
	b = putU64(b, m.MatchID)
	b = putNamespace(b, p.Namespace)
	b = putU32(b, m.Tokens)
	b = putU32(b, m.Slots)
	b = putI32s(b, p.Slots)
	return putInsertTail(b, p)
}

// putInsertTail appends the insert parameters after the slots.
func putInsertTail(b []byte, p *core.InsertParams) []byte {
	b = putI32(b, int32(p.PrevPrefixLen))
	b = putI64(b, p.Priority)
	b = putBool(b, p.Chunked)
	b = putBool(b, p.TrackAdopted)
	b = putStr(b, p.SessionID)
	b = putI32(b, int32(p.SWAEvictedSeqlen))
	b = putI32(b, int32(p.SWABranchingSeqlen))
	return putI32(b, p.MambaSlot)
}

// decodeMatchedRequest decodes what appendMatchedRequest encodes;
// Insert.Tokens stays nil. When the reused slot buffer has room for
// slot_prefix entries before the sent slots, they are decoded at that
// offset of it, leaving the entries before it as they were: the
// dispatcher then writes the match's slots there and hands core the
// whole run without moving the sent ones (otherwise they go to the
// buffer's start, as any array does).
func decodeMatchedRequest(r *reader, q *Request, slots []int32, prevNS *core.Namespace) {
	p, m := &q.Insert, &q.Matched
	m.MatchID = r.u64("match_id")
	r.namespaceInto(&p.Namespace, prevNS)
	m.Tokens = r.u32("token_count")
	m.Slots = r.u32("slot_prefix")
	if m.Slots == 0 || r.view != nil {
		// In place, where the reader views requests: the dispatcher
		// puts the match's slots before them in a buffer of its own.
		p.Slots = r.slotsIn(q, slots)
	} else if k, n := uint64(m.Slots), r.peekCount(); n > 0 && k+n <= uint64(cap(slots)) {
		p.Slots = r.i32s("slots", slots[k:k:cap(slots)])
	} else {
		p.Slots = r.i32s("slots", slots)
	}
	decodeInsertTail(r, p)
}

// decodeInsertTail decodes what putInsertTail encodes.
func decodeInsertTail(r *reader, p *core.InsertParams) {
	p.PrevPrefixLen = int(r.i32("prev_prefix_len"))
	p.Priority = r.i64("priority")
	p.Chunked = r.boolean("chunked")
	p.TrackAdopted = r.boolean("track_adopted")
	p.SessionID = r.str("session_id")
	p.SWAEvictedSeqlen = int(r.i32("swa_evicted_seqlen"))
	p.SWABranchingSeqlen = int(r.i32("swa_branching_seqlen"))
	p.MambaSlot = r.i32("mamba_slot")
}
