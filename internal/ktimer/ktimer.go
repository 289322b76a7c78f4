// Package ktimer is a timer that wakes a goroutine at the kernel timer's
// precision rather than the Go runtime's.
//
// Why: on Linux the runtime waits for its timers in the network poller
// (epoll_wait) with a timeout in whole milliseconds, at least 1 ms, so
// on a process with nothing else to do a timer fires up to a millisecond
// late whatever it asked for; a sender keeping a schedule through
// time.Timer is that late at p99 on an idle machine. A timerfd that the
// poller watches wakes it when the kernel's timer expires: the goroutine
// still parks in the poller (no thread is held), and the wake costs a few
// system calls instead of none. Elsewhere, and where a timerfd cannot be
// had, it is a time.Timer.
package ktimer

import (
	"context"
	"time"
)

// early is how early a wake may come and count as on time: a wake
// before due-early sleeps again for the rest.
const early = 2 * time.Microsecond

// Timer wakes its one caller at a time it asks for. Not for use by two
// goroutines at once.
type Timer struct {
	// PreciseFrom is the shortest wait the kernel timer is used for;
	// shorter ones use the runtime's timers. Zero: every wait is precise.
	PreciseFrom time.Duration

	ctx      context.Context
	k        kernelTimer // made at the first precise wait
	noKernel bool        // none could be made, or one failed: the runtime's timers
	t        *time.Timer
}

// kernelTimer is the platform's precise timer: wait blocks until d has
// passed (ok) or it cannot (ok false: use the runtime's timer instead).
type kernelTimer interface {
	wait(d time.Duration) (ok bool)
	close()
}

// New returns a timer whose sleeps end early when ctx ends. Its kernel
// timer (an open file on Linux) is made at its first wait of PreciseFrom
// or longer, so a timer whose waits are all shorter holds none.
func New(ctx context.Context) *Timer {
	return &Timer{ctx: ctx}
}

// Precise reports whether the timer wakes at the kernel timer's
// precision for waits of PreciseFrom and longer (false: the Go
// runtime's timers), making its kernel timer if it has none yet.
func (t *Timer) Precise() bool { return t.kernel() != nil }

// kernel returns the kernel timer, made on first use (nil: none).
func (t *Timer) kernel() kernelTimer {
	if t.k == nil && !t.noKernel {
		t.k = newKernelTimer(t.ctx)
		t.noKernel = t.k == nil
	}
	return t.k
}

// SleepUntil waits until due; false: ctx ended first.
func (t *Timer) SleepUntil(due time.Time) bool {
	for {
		if t.ctx.Err() != nil {
			return false
		}
		d := time.Until(due)
		if d <= early {
			return true
		}
		if d >= t.PreciseFrom && t.kernel() != nil {
			if t.k.wait(d) {
				continue // checked again: a wake cut short sleeps the rest
			}
			t.k.close() // it failed once: the runtime's timers from now on
			t.k, t.noKernel = nil, true
		}
		if t.t == nil {
			t.t = time.NewTimer(time.Hour)
			t.t.Stop()
		}
		t.t.Reset(d)
		select {
		case <-t.t.C:
		case <-t.ctx.Done():
			t.t.Stop()
			return false
		}
	}
}

// Stop releases the timer's kernel resources; it must not be used after.
func (t *Timer) Stop() {
	if t.k != nil {
		t.k.close()
		t.k = nil
	}
	t.noKernel = true
	if t.t != nil {
		t.t.Stop()
	}
}
