//go:build wasm

package core_test

import (
	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/internal/wordview"
)

// Under GOOS=wasip1 the tests run with the word kernels the module
// installs (wasm/main.go), so core's whole suite checks them in the build
// that uses them.
func init() { core.SetWordKernels(wordview.Kernels{}) }
