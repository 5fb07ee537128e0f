package transcript

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var rewriteFlag = flag.Bool("rewrite", false, "rewrite transcript files in place with the actual output")

// Rewriting reports whether the -rewrite flag is set.
func Rewriting() bool { return *rewriteFlag }

// Handler executes one command and returns its output.
type Handler func(t *testing.T, d *Cmd) string

const separator = "----"

// script is a parsed file: its lines and the commands found in them.
type script struct {
	path  string
	lines []string
	cmds  []*Cmd
}

// Run executes every command of the script at path with fn and compares
// the outputs (or, under -rewrite, writes them back into the file).
func Run(t *testing.T, path string, fn Handler) {
	t.Helper()
	run(t, path, fn, Rewriting())
}

// RunFiles runs every file matching the glob pattern as a subtest named by
// its base name. It fails when nothing matches.
func RunFiles(t *testing.T, pattern string, fn Handler) {
	t.Helper()
	paths, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatalf("transcript: bad pattern %q: %v", pattern, err)
	}
	if len(paths) == 0 {
		t.Fatalf("transcript: no files match %q", pattern)
	}
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) { Run(t, p, fn) })
	}
}

func run(t *testing.T, path string, fn Handler, rewrite bool) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("transcript: %v", err)
	}
	s, err := parse(path, string(data))
	if err != nil {
		t.Fatalf("%v", err)
	}
	outs, problems := execute(t, s, fn, rewrite)
	for _, p := range problems {
		t.Error(p)
	}
	if rewrite && !t.Failed() {
		if err := os.WriteFile(path, []byte(s.rewrite(outs)), 0o644); err != nil {
			t.Fatalf("transcript: %v", err)
		}
	}
}

// execute runs the commands and returns their outputs and a message for
// each problem: a mismatch, a missing expectation or an unread argument.
// Under rewrite, only unread arguments are problems.
func execute(t *testing.T, s *script, fn Handler, rewrite bool) (outs, problems []string) {
	t.Helper()
	outs = make([]string, len(s.cmds))
	for k, d := range s.cmds {
		if d.tb == nil {
			d.tb = t
		}
		out := normalize(fn(t, d))
		outs[k] = out
		problems = append(problems, d.unused()...)
		switch {
		case rewrite:
		case !d.hasSep:
			problems = append(problems, fmt.Sprintf("%s: %s: no expected output (no %q line); run with -rewrite to record:\n%s",
				d.Pos, d.Line, separator, indent(out)))
		case out != d.Expected:
			problems = append(problems, fmt.Sprintf("%s: %s: output differs\nexpected:\n%sactual:\n%sdiff (-expected +actual):\n%s",
				d.Pos, d.Line, indent(d.Expected), indent(out), Diff(d.Expected, out)))
		}
	}
	return outs, problems
}

// normalize gives non-empty output a trailing newline.
func normalize(s string) string {
	if s != "" && !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	return s
}

func indent(s string) string {
	if s == "" {
		return "  (empty)\n"
	}
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if l != "" {
			b.WriteString("  ")
			b.WriteString(l)
		}
	}
	return b.String()
}

// parse splits a script into commands. Each command records the lines its
// expected output occupies, so rewrite can replace exactly those.
func parse(path, text string) (*script, error) {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	lines := strings.Split(text, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1] // the file's final newline
	}
	s := &script{path: path, lines: lines}
	pos := func(i int) string { return fmt.Sprintf("%s:%d", path, i+1) }
	for i := 0; i < len(lines); {
		line := lines[i]
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			i++
			continue
		}
		if trimmed == separator {
			return nil, fmt.Errorf("%s: %q without a command", pos(i), separator)
		}
		d, err := parseCommand(trimmed)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", pos(i), err)
		}
		d.Pos, d.line = pos(i), i
		i++
		var input []string
		for i < len(lines) && lines[i] != separator && strings.TrimSpace(lines[i]) != "" {
			input = append(input, lines[i])
			i++
		}
		d.Input = strings.Join(input, "\n")
		if i >= len(lines) || lines[i] != separator {
			// No expected output yet: -rewrite inserts it here.
			d.outStart, d.outEnd = i, i
			s.cmds = append(s.cmds, d)
			continue
		}
		d.hasSep = true
		d.outStart = i // the separator is rewritten with the output
		i++
		var out []string
		if i < len(lines) && lines[i] == separator {
			// Double-separator form: ends at "----" followed by "----".
			i++
			closed := false
			for ; i < len(lines); i++ {
				if lines[i] == separator && i+1 < len(lines) && lines[i+1] == separator {
					i += 2
					closed = true
					break
				}
				out = append(out, lines[i])
			}
			if !closed {
				return nil, fmt.Errorf("%s: output opened with a double %q is never closed by another", pos(d.line), separator)
			}
			if i < len(lines) && strings.TrimSpace(lines[i]) != "" {
				return nil, fmt.Errorf("%s: expected a blank line after the closing separators", pos(i))
			}
		} else {
			for ; i < len(lines) && lines[i] != ""; i++ {
				out = append(out, lines[i])
			}
		}
		d.outEnd = i
		if len(out) > 0 {
			d.Expected = strings.Join(out, "\n") + "\n"
		}
		s.cmds = append(s.cmds, d)
	}
	return s, nil
}

// rewrite rebuilds the file with outs in place of each command's expected
// output, keeping every other line.
func (s *script) rewrite(outs []string) string {
	var b strings.Builder
	next := 0
	for k, d := range s.cmds {
		for ; next < d.outStart; next++ {
			b.WriteString(s.lines[next])
			b.WriteByte('\n')
		}
		b.WriteString(formatOutput(outs[k]))
		next = d.outEnd
		if !d.hasSep && next < len(s.lines) && s.lines[next] != "" {
			b.WriteByte('\n') // keep commands apart
		}
	}
	for ; next < len(s.lines); next++ {
		b.WriteString(s.lines[next])
		b.WriteByte('\n')
	}
	return b.String()
}

// formatOutput frames an output for the file, choosing the doubled
// separators when the output has blank lines of its own.
func formatOutput(out string) string {
	body := strings.TrimSuffix(out, "\n")
	double := false
	for _, l := range strings.Split(body, "\n") {
		if strings.TrimSpace(l) == "" && body != "" {
			double = true
		}
	}
	if !double {
		if body == "" {
			return separator + "\n"
		}
		return separator + "\n" + body + "\n"
	}
	return separator + "\n" + separator + "\n" + body + "\n" + separator + "\n" + separator + "\n"
}

// Diff renders a line diff of a and b: unchanged lines start with two
// spaces, removed lines with "- ", added lines with "+ ".
func Diff(a, b string) string {
	x := splitLines(a)
	y := splitLines(b)
	// Longest common subsequence table; outputs are small.
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			out.WriteString("  " + x[i] + "\n")
			i++
			j++
		case i < len(x) && (j == len(y) || lcs[i+1][j] >= lcs[i][j+1]):
			out.WriteString("- " + x[i] + "\n")
			i++
		default:
			out.WriteString("+ " + y[j] + "\n")
			j++
		}
	}
	return out.String()
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
