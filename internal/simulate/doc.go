// Package simulate is a deterministic simulator of a serving host: a
// seeded scheduler interleaves many concurrent requests through one
// native.Controller (arrivals, chunked prefills, decoded tokens, chunk
// finishes, finishes, aborts, verifies, transfer ticks) on a host-tier
// tree of any component set and engine, and injects faults:
//
//   - exhaust: device pools small enough that arrivals and prefills run
//     out of slots;
//   - pool: the controller's device pool calls fail (Alloc, Free and Copy
//     1 in 50, Read and Write 1 in 2,000), as the Pool contract allows;
//   - delay: transfers complete late and out of order (pooltest);
//   - transfer: transfers fail, writing garbage into half their
//     destination slots, or are refused at Start;
//   - host-full: host pools smaller than the device's;
//   - write-through: host Alloc, Free and Write calls fail and transfers
//     fail, so backups and write-throughs fail;
//   - abort-loadback: a request is aborted right after an arrival whose
//     load-back is still in flight;
//   - garbage: malformed and hostile ABI calls into the engine's guest
//     between steps (inprocess and wasm engines), which must be refused;
//   - trap: the engine's guest traps on one of its next calls
//     (native.InjectTrap: on the wasm engine its module instance is closed
//     under the call), in the middle of whatever step makes it; the call
//     fails with native.ErrEngineFailed and the simulator replaces the
//     engine (Controller.ReplaceEngine): every slot goes back to its pool,
//     the running requests fail with native.ErrEngineReplaced, and the
//     checks go on over the fresh, empty tree.
//
// After every step it checks the controller's Audit (the tree's sanity
// check and every slot accounted, in-flight ones included), that no slot
// was used while a transfer named it, that the KV canary never
// mismatched, and a naive model of the cache: every prefix a match or an
// arrival finds must be one some request of the same namespace cached
// (no phantom or cross-tenant hits), and, for a Full-only write-through
// tree without host faults, a finished request's whole pages are cached
// right after its Finish. Lifecycle calls may fail only with the errors
// the injected faults explain (the request is then aborted, cleanly).
//
// The same Config gives the same run and the same Report, byte for byte;
// a run's first steps do not depend on its length, so a violation at step
// k reproduces with Ops = k. Concurrent mode instead runs worker
// goroutines on the controller with transfers completing on goroutines of
// their own, for the race detector; it is not reproducible.
//
// In concurrent mode the trap fault replaces the engine (a restart, with
// no trap: an injected one would race with the workers' calls) while the
// workers run requests on it.
//
// radixkv simulate is the command line; make soak runs it for a while.
package simulate
