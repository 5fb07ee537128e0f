package transcript

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// Arg is one argument of a command: a bare flag (no Vals), key=value (one
// value) or key=(v1 v2 ...) (any number, possibly none).
type Arg struct {
	Key  string
	Vals []string
	// List is set when the value was written in parentheses.
	List bool
}

// Cmd is one command of a script.
type Cmd struct {
	// Pos is the command's position, file:line.
	Pos string
	// Line is the command line as written (trimmed).
	Line string
	// Name is the command's first word.
	Name string
	// Args in the order written.
	Args []Arg
	// Input is the text between the command line and the separator,
	// without a trailing newline.
	Input string
	// Expected is the recorded output (with a trailing newline, or empty).
	Expected string

	tb       testing.TB
	read     map[string]bool
	line     int
	hasSep   bool
	outStart int
	outEnd   int
}

// parseCommand splits a command line into name and arguments.
func parseCommand(line string) (*Cmd, error) {
	d := &Cmd{Line: line}
	rest := strings.TrimSpace(line)
	first := true
	seen := map[string]bool{}
	for rest != "" {
		end := strings.IndexAny(rest, " \t")
		if end < 0 {
			end = len(rest)
		}
		if eq := strings.IndexByte(rest[:end], '='); eq >= 0 && eq+1 < len(rest) && rest[eq+1] == '(' {
			// key=( ... ) may span spaces.
			closeAt := strings.IndexByte(rest[eq:], ')')
			if closeAt < 0 {
				return nil, fmt.Errorf("unclosed '(' in argument %q", rest[:eq])
			}
			end = eq + closeAt + 1
			if strings.IndexByte(rest[eq+2:end-1], '(') >= 0 {
				return nil, fmt.Errorf("argument %q: lists do not nest", rest[:eq])
			}
			if end < len(rest) && rest[end] != ' ' && rest[end] != '\t' {
				return nil, fmt.Errorf("argument %q: text right after ')'", rest[:eq])
			}
		}
		word := rest[:end]
		rest = strings.TrimSpace(rest[end:])
		if first {
			if strings.ContainsAny(word, "=()") {
				return nil, fmt.Errorf("command name %q must be a plain word", word)
			}
			d.Name = word
			first = false
			continue
		}
		a, err := parseArg(word)
		if err != nil {
			return nil, err
		}
		if seen[a.Key] {
			return nil, fmt.Errorf("argument %q given twice", a.Key)
		}
		seen[a.Key] = true
		d.Args = append(d.Args, a)
	}
	if d.Name == "" {
		return nil, fmt.Errorf("empty command")
	}
	return d, nil
}

func parseArg(word string) (Arg, error) {
	key, val, hasVal := strings.Cut(word, "=")
	if key == "" || strings.ContainsAny(key, "()") {
		return Arg{}, fmt.Errorf("bad argument %q: the key must be a plain word", word)
	}
	if !hasVal {
		return Arg{Key: key}, nil
	}
	if strings.HasPrefix(val, "(") {
		inner := strings.TrimSuffix(strings.TrimPrefix(val, "("), ")")
		if strings.ContainsAny(inner, "()") {
			return Arg{}, fmt.Errorf("argument %q: lists do not nest", key)
		}
		return Arg{Key: key, Vals: strings.Fields(inner), List: true}, nil
	}
	if val == "" || strings.ContainsAny(val, "()") {
		return Arg{}, fmt.Errorf("argument %q: empty or malformed value %q", key, val)
	}
	return Arg{Key: key, Vals: []string{val}}, nil
}

// Fatalf fails the test with the command's position and stops it.
func (d *Cmd) Fatalf(format string, args ...any) {
	d.tb.Helper()
	d.tb.Fatalf("%s: %s: %s", d.Pos, d.Line, fmt.Sprintf(format, args...))
}

// Has reports whether the argument key was given (and marks it read).
func (d *Cmd) Has(key string) bool {
	_, ok := d.arg(key)
	return ok
}

func (d *Cmd) arg(key string) (Arg, bool) {
	for _, a := range d.Args {
		if a.Key == key {
			if d.read == nil {
				d.read = map[string]bool{}
			}
			d.read[key] = true
			return a, true
		}
	}
	return Arg{}, false
}

// single returns the one value of key; ok is false when key is absent.
func (d *Cmd) single(key string) (string, bool) {
	d.tb.Helper()
	a, ok := d.arg(key)
	if !ok {
		return "", false
	}
	if len(a.Vals) != 1 || a.List {
		d.Fatalf("argument %q wants one value, got %s", key, describe(a))
	}
	return a.Vals[0], true
}

func describe(a Arg) string {
	if len(a.Vals) == 0 && !a.List {
		return "a bare flag"
	}
	return fmt.Sprintf("(%s)", strings.Join(a.Vals, " "))
}

