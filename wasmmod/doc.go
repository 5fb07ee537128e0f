// Package wasmmod embeds radixkv.wasm, the radixkv WebAssembly module
// built from ./wasm, so hosts (the wazero engine of host/native, tools,
// tests) get the very module that is committed.
//
// The module is a WASI preview 1 reactor: instantiate it with WASI, call
// its _initialize export once, then speak the ABI of abi/SPEC.md through
// radixkv_alloc, radixkv_call and radixkv_free.
//
// The file is rebuilt by `make wasm` and checked by `make wasm-check`,
// which rebuilds it and fails if the bytes differ (the build is
// reproducible for a given Go version: -trimpath, no VCS stamp, no build
// id).
package wasmmod
