// Package procrun runs the programs benchrun's stages start: a server
// (launch), a cloud CLI (provision), a setup command, a benchmark binary.
// Every program runs the same way:
//
//   - in its own process group, led by a guard (benchrun re-executed) that
//     kills every process below it when the program ends or when benchrun
//     dies, even by SIGKILL (see guard.go);
//   - with its stdout and stderr appended to a log file of its own, each
//     start marked in it, so that a failure carries the log's tail;
//   - stopped with SIGINT, then SIGTERM, then SIGKILL, with a grace
//     between them, each escalation said on the progress writer and in the
//     log, and nothing of the tree left afterwards.
//
// Start is for a program that runs alongside the stages (a server); Run
// is for a command that runs to its end, bounded by a timeout and by its
// context, whose failure is an *Error with the cause wrapped and the log's
// tail attached. The package imports nothing of the pipeline: any stage
// kind, and benchrun's own main, can use it.
package procrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/benchrun/benchrun/internal/redact"
)

// Spec says what to run and where its output goes.
type Spec struct {
	// Argv is the program and its arguments; argv[0] is looked up in
	// PATH. CommandLine builds it from a plan's cmd and shell.
	Argv []string
	// Env is the program's whole environment; nil is benchrun's own.
	Env []string
	// Dir is the working directory; "" is benchrun's.
	Dir string
	// LogPath is the program's log: its stdout and stderr are appended
	// there, after a "benchrun: starting ..." line; "" is no log.
	LogPath string
	// Stdout and Stderr, when set, take that stream instead of the log (a
	// command whose stdout is parsed, say).
	Stdout, Stderr io.Writer
	// Shown is the command line as the log shows it (secrets masked);
	// "" is Argv joined, with every registered secret masked.
	Shown string

	// Name prefixes what the progress writer is told ("  server: still
	// running ..."): the stage's name.
	Name string
	// Noun is what the log calls the program ("server", "setup[0]
	// command"); "" is "process".
	Noun string
	// Progress is where a stop's escalations are said; nil is nowhere.
	Progress io.Writer

	// Graces are how long Run waits after SIGINT and after SIGTERM when
	// its context ends or its timeout passes. Zero graces send the three
	// signals back to back; DefaultGraces suits a command.
	Graces Graces

	// OutlivesBenchrun runs the program without the guard, in a process
	// group of its own but with no parent-death signal: it lives on if
	// benchrun is killed. It is the one exception to "no process outlives
	// benchrun", for a command that must finish whatever happens to
	// benchrun (provision's teardown: cut short, the machine would go on
	// billing). Timeouts and stops work as for any program.
	OutlivesBenchrun bool
}

// Graces are the waits of a stop: after SIGINT, then after SIGTERM;
// SIGKILL follows. IntName and TermName name the settings that set them
// ("stop_grace"), for the log line that says SIGKILL was needed.
type Graces struct {
	Int, Term         time.Duration
	IntName, TermName string
}

// DefaultGraces are a command's graces when nothing configures them.
var DefaultGraces = Graces{Int: 5 * time.Second, Term: 5 * time.Second}

// killGrace is how long a stop waits for the process to end after SIGKILL.
const killGrace = 5 * time.Second

// ErrTimeout is the cause of a Run whose timeout passed.
var ErrTimeout = errors.New("timed out")

// CommandLine turns a plan's cmd into argv: with shell, the words joined
// with spaces and run by /bin/sh -c; otherwise as given, except that
// "benchrun" is this very binary (the built-in simulator, say, so that a
// plan works from `go run` and from any install location).
func CommandLine(cmd []string, shell bool) []string {
	if shell {
		return []string{"/bin/sh", "-c", strings.Join(cmd, " ")}
	}
	argv := append([]string(nil), cmd...)
	if len(argv) > 0 && argv[0] == "benchrun" {
		if self, err := os.Executable(); err == nil {
			argv[0] = self
		}
	}
	return argv
}

// Process is one started program.
type Process struct {
	spec Spec
	cmd  *exec.Cmd
	pid  int // the guard's (or, unguarded, the program's): the process group's id
	done chan struct{}
	err  error // cmd.Wait's, once done is closed

	stopMu sync.Mutex // one stop at a time
}

