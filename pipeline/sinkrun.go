package pipeline

import (
	"errors"
	"net"
	"sync"
	"syscall"

	"github.com/benchrun/benchrun/internal/rundir"
)

// Sink statuses in the manifest.
const (
	SinkOK     = "ok"
	SinkFailed = "failed" // a required sink: the run exits 3
	SinkWarned = "warned" // an optional sink failed: a warning, the run goes on
	// SinkPending is a sink a post stage drives that has not posted (yet):
	// `benchrun post RUN_DIR` posts it.
	SinkPending = "pending"
)

// Transient marks err as a failure worth trying again (a webhook's 503,
// a connection reset): the pipeline retries the call with backoff, as
// the sink's retry policy allows. Sinks mark only calls that are safe to
// repeat.
func Transient(err error) error {
	if err == nil {
		return nil
	}
	return &transientError{err}
}

type transientError struct{ err error }

func (e *transientError) Error() string   { return e.err.Error() }
func (e *transientError) Unwrap() error   { return e.err }
func (e *transientError) Transient() bool { return true }

// IsTransient reports whether a sink's failure is worth retrying: marked
// with Transient, a network timeout, or an error a retry commonly cures
// (EAGAIN, EINTR, a reset or refused connection).
func IsTransient(err error) bool {
	var t interface{ Transient() bool }
	if errors.As(err, &t) && t.Transient() {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	for _, e := range []syscall.Errno{syscall.EAGAIN, syscall.EINTR, syscall.ECONNRESET, syscall.ECONNREFUSED, syscall.ETIMEDOUT} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// priorRows reads, once, the rows earlier attempts of a resumed run stored
// (every table of the run directory), for SinkEnv.Prior.
func PriorRows(ri *RunInfo) func() (*Rows, error) {
	if ri == nil || !ri.Resumed {
		return func() (*Rows, error) { return nil, nil }
	}
	return sync.OnceValues(func() (*Rows, error) { return ReadRows(ri.Dir) })
}

// ReadRows reads every table of a run directory (every attempt's rows, in
// the order they were stored) through the run-directory reader.
func ReadRows(dir string) (*Rows, error) {
	run, err := rundir.Open(dir)
	if err != nil {
		return nil, err
	}
	return run.Rows()
}
