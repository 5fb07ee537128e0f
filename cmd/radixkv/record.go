package main

import (
	"errors"
	"fmt"
	"io"
	"os"
)

const recordSynopsis = "record --out FILE [--trace FILE | --seed N --requests N] [replay settings]"

// runRecord writes the command log of a workload together with the replay
// settings given, so that replay --log reproduces the run.
func runRecord(args []string, stdout, stderr io.Writer) error {
	var s settings
	var out string
	fs := newFlagSet("record", recordSynopsis, stderr)
	fs.StringVar(&out, "out", "", "command log `file` to write (required)")
	s.workloadFlags(fs, false)
	s.cacheFlags(fs)
	if err := s.parse(fs, args); err != nil {
		return err
	}
	if out == "" {
		fmt.Fprintln(stderr, "record: --out FILE is required")
		fs.Usage()
		return errUsage
	}
	if _, err := s.coreConfig(); err != nil {
		return err
	}
	l, err := s.loadWorkload()
	if err != nil {
		return err
	}
	s.resolveCapacity(l)
	if err := s.checkFits(l); err != nil {
		return err
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	err = writeLog(f, &s, l)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return errors.Join(fmt.Errorf("writing %s: %w", out, err), os.Remove(out))
	}
	var tokens int64
	for k := range l.reqs {
		tokens += int64(len(l.reqs[k].Tokens))
	}
	fi, err := os.Stat(out)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "recorded %d requests (%s input tokens) from %s to %s (%s bytes)\n", len(l.reqs), count(tokens), l.source, out, count(fi.Size()))
	return nil
}
