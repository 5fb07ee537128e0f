package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// minProgressTokens, minProgressBytes (of a trace) and
// minProgressRequests (of the built-in workload), about as much work each,
// are the work below which no bar is drawn: such runs finish before a bar
// would say anything.
const (
	minProgressTokens   = 2_000_000
	minProgressBytes    = 64 << 10
	minProgressRequests = 400
)

// progress is a progress bar on stderr, or nothing. A nil *progress is
// valid and does nothing.
type progress struct {
	bar *progressbar.ProgressBar
	w   io.Writer
}

// newProgress returns a bar over total units of work, drawn only when
// stderr is a terminal, neither --quiet nor --json was given and total is
// at least min.
func newProgress(s *settings, stderr io.Writer, what string, total int64, unit string, min int64) *progress {
	if s.quiet || s.json || total < min {
		return nil
	}
	f, ok := stderr.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return &progress{w: stderr, bar: progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(stderr),
		progressbar.OptionSetDescription(what),
		progressbar.OptionSetItsString(unit),
		progressbar.OptionShowIts(),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)}
}

func (p *progress) add(n int64) {
	if p != nil {
		_ = p.bar.Add64(n)
	}
}

// set moves the bar to n units done.
func (p *progress) set(n int64) {
	if p != nil {
		_ = p.bar.Set64(n)
	}
}

// finish clears the bar.
func (p *progress) finish() {
	if p != nil {
		_ = p.bar.Finish()
	}
}

// abandon ends the bar's line so that an error message starts on its own.
func (p *progress) abandon() {
	if p != nil {
		_ = p.bar.Exit()
		fmt.Fprintln(p.w)
	}
}
