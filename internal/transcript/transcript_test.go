package transcript

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const sample = `# a comment
echo a=1 b=(x y  z) flag
first input
second input
----
out 1

# blank lines and comments between commands are kept
sum xs=(1-3 10)
----
16

para
----
----
one

two
----
----

empty
----

pending n=2
`

func writeTemp(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "s.txt")
	require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	return p
}

func TestParse(t *testing.T) {
	s, err := parse("s.txt", sample)
	require.NoError(t, err)
	require.Len(t, s.cmds, 5)

	d := s.cmds[0]
	require.Equal(t, "echo", d.Name)
	require.Equal(t, "s.txt:2", d.Pos)
	require.Equal(t, []Arg{{Key: "a", Vals: []string{"1"}}, {Key: "b", Vals: []string{"x", "y", "z"}, List: true}, {Key: "flag"}}, d.Args)
	require.Equal(t, "first input\nsecond input", d.Input)
	require.Equal(t, "out 1\n", d.Expected)
	require.True(t, d.hasSep)

	require.Equal(t, "16\n", s.cmds[1].Expected)
	require.Equal(t, "one\n\ntwo\n", s.cmds[2].Expected)
	require.Equal(t, "", s.cmds[3].Expected)
	require.True(t, s.cmds[3].hasSep)
	require.False(t, s.cmds[4].hasSep)
	require.Equal(t, "s.txt:25", s.cmds[4].Pos)
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"----\nx\n", "s.txt:1: \"----\" without a command"},
		{"cmd a=(1 2\n----\n", "s.txt:1: unclosed '('"},
		{"cmd a=(1 (2))\n", "lists do not nest"},
		{"cmd a=1 a=2\n", "argument \"a\" given twice"},
		{"cmd a=\n", "empty or malformed value"},
		{"cmd =3\n", "the key must be a plain word"},
		{"x=1\n", "must be a plain word"},
		{"cmd a=(1)b\n", "text right after ')'"},
		{"\n\ncmd\n----\n----\nnever closed\n", "s.txt:3: output opened with a double"},
		{"cmd\n----\n----\nx\n----\n----\ntrailing\n", "s.txt:7: expected a blank line"},
	} {
		_, err := parse("s.txt", tc.text)
		require.ErrorContains(t, err, tc.want, "script %q", tc.text)
	}
}

// handler answers the sample's commands.
func handler(t *testing.T, d *Cmd) string {
	switch d.Name {
	case "echo":
		require.Equal(t, []string{"x", "y", "z"}, d.Strings("b"))
		require.True(t, d.Bool("flag"))
		return fmt.Sprintf("out %d", d.Int("a"))
	case "sum":
		n := 0
		for _, x := range d.Uint32s("xs") {
			n += int(x)
		}
		return fmt.Sprint(n)
	case "para":
		return "one\n\ntwo\n"
	case "empty":
		return ""
	case "pending":
		return strings.Repeat("p\n", d.Int("n"))
	}
	d.Fatalf("unknown command")
	return ""
}

func TestExecuteMatchesAndReports(t *testing.T) {
	s, err := parse("s.txt", sample)
	require.NoError(t, err)
	outs, problems := execute(t, s, handler, false)
	require.Equal(t, []string{"out 1\n", "16\n", "one\n\ntwo\n", "", "p\np\n"}, outs)
	require.Len(t, problems, 1)
	require.Contains(t, problems[0], "s.txt:25: pending n=2: no expected output")

	// A wrong expectation shows both versions and a diff.
	s, err = parse("s.txt", "sum xs=(1 2)\n----\n4\n")
	require.NoError(t, err)
	_, problems = execute(t, s, handler, false)
	require.Len(t, problems, 1)
	require.Contains(t, problems[0], "s.txt:1: sum xs=(1 2): output differs")
	require.Contains(t, problems[0], "- 4\n+ 3\n")

	// Arguments the handler never reads are reported.
	s, err = parse("s.txt", "sum xs=(1) typo=3\n----\n1\n")
	require.NoError(t, err)
	_, problems = execute(t, s, handler, false)
	require.Equal(t, []string{`s.txt:1: sum xs=(1) typo=3: unknown argument "typo" for command "sum"`}, problems)
}

func TestRewrite(t *testing.T) {
	stale := strings.Replace(sample, "16\n", "99\nextra line\n", 1)
	p := writeTemp(t, stale)
	run(t, p, handler, true)
	got, err := os.ReadFile(p)
	require.NoError(t, err)
	want := strings.Replace(sample, "pending n=2\n", "pending n=2\n----\np\np\n", 1)
	require.Equal(t, want, string(got))

	// The rewritten file passes as it is, and rewriting again is a no-op.
	run(t, p, handler, false)
	run(t, p, handler, true)
	again, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Equal(t, want, string(again))
}

