package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// minProgressTokens is the work below which no bar is drawn: such runs
// finish before a bar would say anything.
const minProgressTokens = 2_000_000

// progress is a progress bar on stderr, or nothing. A nil *progress is
// valid and does nothing.
type progress struct {
	bar *progressbar.ProgressBar
	w   io.Writer
}

// newProgress returns a bar over total units of work, drawn only when
// stderr is a terminal and neither --quiet nor --json was given.
func newProgress(s *settings, stderr io.Writer, what string, total int64) *progress {
	if s.quiet || s.json || total < minProgressTokens {
		return nil
	}
	f, ok := stderr.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return &progress{w: stderr, bar: progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(stderr),
		progressbar.OptionSetDescription(what),
		progressbar.OptionSetItsString("tokens"),
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
