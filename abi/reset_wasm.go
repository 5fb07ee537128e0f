//go:build wasm

package abi

// In the WebAssembly build a large struct is zeroed with memory.fill,
// which wazero runs as a doubling series of copies (a dozen calls out to
// memmove for a Response), and copied with memory.copy, one call. So
// the resets copy a zero value that is never written.
var (
	zeroRequest  Request
	zeroResponse Response
)

func resetRequest(q *Request) { *q = zeroRequest }

// Reset zeroes r, as *r = Response{} does, by the cheapest means on the
// target. A dispatcher resets its response on every call.
func (r *Response) Reset() { *r = zeroResponse }
