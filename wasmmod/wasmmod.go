package wasmmod

import _ "embed"

// Module is the bytes of radixkv.wasm. Do not modify it.
//
//go:embed radixkv.wasm
var Module []byte
