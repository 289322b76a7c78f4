package pipeline

import "errors"

// Exit codes (docs/DESIGN.md).
const (
	ExitOK        = 0 // every assertion holds
	ExitAssertion = 1 // an assertion or regression failed
	ExitInvalid   = 2 // the plan or the command line is invalid
	ExitInfra     = 3 // infrastructure failed (server, health, sink)
	ExitInternal  = 4 // benchrun itself crashed (a panic): a bug, never a user error
	// ExitInconclusive: nothing failed, but a check was inconclusive (the
	// machine's own lateness could explain it) and the plan or
	// --inconclusive says inconclusive fails.
	ExitInconclusive = 5
	ExitInterrupted  = 130 // interrupted; finally stages and sinks still ran
)

// ExitError is an error that carries the exit code benchrun should return.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// ExitCode returns the exit code carried by err (ExitInfra when it carries none).
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	return ExitInfra
}
