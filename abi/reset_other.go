//go:build !wasm

package abi

func resetRequest(q *Request) { *q = Request{} }

// Reset zeroes r, as *r = Response{} does, by the cheapest means on the
// target (see reset_wasm.go). A dispatcher resets its response on every
// call.
func (r *Response) Reset() { *r = Response{} }
