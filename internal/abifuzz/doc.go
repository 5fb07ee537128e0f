// Package abifuzz drives one long-lived radixkv.wasm module instance with
// a seeded stream of random and mutated calls and checks every answer.
//
// The stream mixes four kinds of call (see [Kind]): well-formed requests
// with random values (handles, node ids and receipts learnt from earlier
// answers), mutations of the golden vectors and of earlier requests,
// random bytes, and calls on buffers the guest never handed out. The
// generator keeps at most a few cache instances alive, so memory is
// bounded by the stream's shape, not its length.
//
// Every answer must be well formed per abi/SPEC.md on its own: magic,
// version, echoed header, the code the header validation order
// prescribes, a UTF-8 message, never the internal code, a body that
// decodes exactly. It must also be, byte for byte, what the in-process
// dispatcher answers to the same stream. Every ProbeEvery calls known
// commands must still answer exactly (the instance stays usable), linear
// memory must stay under a bound, and a closing stream of error replies
// must leave it flat (within 1 MiB).
//
// The same seed makes the same calls. A violation is a [*Failure] naming
// the seed, the call number and the request's bytes.
//
// make fuzz-abi CALLS=10000000 runs TestABIFuzz with that budget; CI runs
// a short one.
package abifuzz
