package abi_test

import (
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNode_JSCodec runs the JS codec's golden tests (abi/js) on Node's
// built-in test runner and WASI, when node is installed.
func TestNode_JSCodec(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not on PATH; skipping the JS codec tests (abi/js)")
	}
	if testing.Short() {
		t.Skip("-short: skipping the JS codec tests")
	}
	out, err := exec.Command(node, "--test", "js/").CombinedOutput()
	require.NoError(t, err, "node --test abi/js/ failed:\n%s", out)
}
