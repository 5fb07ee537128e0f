package blockcache

import "errors"

// Errors returned by the cache, wrapped with a message naming the value;
// match them with errors.Is. A call that returns an error changed nothing.
var (
	// ErrInvalidConfig reports a Config that New refuses.
	ErrInvalidConfig = errors.New("blockcache: invalid config")
	// ErrInvalidArgument reports a malformed argument.
	ErrInvalidArgument = errors.New("blockcache: invalid argument")
	// ErrBlockInUse reports a block id of a new node or partial suffix that
	// another node already owns (adopting it would free it twice).
	ErrBlockInUse = errors.New("blockcache: block already owned by the cache")
	// ErrOverRelease reports a release of blocks the sequences do not hold:
	// a chunk that is not cached or holds only the cache's own reference.
	ErrOverRelease = errors.New("blockcache: release of more than was matched")
	// ErrSanity reports a violated invariant found by Check.
	ErrSanity = errors.New("blockcache: sanity check failed")
)
