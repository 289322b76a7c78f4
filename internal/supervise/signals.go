package supervise

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/benchrun/benchrun/internal/procrun"
)

// earlySignals holds an interrupt that arrives before the run's own
// handlers are installed (a SIGTERM in the first milliseconds would
// otherwise kill benchrun with 143 and no word): registered as early as
// a program can, taken over by the supervisor or InterruptContext.
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

// InterruptContext returns a context cancelled by the first SIGINT,
// SIGTERM, SIGHUP (the terminal closed, an SSH session dropped) or
// SIGQUIT (which first dumps every goroutine's stack on stderr, as Go
// would, to show where a run hangs): the pipeline stops starting work,
// cancels running stages, runs finally stages and outputs, stops every
// launched server and exits 130. A second signal SIGKILLs the process
// group of every child (launched servers run in their own groups) and
// exits 130 at once; launched servers also carry a parent-death signal,
// so nothing outlives benchrun.
func InterruptContext(stderr io.Writer) (context.Context, func()) {
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
				procrun.KillChildGroups()
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
