package abi

import "github.com/radixkv/radixkv/core"

// OpMatchLock is match followed by lock of the match's LastDevice node
// with the skip set the request names, in one call (SPEC.md §4.3.2). A
// serving loop locks every match it takes on arrival, so this spares a
// round trip per request. The tree changes exactly as the two calls
// change it: a failed match locks nothing; when the lock fails, the
// match (its tick updates and the kept match of §4.3.1) stands and the
// response is the lock's error, carrying the match's actions.
const OpMatchLock Op = 0x0081

func init() {
	registerOp(OpMatchLock, "match_lock")
}

// OpBeginInsertMatchedUnlock is begin_insert_matched followed, when the
// insert completes in that one step, by unlock of the node and receipt
// the request names (SPEC.md §4.4.2): a serving loop's finish, which
// inserts what it computed and releases the lock it took on arrival, in
// one round trip. A suspended insert unlocks nothing; the host resumes
// it and unlocks as before.
const OpBeginInsertMatchedUnlock Op = 0x0082

func init() {
	registerOp(OpBeginInsertMatchedUnlock, "begin_insert_matched_unlock")
}

// UnlockOutcome reports begin_insert_matched_unlock's unlock. The insert's
// outcome is the response's; the unlock's is reported beside it, because
// an insert that completed stands even when the unlock is refused, and
// the host needs its result either way.
type UnlockOutcome struct {
	// Released is set when the lock was released; Code and Message are
	// the unlock's error when it was tried and refused. Neither: the
	// insert is suspended and nothing was tried.
	Released bool
	Code     Code
	Message  string
}

// appendMatchedUnlockRequest appends begin_insert_matched_unlock's body:
// begin_insert_matched's, then unlock's.
func appendMatchedUnlockRequest(b []byte, q *Request) []byte {
	b = appendMatchedRequest(b, q)
	b = putID(b, q.Node, 0)
	b = putReceipt(b, &q.Receipt, 0)
	return putBool(b, q.SkipSWA)
}

// decodeMatchedUnlockRequest decodes what appendMatchedUnlockRequest
// encodes.
func decodeMatchedUnlockRequest(r *reader, q *Request, slots []int32, prevNS *core.Namespace) {
	decodeMatchedRequest(r, q, slots, prevNS)
	q.Node = core.NodeID(r.u64("node"))
	r.receiptInto(&q.Receipt)
	q.SkipSWA = r.boolean("skip_swa")
}

func putUnlockOutcome(b []byte, u *UnlockOutcome) []byte {
	b = putBool(b, u.Released)
	b = putU16(b, uint16(u.Code))
	return putStr(b, u.Message)
}

func (r *reader) unlockOutcome() UnlockOutcome {
	return UnlockOutcome{Released: r.boolean("unlocked"), Code: Code(r.u16("unlock_code")), Message: r.str("unlock_message")}
}
