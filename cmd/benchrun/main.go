// Command benchrun runs LLM-serving benchmarks from CUE plan files.
//
// stdout carries data (CSV rows); stderr carries everything meant for people.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/pprof"
	"sync"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/benchrun/benchrun/internal/loadgen"
	"github.com/benchrun/benchrun/pipeline"
)

// earlySignals holds an interrupt that arrives before the run's own
// handlers are installed (a SIGTERM in the first milliseconds would
// otherwise kill benchrun with 143 and no word): registered as early as
// package main can, taken over by the supervisor or interruptContext.
var earlySignals = make(chan os.Signal, 4)

func init() {
	signal.Notify(earlySignals, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
}

// takeEarlySignals stops the early registration (once the caller's own is
// in place) and returns what it caught.
func takeEarlySignals() []os.Signal {
	signal.Stop(earlySignals)
	var got []os.Signal
	for {
		select {
		case s := <-earlySignals:
			got = append(got, s)
		default:
			return got
		}
	}
}

func main() {
	// A load generator trades memory for its schedule (loadgen.TuneGC);
	// GOGC and GOMEMLIMIT still win. The simulator is the server under
	// test, not the client: it runs as Go sets it, as a real server would.
	if len(os.Args) < 2 || os.Args[1] != "sim" {
		loadgen.TuneGC()
	}
	os.Exit(benchrunMain(os.Args[1:], os.Stdout, os.Stderr))
}

func benchrunMain(args []string, stdout, stderr io.Writer) (code int) {
	// A panic on the way (loading, vetting, the run's own goroutine: a
	// stage's panic is its failure, and the run re-panics once its
	// manifest is finished) is a crash, never a user error: exit 4.
	defer func() {
		if v := recover(); v != nil {
			fmt.Fprintf(stderr, "benchrun: internal error (a bug in benchrun, please report it): panic: %v\n\n%s", v, debug.Stack())
			code = pipeline.ExitInternal
		}
	}()
	// With SIGPIPE handled, a write to a closed stdout returns EPIPE
	// instead of killing benchrun (Go's runtime does that for fds 1 and 2
	// only while SIGPIPE is not notified): a closed pipe (`| head`) stops
	// the CSV, not the run.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	if len(args) > 0 && supervised(args) && stderr == io.Writer(os.Stderr) {
		if code, ok := superviseRun(args, stderr); ok {
			return code
		}
	}
	ctx, stop := interruptContext(stderr)
	defer stop()
	if len(args) == 0 {
		usage(stderr)
		return pipeline.ExitInvalid
	}
	if c, ok := lookup(args[0]); ok {
		rest := args[1:]
		if wantsHelp(rest) && c.name != "help" {
			c.help(stdout)
			return pipeline.ExitOK
		}
		if c.name == "run" {
			out := newCSVOut(stdout, stderr)
			defer out.Close()
			stdout = out
		}
		return c.call(ctx, rest, stdout, stderr)
	}
	switch args[0] {
	case "-h", "--help", "-help":
		usage(stdout)
		return pipeline.ExitOK
	case "--version", "-version", "-v":
		fmt.Fprintln(stdout, versionLine())
		return pipeline.ExitOK
	}
	// `benchrun PLAN ...` is shorthand for `benchrun run PLAN ...`.
	run, _ := lookup("run")
	if wantsHelp(args) {
		run.help(stdout)
		return pipeline.ExitOK
	}
	out := newCSVOut(stdout, stderr)
	defer out.Close()
	return run.call(ctx, args, out, stderr)
}

// supervised reports whether a command runs under a supervising parent
// (supervise_linux.go): runs, whose crash must never exit 2, and the
// tests' crashing commands.
func supervised(args []string) bool {
	if wantsHelp(args) {
		return false // help runs nothing
	}
	name := args[0]
	for _, c := range testCommands {
		if c.name == name {
			return true
		}
	}
	for _, c := range commands() {
		if c.name == name {
			return name == "run"
		}
	}
	switch name {
	case "--version", "-version", "-v":
		return false
	}
	return true // `benchrun PLAN`
}

// csvOut is a run's stdout. Writes never wait for its reader: rows go
// to a bounded queue that a goroutine writes out, so a paused pager, a
// stopped terminal or a slow log shipper never stops the run (a rented
// server staying up while a sweep waits on a pipe). When stdout goes away
// (a reader that closed the pipe: `benchrun PLAN | head -2`) or falls
// more than csvQueueBytes behind, it says so once on stderr and drops what
// follows: the run goes on, and every row is still in the run directory.
type csvOut struct {
	w, stderr io.Writer
	mu        sync.Mutex
	wake      *sync.Cond
	pending   []byte
	writing   bool
	closed    bool // stdout went away or fell behind: rows are dropped
	ended     bool
	started   bool
}

// csvQueueBytes is how far stdout's reader may fall behind before rows on
// stdout are dropped (several thousand rows).
const csvQueueBytes = 8 << 20

// csvDrainWait is how long the end of a run waits for stdout's reader to
// take what is queued.
const csvDrainWait = 5 * time.Second

func newCSVOut(w, stderr io.Writer) *csvOut {
	o := &csvOut{w: w, stderr: stderr}
	o.wake = sync.NewCond(&o.mu)
	return o
}

