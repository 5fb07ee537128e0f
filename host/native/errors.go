package native

import "errors"

// Errors returned by engines, pools and the controller. Each is wrapped
// with a message naming the offending value; match them with errors.Is.
// Errors that come from the tree itself (core.ErrStaleNode, core.ErrReceipt
// and the rest) are passed through unchanged.
var (
	// ErrClosed reports a call on a closed engine, pool or controller.
	ErrClosed = errors.New("native: closed")
	// ErrInvalidArgument reports a malformed argument (negative counts,
	// oversized buffers, a request from another controller).
	ErrInvalidArgument = errors.New("native: invalid argument")
	// ErrPoolExhausted reports that a pool cannot supply the slots asked
	// for; from the controller it means eviction could not free enough
	// because the rest is locked by running requests or owned by them.
	ErrPoolExhausted = errors.New("native: pool exhausted")
	// ErrSlotRange reports a slot index outside [0, capacity).
	ErrSlotRange = errors.New("native: slot out of range")
	// ErrSlotNotAllocated reports a free, read, write or copy of a slot
	// that is not allocated: a double free, or a slot never handed out.
	ErrSlotNotAllocated = errors.New("native: slot not allocated")
	// ErrMmapUnavailable reports that host memory could not be mapped
	// (unsupported platform, or the mmap call failed); use NewMemPool.
	ErrMmapUnavailable = errors.New("native: mmap unavailable")
	// ErrNoPool reports an action aimed at a pool the controller was not
	// given.
	ErrNoPool = errors.New("native: pool not configured")
	// ErrHostTier reports an action that needs the host tier (backup,
	// write-through bookkeeping), which this controller does not run.
	ErrHostTier = errors.New("native: host tier not configured")
	// ErrUnknownAction reports an action kind the controller does not
	// know how to execute.
	ErrUnknownAction = errors.New("native: unknown action")
	// ErrRequestDone reports a lifecycle call on a request that was
	// already finished or aborted.
	ErrRequestDone = errors.New("native: request already finished or aborted")
	// ErrCanaryMismatch reports a slot whose bytes are not the canary
	// record of the prefix it is supposed to hold.
	ErrCanaryMismatch = errors.New("native: KV canary mismatch")
	// ErrGuest reports a failure of an engine's guest rather than of the
	// tree: a trap or a memory access out of range in the WebAssembly
	// module, a malformed response, or an error code of the ABI itself
	// (see RemoteError). After a transport failure the engine refuses
	// further calls with the same error; Close it.
	ErrGuest = errors.New("native: engine guest failure")
	// ErrEngineFailed reports an engine that can take no more calls: its
	// guest trapped (or failed in transport, or answered garbage), so the
	// tree it held is lost. Every later call fails the same way. A
	// Controller over it recovers with ReplaceEngine (a fresh engine,
	// every slot back in its pool, running requests failed with
	// ErrEngineReplaced). It comes together with ErrGuest.
	ErrEngineFailed = errors.New("native: engine failed, replace it")
	// ErrEngineReplaced reports a lifecycle call on a request that was
	// running when its controller replaced a failed engine
	// (Controller.ReplaceEngine): its slots went back to the pools with
	// the old tree, and it is done; arrive again.
	ErrEngineReplaced = errors.New("native: request lost with the engine it ran on; arrive again")
	// ErrAccounting reports that the slots held by the pool, the tree and
	// running requests do not add up to the pool's capacity.
	ErrAccounting = errors.New("native: slot accounting mismatch")
)
