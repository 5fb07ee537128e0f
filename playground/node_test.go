package playground

import (
	"os/exec"
	"testing"
)

// TestNode_Playground runs the playground's Node tests (tests/*.test.mjs:
// pools, controller, golden vectors through the vendored shim, the
// recorded Go run) when node is installed. They need no npm packages.
func TestNode_Playground(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not on PATH; skipping the playground's Node tests")
	}
	if testing.Short() {
		t.Skip("-short: skipping the playground's Node tests")
	}
	out, err := exec.Command(node, "--test", "tests/").CombinedOutput()
	if err != nil {
		t.Fatalf("node --test playground/tests/ failed: %v\n%s", err, out)
	}
}