// Terminal says whether the CSV goes to a terminal (a person reading it
// beside the progress view, not a file or a pipe).
func (o *csvOut) Terminal() bool {
	f, ok := o.w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func (o *csvOut) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed || o.ended {
		return len(p), nil
	}
	if len(o.pending)+len(p) > csvQueueBytes {
		o.closed = true
		o.pending = nil
		fmt.Fprintf(o.stderr, "benchrun: stdout is not being read (%d MiB of CSV waiting: a paused pager or terminal?): no more CSV rows on stdout; the run goes on, and every row is in the run directory (cells.csv)\n", csvQueueBytes>>20)
		return len(p), nil
	}
	o.pending = append(o.pending, p...)
	if !o.started {
		o.started = true
		go o.writeOut()
	}
	o.wake.Broadcast()
	return len(p), nil
}

// writeOut writes what is queued, as the reader takes it.
func (o *csvOut) writeOut() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for {
		for len(o.pending) == 0 && !o.ended {
			o.wake.Wait()
		}
		if len(o.pending) == 0 || o.closed {
			o.writing = false
			o.wake.Broadcast()
			return
		}
		b := o.pending
		o.pending = nil
		o.writing = true
		o.mu.Unlock()
		_, err := o.w.Write(b)
		o.mu.Lock()
		o.writing = false
		if err != nil && !o.closed {
			o.closed = true
			o.pending = nil
			fmt.Fprintf(o.stderr, "benchrun: stdout closed (%v): no more CSV rows on stdout; the run goes on, and every row is in the run directory (cells.csv)\n", err)
		}
		o.wake.Broadcast()
	}
}

// Close waits, up to csvDrainWait, for stdout's reader to take the rows
// queued, and says so when it would not.
func (o *csvOut) Close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ended = true
	o.wake.Broadcast()
	timer := time.AfterFunc(csvDrainWait, func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		if len(o.pending) > 0 || o.writing {
			fmt.Fprintf(o.stderr, "benchrun: stdout did not take the last %d bytes of CSV within %v; every row is in the run directory (cells.csv)\n", len(o.pending), csvDrainWait)
			o.closed, o.pending = true, nil
			o.writing = false
		}
		o.wake.Broadcast()
	})
	defer timer.Stop()
	for o.started && !o.closed && (len(o.pending) > 0 || o.writing) {
		o.wake.Wait()
	}
}

// interruptContext returns a context cancelled by the first SIGINT,
// SIGTERM, SIGHUP (the terminal closed, an SSH session dropped) or
// SIGQUIT (which first dumps every goroutine's stack on stderr, as Go
// would, to show where a run hangs): the pipeline stops starting work,
// cancels running stages, runs finally stages and outputs, stops every
// launched server and exits 130. A second signal SIGKILLs the process
// group of every child (launched servers run in their own groups) and
// exits 130 at once; launched servers also carry a parent-death signal,
// so nothing outlives benchrun.
func interruptContext(stderr io.Writer) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	if early := takeEarlySignals(); len(early) > 0 {
		ch <- early[0]
	}
	done := make(chan struct{})
	go func() {
		var stops stopSignals
		var first os.Signal
		select {
		case first = <-ch:
			stops.add(first, false, time.Now())
		case first = <-forwardedSignals:
			stops.add(first, true, time.Now())
		case <-done:
			return
		}
		if first == syscall.SIGQUIT {
			fmt.Fprintln(stderr, "benchrun: SIGQUIT: the stacks of every goroutine follow; then stopping as on an interrupt")
			_ = pprof.Lookup("goroutine").WriteTo(stderr, 2)
		}
		cancel(&interruptError{sig: first})
		for {
			var second bool
			select {
			case s := <-ch:
				second = stops.add(s, false, time.Now())
			case s := <-forwardedSignals:
				second = stops.add(s, true, time.Now())
			case <-done:
				return
			}
			if second {
				fmt.Fprintln(os.Stderr, "benchrun: second interrupt: killing child process groups and exiting now")
				killChildGroups()
				forceExit(130)
				return
			}
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel(nil)
	}
}

// sameStopWindow is how far apart the two copies of one stop may reach
// the worker: the copy sent to every process (systemctl stop, a cgroup
// kill, kill -- -PGID) and the supervisor's forwarded one, which a loaded
// machine may delay.
const sameStopWindow = 2 * time.Second

// stopSignals counts the stops a worker was sent. A signal that came
// directly and one the supervisor forwarded, of the same kind within
// sameStopWindow of each other, are one stop (one copy of each path
// pairs at most once); two on the same path are two (Ctrl-C twice reaches
// the worker through the supervisor twice).
type stopSignals struct {
	seen []stopSignal
}

type stopSignal struct {
	sig       os.Signal
	forwarded bool
	at        time.Time
	paired    bool
}

// add records a signal and says whether it is a second stop.
func (s *stopSignals) add(sig os.Signal, forwarded bool, at time.Time) bool {
	for i := range s.seen {
		e := &s.seen[i]
		if !e.paired && e.sig == sig && e.forwarded != forwarded && at.Sub(e.at) < sameStopWindow {
			e.paired = true
			return false // the other copy of a stop already counted
		}
	}
	s.seen = append(s.seen, stopSignal{sig: sig, forwarded: forwarded, at: at})
	return len(s.seen) > 1
}

// forceExit is a variable so that the hard exit path is visible in one place.
var forceExit = os.Exit

type interruptError struct{ sig os.Signal }

// Error names the signal as people know it ("interrupted by SIGINT"), not
// as Go spells it ("interrupt", "terminated").
func (e *interruptError) Error() string {
	switch e.sig {
	case os.Interrupt:
		return "interrupted by SIGINT"
	case syscall.SIGTERM:
		return "interrupted by SIGTERM"
	case syscall.SIGHUP:
		return "interrupted by SIGHUP (the terminal closed)"
	case syscall.SIGQUIT:
		return "interrupted by SIGQUIT"
	}
	return "interrupted by " + e.sig.String()
}
