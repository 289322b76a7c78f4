package main

import (
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/benchrun/benchrun/internal/rundir"
	"github.com/benchrun/benchrun/internal/supervise"
	"github.com/benchrun/benchrun/pipeline"
)

// superviseRun runs args in a worker (internal/supervise) and returns
// the exit code its end makes, or ok=false when this process should run
// them itself (it is the worker, or supervision is off or impossible). A
// worker that crashed or was killed from outside exits 4, never the 2 a
// Go fatal error exits with.
func superviseRun(args []string, stderr io.Writer) (code int, ok bool) {
	o, ok := supervise.Run(args)
	if !ok {
		return 0, false
	}
	code = o.ExitCode
	switch {
	case o.WaitErr != nil:
		fmt.Fprintf(stderr, "benchrun: waiting for the run: %v\n", o.WaitErr)
		code = pipeline.ExitInternal
	case o.Signal != nil && o.Forwarded:
		// An interrupt forwarded before the worker could take it (its
		// first milliseconds): interrupted, as always.
		code = pipeline.ExitInterrupted
	case o.Signal != nil:
		// Killed from outside, with no word of its own.
		workerKilled(stderr, o.Signal, o.RunDir)
		code = pipeline.ExitInternal
	}
	if o.Crashed {
		fmt.Fprintf(stderr, "benchrun: internal error (a bug in benchrun, please report it): the run crashed with a Go fatal error (above), exit %d; every finished row is in the run directory\n", code)
		code = pipeline.ExitInternal
	}
	return code, true
}

// workerKilled says what happened to a worker killed by sig from outside
// benchrun, and marks its run directory's manifest crashed: the worker
// had no chance to (its manifest would say "running" until a resume).
func workerKilled(stderr io.Writer, sig os.Signal, dir string) {
	why := fmt.Sprintf("the run's worker was killed by %s", signalName(sig))
	if sig == syscall.SIGKILL {
		why += " (out of memory? the kernel's out-of-memory killer sends SIGKILL; dmesg says)"
	}
	if dir == "" {
		fmt.Fprintf(stderr, "benchrun: %s before it made its run directory\n", why)
		return
	}
	fmt.Fprintf(stderr, "benchrun: %s; every finished row is in %s (benchrun PLAN --resume %s goes on from them)\n", why, dir, dir)
	if err := rundir.MarkCrashed(dir, why, pipeline.ExitInternal, time.Now()); err != nil {
		fmt.Fprintf(stderr, "benchrun: marking the run crashed: %v\n", err)
	}
}

func signalName(sig os.Signal) string {
	if s, ok := sig.(syscall.Signal); ok {
		switch s {
		case syscall.SIGKILL:
			return "SIGKILL"
		case syscall.SIGTERM:
			return "SIGTERM"
		case syscall.SIGSEGV:
			return "SIGSEGV"
		case syscall.SIGABRT:
			return "SIGABRT"
		}
	}
	return sig.String()
}
