package core_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// forbiddenImports are the packages the deterministic core must not use:
// no wall time, no randomness, no memory tricks, no files or environment,
// no concurrency.
var forbiddenImports = []string{"time", "math/rand", "math/rand/v2", "unsafe", "os", "sync", "sync/atomic", "crypto/rand", "syscall", "runtime"}

func goTool(t *testing.T) string {
	t.Helper()
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		t.Skipf("go tool not found at %s: %v", gobin, err)
	}
	return gobin
}

func goList(t *testing.T, args ...string) []string {
	t.Helper()
	cmd := exec.Command(goTool(t), append([]string{"list"}, args...)...)
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok {
		t.Fatalf("go list %v: %v\n%s", args, err, ee.Stderr)
	}
	require.NoError(t, err)
	return strings.Fields(string(out))
}

// corePrefix is the import path of core and its sub-packages (the block
// cache, the snapshot index, the FLOP model), which are held to the same
// rules and may import each other.
const corePrefix = "github.com/radixkv/radixkv/core"

// corePackage is one package of ./... seen from core's directory.
type corePackage struct{ path, dir string }

func corePackages(t *testing.T) []corePackage {
	t.Helper()
	var out []corePackage
	for _, line := range strings.Split(strings.Join(goList(t, "-f", "{{.ImportPath}}={{.Dir}}", "./..."), "\n"), "\n") {
		path, dir, ok := strings.Cut(line, "=")
		require.True(t, ok, "go list line %q", line)
		out = append(out, corePackage{path, dir})
	}
	require.True(t, slices.ContainsFunc(out, func(p corePackage) bool { return p.path == corePrefix }), "core is not in %v", out)
	return out
}

// TestDeps_StandardLibraryOnly: everything core and its sub-packages link
// is the standard library (the first path element of a module path has a
// dot) or core itself.
func TestDeps_StandardLibraryOnly(t *testing.T) {
	for _, pkg := range corePackages(t) {
		for _, p := range goList(t, "-deps", pkg.path) {
			if p == corePrefix || strings.HasPrefix(p, corePrefix+"/") {
				continue // checked as one of corePackages
			}
			first, _, _ := strings.Cut(p, "/")
			require.NotContains(t, first, ".", "%s depends on non-standard package %s", pkg.path, p)
			// Randomness is not even linked in, directly or not.
			require.NotContains(t, neverLinked, p, "%s links %s", pkg.path, p)
		}
	}
}

var neverLinked = []string{"math/rand", "math/rand/v2", "crypto/rand", "net", "os/exec"}

// TestDeps_NoForbiddenImports: the core's own sources import none of the
// forbidden packages. (The standard library reaches some of them
// transitively, fmt through os for instance; what matters is that the
// core never calls them.)
func TestDeps_NoForbiddenImports(t *testing.T) {
	for _, pkg := range corePackages(t) {
		imports := goList(t, "-f", "{{join .Imports \" \"}}", pkg.path)
		for _, p := range imports {
			require.NotContains(t, forbiddenImports, p, "%s imports %s", pkg.path, p)
		}
	}
	// The same from the sources, including files for other GOOS/GOARCH
	// that go list would not show.
	for _, f := range parseCoreSources(t) {
		for _, imp := range f.file.Imports {
			p := strings.Trim(imp.Path.Value, `"`)
			require.NotContains(t, forbiddenImports, p, "%s imports %s", f.name, p)
		}
	}
}

// TestDeps_NoGoroutines: no go statement in the core's sources.
func TestDeps_NoGoroutines(t *testing.T) {
	for _, f := range parseCoreSources(t) {
		ast.Inspect(f.file, func(n ast.Node) bool {
			if g, ok := n.(*ast.GoStmt); ok {
				t.Errorf("%s: go statement at %v", f.name, f.fset.Position(g.Pos()))
			}
			return true
		})
	}
}

type parsedFile struct {
	name string
	fset *token.FileSet
	file *ast.File
}

// parseCoreSources parses every non-test Go file of core and its
// sub-packages.
func parseCoreSources(t *testing.T) []parsedFile {
	t.Helper()
	var out []parsedFile
	fset := token.NewFileSet()
	for _, pkg := range corePackages(t) {
		names, err := filepath.Glob(filepath.Join(pkg.dir, "*.go"))
		require.NoError(t, err)
		for _, name := range names {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
			require.NoError(t, err)
			out = append(out, parsedFile{name: name, fset: fset, file: f})
		}
	}
	require.True(t, slices.ContainsFunc(out, func(p parsedFile) bool { return filepath.Base(p.name) == "tree.go" }), "parsed the wrong directory")
	return out
}
