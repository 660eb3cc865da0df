// Command resyncd is the resync daemon: `resyncd run` keeps the children
// of the watched resources in place; see README.md and docs/.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// version is stamped by the Makefile (-ldflags -X main.version=...).
var version = "dev"

func main() {
	ctx, stop := signalContext()
	defer stop()
	err := run(ctx, os.Args[1:])
	if err == nil {
		return
	}
	code := 1
	var ec *exitError
	if errors.As(err, &ec) {
		code = ec.code
	}
	if !errors.Is(err, errSilent) {
		fmt.Fprintf(os.Stderr, "resyncd: %v\n", err)
	}
	stop()
	os.Exit(code)
}

// signalContext is cancelled by the first SIGINT, SIGTERM or SIGHUP, so
// that the batch in flight can finish; a second signal exits at once.
// SIGHUP stops like SIGTERM rather than reloading: its default action
// would kill the process between the writes of a parent, and a changed
// configuration is read by a restart.
func signalContext() (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		<-ch
		cancel()
		<-ch
		fmt.Fprintln(os.Stderr, "resyncd: second signal, exiting at once")
		os.Exit(1)
	}()
	return ctx, func() { signal.Stop(ch); cancel() }
}

// exitError carries the exit code a command wants.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// errSilent marks an error whose story the command has already told.
var errSilent = errors.New("")

func exitWith(code int, err error) error { return &exitError{code: code, err: err} }
