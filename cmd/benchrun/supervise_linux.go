package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/benchrun/benchrun/internal/rundir"
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
// each signal once, as a word on a pipe (interruptFD) rather than as a
// signal: a stop that signals every process (systemctl stop, a CI
// runner's cgroup kill) reaches the worker directly too, and the worker
// must tell the two copies of one stop from a second stop (it took them
// as two in 13 of 16 tries, skipping the finally stages). The worker dies
// with the supervisor (parent-death signal), and its guarded servers with
// it.
const (
	supervisedEnv   = "BENCHRUN_SUPERVISED"    // set in the worker
	noSupervisorEnv = "BENCHRUN_NO_SUPERVISOR" // 1: run in-process (debugging)
	crashFD         = 3                        // the worker's crash pipe
	runDirFD        = 4                        // the worker names its run directory here
	interruptFD     = 5                        // the supervisor forwards signals here
)

// forwardedSignals are the signals the supervisor forwarded (read from
// interruptFD by the worker); nil when this process is not a worker.
var forwardedSignals chan os.Signal

// readForwardedSignals turns the supervisor's words on interruptFD (one
// byte, a signal number, per signal) into forwardedSignals.
func readForwardedSignals() {
	f := os.NewFile(interruptFD, "interrupts")
	if f == nil {
		return
	}
	forwardedSignals = make(chan os.Signal, 4)
	go func() {
		defer f.Close()
		b := make([]byte, 1)
		for {
			if _, err := f.Read(b); err != nil {
				return // the supervisor is gone: the parent-death signal follows
			}
			select {
			case forwardedSignals <- syscall.Signal(b[0]):
			default: // four pending already: the worker is stopping
			}
		}
	}()
}

// announceRunDir tells the supervisor, when there is one, where the run
// writes: a worker killed outright (SIGKILL, the kernel's out-of-memory
// killer) cannot say it, and its manifest would say "running".
func announceRunDir(dir string) {
	if os.Getenv(supervisedEnv) == "" {
		return
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if f := os.NewFile(runDirFD, "rundir"); f != nil {
		_, _ = io.WriteString(f, dir+"\n")
		_ = f.Close()
	}
}

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
		readForwardedSignals()
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
	dr, dw, err := os.Pipe()
	if err != nil {
		_ = pr.Close()
		_ = pw.Close()
		return 0, false
	}
	ir, iw, err := os.Pipe()
	if err != nil {
		for _, f := range []*os.File{pr, pw, dr, dw} {
			_ = f.Close()
		}
		return 0, false
	}
	defer iw.Close()
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), supervisedEnv+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{pw, dw, ir}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGPIPE)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		for _, f := range []*os.File{pr, pw, dr, dw, ir} {
			_ = f.Close()
		}
		return 0, false
	}
	_ = pw.Close()
	_ = dw.Close()
	_ = ir.Close()
	crashed := make(chan bool, 1)
	go func() {
		n, _ := io.Copy(io.Discard, pr)
		crashed <- n > 0
	}()
	runDir := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(dr, 1<<16))
		runDir <- strings.TrimSpace(string(b))
	}()
	forwarded := map[os.Signal]bool{}
	for _, s := range takeEarlySignals() {
		sigs <- s
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	for {
		select {
		case s := <-sigs:
			if s == syscall.SIGPIPE {
				continue // the worker handles its own stdout
			}
			forwarded[s] = true
			if sig, ok := s.(syscall.Signal); !ok || sig > 255 {
				_ = cmd.Process.Signal(s)
			} else if _, err := iw.Write([]byte{byte(sig)}); err != nil {
				_ = cmd.Process.Signal(s) // the worker closed its end
			}
		case err := <-waited:
			didCrash := <-crashed
			_ = pr.Close()
			dir := <-runDir
			_ = dr.Close()
			code := 0
			var ee *exec.ExitError
			switch {
			case err == nil:
			case errors.As(err, &ee):
				ws, ok := ee.Sys().(syscall.WaitStatus)
				switch {
				case ok && ws.Signaled() && forwarded[ws.Signal()]:
					// An interrupt forwarded before the worker could take
					// it (its first milliseconds): interrupted, as always.
					code = pipeline.ExitInterrupted
				case ok && ws.Signaled():
					// Killed from outside, with no word of its own.
					workerKilled(stderr, ws.Signal(), dir)
					code = pipeline.ExitInternal
				default:
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
