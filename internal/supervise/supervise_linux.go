package supervise

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
)

// A Go runtime fatal error (a stack overflow, concurrent map writes, out
// of memory) cannot be recovered and always exits 2, the code of an
// invalid plan. So a run is supervised: benchrun re-executes itself as the
// run's worker and waits. The worker writes any fatal error to a pipe as
// well as to stderr (debug.SetCrashOutput), and a worker that crashed is
// told from one that exited (benchrun exits 4, an internal error, never
// 2). The worker keeps the terminal as its stdout and stderr (the live
// view still draws) in a process group of its own, so a terminal's Ctrl-C
// reaches only the supervisor, which forwards each signal once, as a word
// on a pipe (interruptFD) rather than as a signal: a stop that signals
// every process (systemctl stop, a CI runner's cgroup kill) reaches the
// worker directly too, and the worker must tell the two copies of one stop
// from a second stop (it took them as two in 13 of 16 tries, skipping the
// finally stages). The worker dies with the supervisor (parent-death
// signal), and its guarded servers with it.
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

// AnnounceRunDir tells the supervisor, when there is one, where the run
// writes: a worker killed outright (SIGKILL, the kernel's out-of-memory
// killer) cannot say it, and its manifest would say "running".
func AnnounceRunDir(dir string) {
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

// Outcome is how a supervised worker ended.
type Outcome struct {
	// ExitCode is its exit status, when it exited.
	ExitCode int
	// Signal is what killed it: an interrupt the supervisor forwarded
	// before the worker could take it (Forwarded, its first
	// milliseconds), or a signal from outside, with no word of its own.
	Signal    os.Signal
	Forwarded bool
	// Crashed: it wrote a Go fatal error (on its stderr, and the crash
	// pipe).
	Crashed bool
	// RunDir is the run directory it said it writes ("" before it made
	// one).
	RunDir string
	// WaitErr is a failure to wait for it.
	WaitErr error
}

// Run runs args in a worker (this binary re-executed) and returns how it
// ended, or ok=false when this process should run them itself (it is the
// worker, or supervision is off or impossible).
func Run(args []string) (o Outcome, ok bool) {
	if os.Getenv(supervisedEnv) != "" {
		if f := os.NewFile(crashFD, "crash"); f != nil {
			if err := debug.SetCrashOutput(f, debug.CrashOptions{}); err == nil {
				_ = f.Close() // SetCrashOutput keeps its own duplicate
			}
		}
		readForwardedSignals()
		return Outcome{}, false
	}
	if os.Getenv(noSupervisorEnv) == "1" {
		return Outcome{}, false
	}
	exe, err := os.Executable()
	if err != nil {
		return Outcome{}, false
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return Outcome{}, false
	}
	dr, dw, err := os.Pipe()
	if err != nil {
		_ = pr.Close()
		_ = pw.Close()
		return Outcome{}, false
	}
	ir, iw, err := os.Pipe()
	if err != nil {
		for _, f := range []*os.File{pr, pw, dr, dw} {
			_ = f.Close()
		}
		return Outcome{}, false
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
		return Outcome{}, false
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
			o.Crashed = <-crashed
			_ = pr.Close()
			o.RunDir = <-runDir
			_ = dr.Close()
			var ee *exec.ExitError
			switch {
			case err == nil:
			case errors.As(err, &ee):
				if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
					o.Signal, o.Forwarded = ws.Signal(), forwarded[ws.Signal()]
				} else {
					o.ExitCode = ee.ExitCode()
				}
			default:
				o.WaitErr = err
			}
			return o, true
		}
	}
}
