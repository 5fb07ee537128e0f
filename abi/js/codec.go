// Package jscodec embeds codec.mjs, the JavaScript ABI codec, so that Go
// programs (the playground server of cmd/radixkv) can serve the very file
// the Node tests check against the golden vectors. The codec is plain ES
// module code with no Node imports: browsers and Node load the same file.
package jscodec

import _ "embed"

// Codec is the bytes of codec.mjs. Do not modify it.
//
//go:embed codec.mjs
var Codec []byte
