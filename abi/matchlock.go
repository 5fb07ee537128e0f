package abi

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
