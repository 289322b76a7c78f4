package loadgen

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// RunClosed runs a closed loop: concurrency sessions, each sending its next
// request when the last one ends, until total requests have been sent or
// ctx ends. next(i) builds request i; onResult receives each result (from
// the session goroutines, so it must be safe for concurrent use).
func RunClosed(ctx context.Context, t *Target, concurrency, total int, next func(i int) Request, onResult func(i int, r Result)) {
	_, _ = Run(ctx, t, Load{Concurrency: concurrency, Requests: total}, next, onResult)
}

// Load is one ladder point's load: a closed loop of Concurrency sessions,
// or, when Schedule is set, an open loop that sends on the schedule.
//
// Sending stops when the target (Requests sent, or Duration since the
// start) is reached and both minimums are met (MLPerf LoadGen's validity
// rule: a run is long enough only after a minimum count and a minimum
// duration). With no target at all, the minimums are the target.
type Load struct {
	Concurrency int
	Schedule    *Schedule
	// MaxInFlight caps requests outstanding at once in an open loop (0: no
	// cap). A request held back by the cap keeps its scheduled time, so the
	// wait shows up in send_lag and ttft_sched instead of vanishing.
	MaxInFlight int
	Requests    int
	Duration    time.Duration
	MinRequests int
	MinDuration time.Duration
	// Counters, when set, is updated as requests are sent and finish (for
	// a progress view).
	Counters *Counters
	// Enough, when set and true, ends the sending as Requests or Duration
	// would (once the minimums are met): the caller has measured what it
	// needed (a sweep's precision target met). Requests in flight finish.
	Enough *atomic.Bool
}

// Counters are live counts of one Run.
type Counters struct {
	Sent, Done, Failed atomic.Int64
	// SendLag, when set, is told each scheduled request's send lag as it
	// finishes (the live metrics); set it before the Run starts.
	SendLag func(time.Duration)
}

// Counts are the counts so far (for pipeline.Live's Pass); sent is read last,
// so that it is never below done + failed.
func (c *Counters) Counts() (sent, done, failed int64) {
	done, failed = c.Done.Load(), c.Failed.Load()
	return c.Sent.Load(), done, failed
}

// finished counts a finished request.
func (c *Counters) finished(r *Result) {
	if r.OK() {
		c.Done.Add(1)
	} else {
		c.Failed.Add(1)
	}
	if c.SendLag != nil && !r.Scheduled.IsZero() {
		c.SendLag(r.SendLag())
	}
}

// Validate reports a load that cannot run or would never stop.
func (l Load) Validate() error {
	if l.Schedule != nil {
		if err := l.Schedule.Validate(); err != nil {
			return err
		}
	} else if l.Concurrency < 1 {
		return fmt.Errorf("concurrency %d: want at least 1", l.Concurrency)
	}
	if l.Schedule != nil && l.Schedule.Trace != nil && l.MinRequests > len(l.Schedule.Trace) {
		return fmt.Errorf("min_requests %d: the trace has %d requests", l.MinRequests, len(l.Schedule.Trace))
	}
	if l.Requests <= 0 && l.Duration <= 0 && l.MinRequests <= 0 && l.MinDuration <= 0 && (l.Schedule == nil || l.Schedule.Trace == nil) {
		return fmt.Errorf("the load has no stop: give requests or a duration")
	}
	if l.Requests < 0 || l.Duration < 0 || l.MinRequests < 0 || l.MinDuration < 0 || l.MaxInFlight < 0 {
		return fmt.Errorf("requests, duration, minimums and max_inflight must not be negative")
	}
	return nil
}

// done reports whether request i, due at offset off, should not be sent.
func (l Load) done(i int, off time.Duration) bool {
	if i < l.MinRequests || off < l.MinDuration {
		return false
	}
	if l.Enough != nil && l.Enough.Load() {
		return true
	}
	if l.Requests > 0 && i >= l.Requests {
		return true
	}
	if l.Duration > 0 && off >= l.Duration {
		return true
	}
	return l.Requests <= 0 && l.Duration <= 0 // only minimums: met
}

// behind is how late an open loop's send may be before the client counts
// as behind its schedule (five times the sweep's default send-lag
// threshold: a GC pause does not trip it), and behindWindow how many
// requests in flight it may add to those it had then before it waits for
// one to end.
const (
	behind       = 25 * time.Millisecond
	behindWindow = 64
)

// RunStats describe one Run.
type RunStats struct {
	Start time.Time // the schedule's origin (monotonic)
	Sent  int
	// Sessions is how many sessions RunSessions started.
	Sessions int
	// InFlightLimit is the ceiling an open loop kept on requests
	// outstanding when the load set no MaxInFlight: the client's own
	// (InFlightLimit). Held counts the requests that waited for it, or,
	// the client being behind its schedule, for a request in flight to
	// end (see behind): the client, not the server, was the limit for
	// them (they left late, which their send lag shows).
	InFlightLimit int
	Held          int
	// Paced counts the requests of an open loop of short requests that
	// waited for one in flight to end because in flight was at what the
	// server had been turning over (see openLoop.paceShort): the server,
	// not the client, was slower than the schedule for them, and they
	// left late (their send lag shows it).
	Paced int
}

// Run sends the load and waits for every request it sent. next(i) builds
// request i (called concurrently by closed-loop sessions, so it must be
// safe for concurrent use); onResult receives each result from the
// goroutine that measured it. When ctx ends, sending stops and requests in
// flight end with the context's error.
func Run(ctx context.Context, t *Target, l Load, next func(i int) Request, onResult func(i int, r Result)) (RunStats, error) {
	defer Loading()() // the collector's goal is the load's while it runs (gc.go)
	if err := l.Validate(); err != nil {
		return RunStats{}, err
	}
	if l.Counters == nil {
		l.Counters = &Counters{}
	}
	c := l.Counters
	finish := func(i int, r Result) {
		c.finished(&r)
		onResult(i, r)
	}
	start := time.Now()
	var wg sync.WaitGroup
	var sent atomic.Int64
	if l.Schedule == nil {
		for s := 0; s < l.Concurrency; s++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					i := int(sent.Add(1) - 1)
					if l.done(i, time.Since(start)) {
						sent.Add(-1)
						return
					}
					c.Sent.Add(1)
					finish(i, t.Do(ctx, next(i)))
				}
			}()
		}
		wg.Wait()
		return RunStats{Start: start, Sent: int(sent.Load())}, nil
	}

	return runOpen(ctx, t, l, start, next, finish)
}
