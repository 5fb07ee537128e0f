package snapshot

import "errors"

// Errors returned by the index, wrapped with a message naming the value;
// match them with errors.Is. A call that returns an error changed nothing.
var (
	// ErrInvalidConfig reports a Config that New refuses.
	ErrInvalidConfig = errors.New("snapshot: invalid config")
	// ErrInvalidArgument reports a malformed argument (empty key, negative
	// slot, matched length outside the tokens).
	ErrInvalidArgument = errors.New("snapshot: invalid argument")
	// ErrUnknownKey reports a tier key with no entry.
	ErrUnknownKey = errors.New("snapshot: unknown key")
	// ErrUnknownSession reports a session that owns no entry and holds no lease.
	ErrUnknownSession = errors.New("snapshot: unknown session")
	// ErrWrongAdapter reports a key whose entry belongs to another adapter.
	ErrWrongAdapter = errors.New("snapshot: key belongs to another adapter")
	// ErrResident reports a tier operation (promote, forget) on an entry
	// that is resident, not spilled.
	ErrResident = errors.New("snapshot: entry is resident, not tiered")
	// ErrSlotInUse reports a slot that a different resident entry holds.
	ErrSlotInUse = errors.New("snapshot: slot held by another entry")
	// ErrSanity reports a violated invariant found by Check.
	ErrSanity = errors.New("snapshot: sanity check failed")
)
