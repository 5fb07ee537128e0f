package core

// WordKernels are faster versions of the two word loops on core's hot
// paths, for a build whose own loops are slow: the WebAssembly module,
// where Go code pays a bounds check per load and core may not view a
// word slice's memory in wider words (no unsafe here). Each must return
// exactly what the portable loop returns; the results are core's, so a
// wrong kernel breaks the tree's determinism.
type WordKernels interface {
	// Mismatch returns the index of the first differing word of a and b,
	// or the shorter length when one is a prefix of the other.
	Mismatch(a, b []uint32) int
	// AnyNegative reports whether any of s is negative.
	AnyNegative(s []int32) bool
}

// kernels is the installed WordKernels, or nil for the portable loops.
var kernels WordKernels

// SetWordKernels installs k for every later call into any tree of the
// process; nil restores the portable loops. Only the WebAssembly build
// consults it (natively the compiler's memequal and a plain loop already
// run near memory speed). Install it once, before any tree is in use:
// trees do not synchronise with this call.
func SetWordKernels(k WordKernels) { kernels = k }
