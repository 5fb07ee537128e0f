// Command wasm is the radixkv WebAssembly module: a WASI preview 1
// reactor (built with -buildmode=c-shared) whose only exports are the five
// functions below. They are thin wrappers over [dispatch.Dispatcher.Call]
// (and CallKeeping);
// the protocol is specified in abi/SPEC.md ("WebAssembly module").
//
// Memory ownership:
//   - radixkv_alloc returns a guest buffer the host owns until it passes
//     it to radixkv_free. The host writes a request into it and may reuse
//     it for any number of calls.
//   - radixkv_call reads the request from a live allocation (ptr must be
//     what radixkv_alloc returned, len at most its size) and returns
//     ptr<<32|len of the response. The response buffer belongs to the
//     guest: the host copies it out before its next radixkv_call and never
//     frees it.
//   - radixkv_call_keeping is radixkv_call on a buffer the host then
//     keeps unchanged until its next radixkv_call_keeping, so a match's
//     tokens are kept where they are (abi/SPEC.md §8, "Kept requests").
//
// Build: make wasm (see the top-level Makefile).
package main

import (
	"runtime"
	"unsafe"

	"github.com/radixkv/radixkv/abi"
	"github.com/radixkv/radixkv/abi/dispatch"
	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/internal/wordview"
)

// main is required by the toolchain; a c-shared module runs _initialize
// instead and main never runs.
func main() {}

var (
	d = dispatch.New()
	// pinned keeps every buffer handed to the host alive (and unmoved: the
	// Go collector does not move heap objects) until radixkv_free.
	pinned = map[uint32][]byte{}
	// badCall is the response to a call whose buffer is not a live
	// allocation.
	badCall []byte
	// calls counts radixkv_call, for yieldEvery.
	calls uint32
	// hotPtr's buffer is hot: hosts reuse one request buffer for every
	// call, and a map lookup costs hundreds of nanoseconds here. free
	// clears it.
	hotPtr uint32
	hot    []byte
	// keptPtr is the buffer of the last radixkv_call_keeping, whose bytes
	// the dispatcher may still view (a kept match's tokens): a free of it
	// or a radixkv_call in it ends the host's promise early, and the
	// kept match is dropped first.
	keptPtr uint32
	// keepPtr's buffer is the last one radixkv_call_keeping ran in: a
	// host alternates it with its plain request buffer, which keeps hot.
	keepPtr uint32
	keep    []byte
)

// yieldEvery is how often (in calls) radixkv_call yields to the Go
// scheduler before it returns. In a reactor nothing else ever runs: the
// collector's background workers get no time, its cycles never finish,
// the mutator's assists do all the marking and the heap (so linear
// memory, which never shrinks) grows without bound. Measured under
// internal/abifuzz: 126 MiB and growing after 1.5M calls, 115 s; with a
// yield, flat at 9 MiB, 24 s. A yield costs about a microsecond, so it
// is taken every so many calls, not on each.
const yieldEvery = 32

// WebAssembly memory is little-endian, so a word slice's bytes are its
// wire encoding: the codec moves token and slot arrays with one
// memory.copy instead of a loop at about 2 ns a word, which was the
// largest share of a call's time in a trace replay (RATIONALE.md, "Where
// the wasm engine's time went").
func init() { abi.SetWordCopier(wordview.Copier{}) }

// For the same reason core's two hot word loops (the key compare of
// match and insert, and insert's check for a negative slot) read 64-bit
// words through views of the slices' memory, which core may not take.
func init() { core.SetWordKernels(wordview.Kernels{}) }

// And the dispatcher reads a request's token and slot arrays in place of
// the request buffer (4-byte-aligned arrays only; wordview.Viewer copies
// the others): an insert's slots are read once, by the tree, not copied
// first. What the dispatcher keeps past a call it copies (see
// dispatch.Dispatcher.SetRequestViewer), except a match sent by
// radixkv_call_keeping, whose bytes the host keeps.
func init() { d.SetRequestViewer(wordview.Viewer{}) }

//go:wasmexport radixkv_abi_version
func abiVersion() uint32 { return uint32(abi.Version) }

//go:wasmexport radixkv_alloc
func alloc(size uint32) uint32 {
	b := make([]byte, max(size, 1))
	ptr := uint32(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
	pinned[ptr] = b
	return ptr
}

//go:wasmexport radixkv_free
func free(ptr uint32) {
	if ptr == keptPtr {
		d.DropKept()
		keptPtr = 0
	}
	delete(pinned, ptr)
	if ptr == hotPtr {
		hotPtr, hot = 0, nil
	}
	if ptr == keepPtr {
		keepPtr, keep = 0, nil
	}
}

// buffer returns the live allocation at ptr, or nil.
func buffer(ptr uint32) []byte {
	if ptr == hotPtr && hot != nil {
		return hot
	}
	b, ok := pinned[ptr]
	if !ok {
		return nil
	}
	hotPtr, hot = ptr, b
	return b
}

//go:wasmexport radixkv_call
func call(ptr, size uint32) uint64 {
	if ptr == keptPtr {
		d.DropKept()
		keptPtr = 0
	}
	return run(ptr, size)
}

// radixkv_call_keeping is radixkv_call for a host that leaves the
// request's bytes unchanged until its next radixkv_call_keeping (it
// neither frees the buffer nor passes it to radixkv_call meanwhile, which
// would drop the promise): a match's tokens are then kept for
// begin_insert_matched where they are (dispatch.Dispatcher.CallKeeping).
//
//go:wasmexport radixkv_call_keeping
func callKeeping(ptr, size uint32) uint64 {
	b := keep
	if ptr != keepPtr || b == nil {
		if b = pinned[ptr]; b != nil {
			keepPtr, keep = ptr, b
		}
	}
	var resp []byte
	if b != nil && int(size) <= len(b) {
		keptPtr = ptr
		resp = d.CallKeeping(b[:size])
	} else {
		d.DropKept()
		keptPtr = 0
		resp = notAllocated()
	}
	return respond(resp)
}

func run(ptr, size uint32) uint64 {
	var resp []byte
	if b := buffer(ptr); b != nil && int(size) <= len(b) {
		resp = d.Call(b[:size])
	} else {
		resp = notAllocated()
	}
	return respond(resp)
}

// notAllocated is the response to a call whose buffer is not a live
// allocation.
func notAllocated() []byte {
	badCall = abi.AppendResponse(badCall[:0], &abi.Response{
		Status: abi.StatusError, Code: abi.CodeMalformed,
		Message: "radixkv_call: the request is not inside a buffer from radixkv_alloc",
	})
	return badCall
}

// respond yields now and then (yieldEvery) and returns resp as
// ptr<<32|len.
func respond(resp []byte) uint64 {
	if calls++; calls%yieldEvery == 0 {
		runtime.Gosched()
	}
	if len(resp) == 0 {
		return 0
	}
	p := uint32(uintptr(unsafe.Pointer(unsafe.SliceData(resp))))
	return uint64(p)<<32 | uint64(len(resp))
}