// String returns the value of the required argument key.
func (d *Cmd) String(key string) string {
	d.tb.Helper()
	v, ok := d.single(key)
	if !ok {
		d.Fatalf("missing argument %s=...", key)
	}
	return v
}

// StringOr returns the value of key, or def when it is absent.
func (d *Cmd) StringOr(key, def string) string {
	d.tb.Helper()
	if v, ok := d.single(key); ok {
		return v
	}
	return def
}

// Int returns the integer value of the required argument key.
func (d *Cmd) Int(key string) int {
	d.tb.Helper()
	return d.parseInt(key, d.String(key))
}

// IntOr returns the integer value of key, or def when it is absent.
func (d *Cmd) IntOr(key string, def int) int {
	d.tb.Helper()
	v, ok := d.single(key)
	if !ok {
		return def
	}
	return d.parseInt(key, v)
}

func (d *Cmd) parseInt(key, v string) int {
	d.tb.Helper()
	n, err := strconv.Atoi(v)
	if err != nil {
		d.Fatalf("argument %s=%s is not an integer", key, v)
	}
	return n
}

// Bool reports a boolean argument: absent is false, a bare flag is true,
// and key=true / key=false say so explicitly.
func (d *Cmd) Bool(key string) bool {
	d.tb.Helper()
	a, ok := d.arg(key)
	if !ok {
		return false
	}
	if len(a.Vals) == 0 && !a.List {
		return true
	}
	if len(a.Vals) == 1 && !a.List {
		if b, err := strconv.ParseBool(a.Vals[0]); err == nil {
			return b
		}
	}
	d.Fatalf("argument %q wants true, false or nothing, got %s", key, describe(a))
	return false
}

// Strings returns the values of key: a list, or a single value as a list
// of one. An absent key gives nil.
func (d *Cmd) Strings(key string) []string {
	d.tb.Helper()
	a, ok := d.arg(key)
	if !ok {
		return nil
	}
	if len(a.Vals) == 0 && !a.List {
		d.Fatalf("argument %q wants values, got a bare flag", key)
	}
	return a.Vals
}

// Uint32s returns the numbers of key, expanding inclusive ranges: (1-4 9)
// is 1 2 3 4 9. An absent key gives nil; key=() gives an empty, non-nil
// slice.
func (d *Cmd) Uint32s(key string) []uint32 {
	d.tb.Helper()
	vals, ok := d.numbers(key, 0, 1<<32-1)
	if !ok {
		return nil
	}
	out := make([]uint32, len(vals))
	for i, v := range vals {
		out[i] = uint32(v)
	}
	return out
}

// Int32s is Uint32s for signed numbers; a negative bound is written with
// its sign, e.g. (-3 -2 5-7).
func (d *Cmd) Int32s(key string) []int32 {
	d.tb.Helper()
	vals, ok := d.numbers(key, -1<<31, 1<<31-1)
	if !ok {
		return nil
	}
	out := make([]int32, len(vals))
	for i, v := range vals {
		out[i] = int32(v)
	}
	return out
}

// numbers parses key's values as integers in [lo, hi] with a-b ranges.
func (d *Cmd) numbers(key string, lo, hi int64) ([]int64, bool) {
	d.tb.Helper()
	a, ok := d.arg(key)
	if !ok {
		return nil, false
	}
	if len(a.Vals) == 0 && !a.List {
		d.Fatalf("argument %q wants numbers, got a bare flag", key)
	}
	out := []int64{}
	for _, v := range a.Vals {
		first, last := v, v
		if k := strings.IndexByte(v[1:], '-'); k >= 0 {
			first, last = v[:k+1], v[k+2:]
		}
		x, err1 := strconv.ParseInt(first, 10, 64)
		y, err2 := strconv.ParseInt(last, 10, 64)
		switch {
		case err1 != nil || err2 != nil:
			d.Fatalf("argument %s: %q is not a number or a range a-b", key, v)
		case x > y:
			d.Fatalf("argument %s: range %q runs backwards", key, v)
		case x < lo || y > hi:
			d.Fatalf("argument %s: %q is outside [%d, %d]", key, v, lo, hi)
		case y-x >= 1<<20:
			d.Fatalf("argument %s: range %q is too long", key, v)
		}
		for n := x; n <= y; n++ {
			out = append(out, n)
		}
	}
	return out, true
}

// unused lists a problem for each argument the handler never read.
func (d *Cmd) unused() []string {
	var out []string
	for _, a := range d.Args {
		if !d.read[a.Key] {
			out = append(out, fmt.Sprintf("%s: %s: unknown argument %q for command %q", d.Pos, d.Line, a.Key, d.Name))
		}
	}
	return out
}
