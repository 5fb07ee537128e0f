package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/radixkv/radixkv/playground"
)

const playgroundSynopsis = "playground [--addr HOST:PORT]"

// runPlayground serves the browser playground until interrupted.
func runPlayground(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("playground", playgroundSynopsis, stderr)
	addr := fs.String("addr", "127.0.0.1:8080", "`address` to listen on (port 0 picks a free port; an empty host means the loopback)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "playground: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return errUsage
	}
	ln, url, err := playground.Listen(*addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: playground.Handler(), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "radixkv playground: %s (Ctrl-C to stop)\n", url)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err = <-done:
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		err = srv.Shutdown(sctx)
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