// Start starts the program in its own process group under the guard
// (unless spec.OutlivesBenchrun), its output appended to spec.LogPath.
// It returns once the program has started; Done tells when it ends. An
// error wraps its cause.
func Start(spec Spec) (*Process, error) {
	if len(spec.Argv) == 0 || spec.Argv[0] == "" {
		return nil, errors.New("starting a program: the command is empty")
	}
	bin, err := exec.LookPath(spec.Argv[0])
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", spec.Argv[0], err)
	}
	env := spec.Env
	if env == nil {
		env = os.Environ()
	}
	env = append([]string(nil), env...)
	var cmd *exec.Cmd
	if spec.OutlivesBenchrun {
		cmd = exec.Command(bin, spec.Argv[1:]...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	} else {
		if cmd, err = guardCommand(append([]string{bin}, spec.Argv[1:]...)); err != nil {
			return nil, err
		}
		env = append(env, guardEnv+"=1", guardParentEnv+"="+strconv.Itoa(os.Getpid()))
	}
	cmd.Env, cmd.Dir = env, spec.Dir
	// A file, not a pipe: a program never blocks on benchrun. The child
	// holds its own copy of the descriptor.
	var out io.Writer
	var copied chan struct{} // closed when the redacting copier is done
	var pipeW *os.File
	if spec.LogPath != "" {
		logf, err := os.OpenFile(spec.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("opening the log of %s: %w", spec.Argv[0], err)
		}
		shown := spec.Shown
		if shown == "" {
			shown = redact.String(strings.Join(spec.Argv, " "))
		}
		fmt.Fprintf(logf, "%s%s\n", startMarker, shown)
		out = logf
		if redact.Any() {
			// The run sends secrets: the program's output is masked as it
			// is written, so a key a server prints never reaches the file,
			// even if benchrun is killed before its end-of-run scrub. A
			// copier that keeps reading (a pipe is drained at once, so the
			// program does not block on benchrun while it runs).
			pr, pw, err := os.Pipe()
			if err != nil {
				logf.Close()
				return nil, fmt.Errorf("opening the log of %s: %w", spec.Argv[0], err)
			}
			copied = make(chan struct{})
			go func() {
				defer close(copied)
				defer logf.Close()
				defer pr.Close()
				rw := redact.NewWriter(logf)
				_, _ = io.Copy(rw, pr)
				_ = rw.Flush()
			}()
			out, pipeW = pw, pw
		} else {
			defer logf.Close()
		}
	}
	cmd.Stdout, cmd.Stderr = out, out
	if spec.Stdout != nil {
		cmd.Stdout = spec.Stdout
	}
	if spec.Stderr != nil {
		cmd.Stderr = spec.Stderr
	}
	// Writers that are not files are fed through pipes; one a leftover
	// child still holds must not hold Wait up.
	cmd.WaitDelay = time.Second
	err = cmd.Start()
	if pipeW != nil {
		pipeW.Close() // the program holds its own copy
	}
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", spec.Argv[0], err)
	}
	p := &Process{spec: spec, cmd: cmd, pid: cmd.Process.Pid, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		if copied != nil {
			// The log's last lines (a failure's tail) are read once Done
			// is closed: let the copier write them, unless a leftover
			// holds the pipe open.
			select {
			case <-copied:
			case <-time.After(time.Second):
			}
		}
		if errors.Is(err, exec.ErrWaitDelay) && cmd.ProcessState != nil && cmd.ProcessState.Success() {
			err = nil // it succeeded; a leftover held its output open
		}
		// Nothing of the group stays behind: the guard killed what was below
		// it; this is for an unguarded program's leftovers, and a guard
		// that was killed. (A group with a live member keeps its id, so
		// the id cannot name another process's group yet.)
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
		p.err = err
		close(p.done)
	}()
	return p, nil
}

// Pid is the process group's id: the guard's pid (the program's own when
// unguarded). Signals for the program go to the group.
func (p *Process) Pid() int { return p.pid }

// Done is closed when the program has ended and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Wait waits for the program to end and returns how: nil for exit status
// 0, else the *exec.ExitError (wrapped) or the wait's error.
func (p *Process) Wait() error {
	<-p.done
	return p.err
}

// ExitStatus says how the program ended: "exit status 3", "signal:
// killed", or "still running".
func (p *Process) ExitStatus() string {
	select {
	case <-p.done:
		if p.err != nil {
			return p.err.Error()
		}
		return "exit status 0"
	default:
		return "still running"
	}
}