func TestRewriteSwitchesFraming(t *testing.T) {
	// Output that gains a blank line moves to the doubled separators, and
	// output that loses it moves back; the following command is kept.
	p := writeTemp(t, "para\n----\nold\n\nempty\n----\nstale\n\n# tail comment\n")
	run(t, p, handler, true)
	got, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Equal(t, "para\n----\n----\none\n\ntwo\n----\n----\n\nempty\n----\n\n# tail comment\n", string(got))

	// A bare command followed directly by another gets a blank line.
	p = writeTemp(t, "pending n=1\nempty\n")
	s, err := parse(p, "pending n=1\n\nempty\n")
	require.NoError(t, err)
	require.Len(t, s.cmds, 2)
	require.NoError(t, os.WriteFile(p, []byte("pending n=1\n\nempty\n"), 0o644))
	run(t, p, handler, true)
	got, err = os.ReadFile(p)
	require.NoError(t, err)
	require.Equal(t, "pending n=1\n----\np\n\nempty\n----\n", string(got))
}

func TestRunFiles(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a.txt", "b.txt"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("sum xs=(2-4)\n----\n9\n"), 0o644))
	}
	var ran []string
	RunFiles(t, filepath.Join(dir, "*.txt"), func(t *testing.T, d *Cmd) string {
		ran = append(ran, t.Name())
		return handler(t, d)
	})
	require.Equal(t, []string{"TestRunFiles/a.txt", "TestRunFiles/b.txt"}, ran)
}

// fakeTB records Fatalf and stops the helper with a panic the test
// recovers, standing in for testing.T's Goexit.
type fakeTB struct {
	testing.TB
	msg string
}

type fatal struct{}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic(fatal{})
}

// fails runs use on the command line and returns the fatal message.
func fails(t *testing.T, line string, use func(d *Cmd)) (msg string) {
	t.Helper()
	d, err := parseCommand(line)
	require.NoError(t, err)
	d.Pos = "f.txt:7"
	tb := &fakeTB{}
	d.tb = tb
	defer func() {
		r := recover()
		if _, ok := r.(fatal); !ok {
			panic(r)
		}
		msg = tb.msg
	}()
	use(d)
	t.Fatalf("%q: expected a failure", line)
	return ""
}

func TestHelpers(t *testing.T) {
	d, err := parseCommand("cmd n=-3 s=word b1 b2=false b3=true xs=(1-3 7 9-9) ys=() neg=(-3--1 -7 2-3) one=5 names=(a b)")
	require.NoError(t, err)
	d.tb = t
	require.Equal(t, -3, d.Int("n"))
	require.Equal(t, 42, d.IntOr("missing", 42))
	require.Equal(t, "word", d.String("s"))
	require.Equal(t, "dflt", d.StringOr("missing", "dflt"))
	require.True(t, d.Bool("b1"))
	require.False(t, d.Bool("b2"))
	require.True(t, d.Bool("b3"))
	require.False(t, d.Bool("missing"))
	require.Equal(t, []uint32{1, 2, 3, 7, 9}, d.Uint32s("xs"))
	require.Equal(t, []uint32{}, d.Uint32s("ys"))
	require.Nil(t, d.Uint32s("missing"))
	require.Equal(t, []int32{-3, -2, -1, -7, 2, 3}, d.Int32s("neg"))
	require.Equal(t, []uint32{5}, d.Uint32s("one"))
	require.Equal(t, []string{"a", "b"}, d.Strings("names"))
	require.True(t, d.Has("s"))
	require.False(t, d.Has("missing"))
	require.Empty(t, d.unused())
}

func TestHelperFailures(t *testing.T) {
	for _, tc := range []struct {
		line string
		use  func(d *Cmd)
		want string
	}{
		{"c", func(d *Cmd) { d.Int("n") }, "f.txt:7: c: missing argument n=..."},
		{"c n=x", func(d *Cmd) { d.Int("n") }, "argument n=x is not an integer"},
		{"c n=(1 2)", func(d *Cmd) { d.IntOr("n", 0) }, `argument "n" wants one value, got (1 2)`},
		{"c n", func(d *Cmd) { d.String("n") }, `argument "n" wants one value, got a bare flag`},
		{"c b=maybe", func(d *Cmd) { d.Bool("b") }, `argument "b" wants true, false or nothing, got (maybe)`},
		{"c xs=(1 q)", func(d *Cmd) { d.Uint32s("xs") }, `argument xs: "q" is not a number or a range a-b`},
		{"c xs=(5-2)", func(d *Cmd) { d.Uint32s("xs") }, `range "5-2" runs backwards`},
		{"c xs=(-1)", func(d *Cmd) { d.Uint32s("xs") }, `"-1" is outside [0, 4294967295]`},
		{"c xs=(4294967296)", func(d *Cmd) { d.Uint32s("xs") }, "is outside"},
		{"c xs=(1-2-3)", func(d *Cmd) { d.Int32s("xs") }, "is not a number"},
		{"c xs", func(d *Cmd) { d.Uint32s("xs") }, "wants numbers, got a bare flag"},
		{"c xs", func(d *Cmd) { d.Strings("xs") }, "wants values, got a bare flag"},
		{"c", func(d *Cmd) { d.Fatalf("custom %d", 1) }, "f.txt:7: c: custom 1"},
	} {
		require.Contains(t, fails(t, tc.line, tc.use), tc.want, tc.line)
	}
}

func TestDiff(t *testing.T) {
	require.Equal(t, "  a\n- b\n+ B\n  c\n+ d\n", Diff("a\nb\nc\n", "a\nB\nc\nd\n"))
	require.Equal(t, "+ x\n", Diff("", "x\n"))
	require.Equal(t, "", Diff("", ""))
}
