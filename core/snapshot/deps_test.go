package snapshot

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDeps_Deterministic: the package's own files import only the standard
// library and nothing that reads time, randomness, files or threads.
func TestDeps_Deterministic(t *testing.T) {
	forbidden := map[string]bool{"time": true, "math/rand": true, "math/rand/v2": true, "unsafe": true, "os": true, "sync": true, "sync/atomic": true, "crypto/rand": true, "syscall": true, "runtime": true}
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		af, err := parser.ParseFile(token.NewFileSet(), f, src, parser.ImportsOnly)
		require.NoError(t, err)
		for _, im := range af.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			require.False(t, forbidden[p], "%s imports %s", f, p)
			if p == "github.com/radixkv/radixkv/core/flops" {
				continue // std-only and deterministic, checked by core's deps test
			}
			first, _, _ := strings.Cut(p, "/")
			require.NotContains(t, first, ".", "%s imports non-standard %s", f, p)
		}
	}
}