// Stop sends SIGINT, then SIGTERM, then SIGKILL to the process group,
// waiting g.Int and g.Term between them (the guard passes the first two on
// to descendants that left the group), and finally kills whatever is left
// below the guard. Each escalation is said on spec.Progress and in the
// log; that SIGKILL was needed is recorded in the log. An ended ctx cuts
// the graces short. Stop returns once the program has ended (nil when it
// had already); an error means it did not end after SIGKILL.
func (p *Process) Stop(ctx context.Context, g Graces) error {
	p.stopMu.Lock()
	defer p.stopMu.Unlock()
	select {
	case <-p.done:
		return nil
	default:
	}
	// Nothing of the tree lingers, whatever happens below.
	defer killTree(p.pid, true)
	steps := []struct {
		sig   syscall.Signal
		name  string
		grace time.Duration
	}{{syscall.SIGINT, "SIGINT", g.Int}, {syscall.SIGTERM, "SIGTERM", g.Term}, {syscall.SIGKILL, "SIGKILL", killGrace}}
	start := time.Now()
	for i, st := range steps {
		select {
		case <-p.done:
			return nil
		default:
		}
		if i > 0 {
			prev := steps[i-1]
			msg := fmt.Sprintf("still running %s after %s; sending %s", time.Since(start).Round(time.Millisecond), prev.name, st.name)
			p.say(msg)
			p.logLine("benchrun: " + p.noun() + " " + msg)
			start = time.Now()
		}
		if st.sig == syscall.SIGKILL {
			// Below the guard first: once the guard is gone, its orphans
			// would leave the tree.
			killTree(p.pid, true)
			p.logLine(fmt.Sprintf("benchrun: SIGKILL was needed to stop the %s: it ignored SIGINT (%s) and SIGTERM (%s)",
				p.noun(), named(g.IntName, g.Int), named(g.TermName, g.Term)))
		}
		if err := syscall.Kill(-p.pid, st.sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("signalling the %s (process group %d): %w", p.noun(), p.pid, err)
		}
		timer := time.NewTimer(st.grace)
		select {
		case <-p.done:
			timer.Stop()
			return nil
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
		}
	}
	select {
	case <-p.done:
		return nil
	default:
		return fmt.Errorf("the %s (process group %d) did not exit after SIGKILL", p.noun(), p.pid)
	}
}

func named(name string, d time.Duration) string {
	if name == "" {
		return d.String()
	}
	return name + " " + d.String()
}

func (p *Process) noun() string {
	if p.spec.Noun == "" {
		return "process"
	}
	return p.spec.Noun
}

// say writes a line to the progress writer, under the spec's name.
func (p *Process) say(msg string) {
	if p.spec.Progress == nil {
		return
	}
	if p.spec.Name != "" {
		msg = p.spec.Name + ": " + msg
	}
	fmt.Fprintf(p.spec.Progress, "  %s\n", msg)
}

// logLine appends a line of benchrun's own to the program's log.
func (p *Process) logLine(line string) {
	if p.spec.LogPath == "" {
		return
	}
	if f, err := os.OpenFile(p.spec.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
		fmt.Fprintln(f, line)
		f.Close()
	}
}

// Run runs a command to its end: started as Start starts it, stopped as
// Stop stops it (with spec.Graces) when ctx ends or timeout passes (0: no
// timeout of its own). It returns once the command has ended and nothing
// of its process group or tree is left, a child that started its own
// session included. A command that fails, times out or is stopped gives
// an *Error wrapping the cause (the *exec.ExitError, ErrTimeout, ctx's
// cause) with the log's tail.
func Run(ctx context.Context, spec Spec, timeout time.Duration) error {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, timeout, fmt.Errorf("%w after %s", ErrTimeout, timeout))
		defer cancel()
	}
	p, err := Start(spec)
	if err != nil {
		return &Error{Err: err}
	}
	var cause error
	select {
	case <-p.done:
	case <-ctx.Done():
		select {
		case <-p.done: // it ended as ctx did: its own status tells
		default:
			cause = context.Cause(ctx)
			_ = p.Stop(context.WithoutCancel(ctx), spec.Graces)
		}
	}
	err = p.Wait()
	if cause != nil {
		err = cause
	}
	if err == nil {
		return nil
	}
	return Failed(err, spec.LogPath)
}

// Error is a program's failure: the cause and what the program's log
// says about it.
type Error struct {
	Err        error  // the cause: an *exec.ExitError, ErrTimeout, a context's cause, a start failure
	Log        string // the log's path; "" when there is none
	Tail       string // the last lines of the log's last start, "  | "-indented
	FirstError string // the log's first line that looks like an error, when Tail lacks it
}

// Failed builds the Error for cause from the log at logPath: the last
// lines its last start wrote, and their first error line.
func Failed(cause error, logPath string) *Error {
	e := &Error{Err: cause, Log: logPath, Tail: startTail(logPath, TailLines)}
	if first := FirstErrorLine(logPath); first != "" && !strings.Contains(e.Tail+"\n", "  | "+first+"\n") {
		e.FirstError = first
	}
	return e
}

// Error is the cause, the first error line, and the tail on the lines
// after the first: "exit status 2; first error in x.log: ...; last lines
// of x.log:\n  | ...". A progress view that shows one line shows the
// cause; Detail is the rest.
func (e *Error) Error() string {
	msg := e.Err.Error()
	base := filepath.Base(e.Log)
	if e.FirstError != "" {
		msg += fmt.Sprintf("; first error in %s: %s", base, cut(e.FirstError, 300))
	}
	if e.Tail != "" {
		msg += fmt.Sprintf("; last lines of %s:\n%s", base, e.Tail)
	}
	return msg
}

// Unwrap is the cause.
func (e *Error) Unwrap() error { return e.Err }

// Detail is the log's tail ("" when there is none): what a person needs
// below the error's first line.
func (e *Error) Detail() string { return e.Tail }

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
