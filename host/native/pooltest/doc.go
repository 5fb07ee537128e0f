// Package pooltest holds pools and transports that misbehave on purpose,
// so that every asynchronous and failing path of the native controller
// runs in tests and simulations without a GPU.
//
// [Transport] wraps a native.Pools and implements native.Transport with
// batches that complete later than started, out of order, on another
// goroutine, or fail (after writing garbage into half their destination
// slots); its pools record every use of a slot an in-flight batch names
// as a violation. [FaultPool] wraps one native.Pool and fails its Alloc,
// Free, Read, Write and Copy calls at given rates, as the Pool contract
// allows (a failed call changes nothing).
//
// Both are deterministic for a seed (except the goroutine timing of
// Config.Async), so a failing run can be replayed.
package pooltest
