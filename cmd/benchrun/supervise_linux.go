package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/benchrun/benchrun/pipeline"
)

// A Go runtime fatal error (a stack overflow, concurrent map writes, out
// of memory) cannot be recovered and always exits 2, the code of an
// invalid plan. So a run is supervised: benchrun re-executes itself as
// the run's worker and waits. The worker writes any fatal error to a pipe
// as well as to stderr (debug.SetCrashOutput), and a worker that crashed
// exits 4 (internal error), never 2. The worker keeps the terminal as its
// stdout and stderr (the live view still draws) in a process group of its
// own, so a terminal's Ctrl-C reaches only the supervisor, which forwards
// each signal once; the worker dies with the supervisor (parent-death
// signal), and its guarded servers with it.
const (
	supervisedEnv   = "BENCHRUN_SUPERVISED"    // set in the worker
	noSupervisorEnv = "BENCHRUN_NO_SUPERVISOR" // 1: run in-process (debugging)
	crashFD         = 3                        // the worker's crash pipe
)

// superviseRun runs args in a worker and returns its exit code, or
// ok=false when this process should run them itself (it is the worker,
// or supervision is off or impossible).
func superviseRun(args []string, stderr io.Writer) (code int, ok bool) {
	if os.Getenv(supervisedEnv) != "" {
		if f := os.NewFile(crashFD, "crash"); f != nil {
			if err := debug.SetCrashOutput(f, debug.CrashOptions{}); err == nil {
				_ = f.Close() // SetCrashOutput keeps its own duplicate
			}
		}
		return 0, false
	}
	if os.Getenv(noSupervisorEnv) == "1" {
		return 0, false
	}
	exe, err := os.Executable()
	if err != nil {
		return 0, false
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return 0, false
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), supervisedEnv+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{pw}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGPIPE)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		_ = pr.Close()
		_ = pw.Close()
		return 0, false
	}
	_ = pw.Close()
	crashed := make(chan bool, 1)
	go func() {
		n, _ := io.Copy(io.Discard, pr)
		crashed <- n > 0
	}()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	for {
		select {
		case s := <-sigs:
			if s == syscall.SIGPIPE {
				continue // the worker handles its own stdout
			}
			_ = cmd.Process.Signal(s)
		case err := <-waited:
			didCrash := <-crashed
			_ = pr.Close()
			code := 0
			var ee *exec.ExitError
			switch {
			case err == nil:
			case errors.As(err, &ee):
				if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
					code = 128 + int(ws.Signal())
				} else {
					code = ee.ExitCode()
				}
			default:
				fmt.Fprintf(stderr, "benchrun: waiting for the run: %v\n", err)
				code = pipeline.ExitInternal
			}
			if didCrash {
				fmt.Fprintf(stderr, "benchrun: internal error (a bug in benchrun, please report it): the run crashed with a Go fatal error (above), exit %d; every finished row is in the run directory\n", code)
				code = pipeline.ExitInternal
			}
			return code, true
		}
	}
}
