package core

import "errors"

// Errors returned by the tree. Each is wrapped with a message that names the
// offending value; match them with errors.Is.
var (
	// ErrInvalidConfig reports a configuration that New refuses.
	ErrInvalidConfig = errors.New("core: invalid config")
	// ErrUnknownPolicy reports an eviction policy name that is not known.
	ErrUnknownPolicy = errors.New("core: unknown eviction policy")
	// ErrUnsupported reports a feature that this build does not provide.
	ErrUnsupported = errors.New("core: unsupported")
	// ErrInvalidArgument reports a malformed argument (lengths, slots, counts).
	ErrInvalidArgument = errors.New("core: invalid argument")
	// ErrStaleNode reports a node handle that was freed or never issued.
	ErrStaleNode = errors.New("core: stale or unknown node handle")
	// ErrReceipt reports a lock receipt that does not pair with the release
	// (wrong node, already released, or not issued by this tree).
	ErrReceipt = errors.New("core: mispaired lock receipt")
	// ErrInsertInFlight reports a second insert begun while one is suspended.
	ErrInsertInFlight = errors.New("core: concurrent insert walks")
	// ErrNoInsert reports a resume without a suspended insert.
	ErrNoInsert = errors.New("core: no in-flight insert")
	// ErrEvictionInFlight reports an eviction walk started while one runs.
	ErrEvictionInFlight = errors.New("core: eviction walk already in progress")
	// ErrNoEviction reports an eviction step without a started walk.
	ErrNoEviction = errors.New("core: no eviction walk in progress")
	// ErrBusy is reserved for operations that must refuse to run while an
	// insert is suspended. None does today: other calls re-read the tree,
	// as the insert's own steps do after a barrier.
	ErrBusy = errors.New("core: tree busy with a suspended insert")
	// ErrBroken reports that an internal invariant failed earlier; the tree
	// refuses mutations until Reset.
	ErrBroken = errors.New("core: tree is broken")
	// ErrSanity reports violated invariants found by SanityCheck.
	ErrSanity = errors.New("core: sanity check failed")
)
