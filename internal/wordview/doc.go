// Package wordview works on 32-bit word slices (tokens, slots) through
// views of their memory, with package unsafe, where the portable
// word-at-a-time code is the bottleneck: the WebAssembly module, whose
// Go code pays a bounds check per load and a dispatch per loop
// iteration, and the host side of the wire engines.
//
// The views are correct on little-endian machines only (WebAssembly is
// one by definition; hosts check [LittleEndian]). [Copier] gives exactly
// the bytes of package abi's portable word loops; abi may not use unsafe
// itself, so the module and host/native install it with
// abi.SetWordCopier. [Viewer] reads a response's word arrays in place,
// which host/native's wire engines install on their abi.Scratch (its
// views are aligned, so -race's pointer checks accept them).
package wordview
