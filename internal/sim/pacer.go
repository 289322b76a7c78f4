package sim

import (
	"container/heap"
	"sync"
	"time"
)

// The pacer wakes fixed mode's streams at their absolute deadlines with
// the kernel's precision. A Go timer cannot: a process idle in its
// network poller waits there with a timeout in whole milliseconds
// (runtime/netpoll_epoll.go), so a timer due in 0.3 ms wakes up to a
// millisecond late, by an amount that depends on where the deadline
// falls within the millisecond. Gaps due every 5 ms then read 4.3 or
// 5.3 ms, and a 10 % slower --itl moved the median gap by a few percent
// only. The pacer arms one kernel timer (a timerfd on Linux, watched by
// the same poller) for the earliest deadline of all streams; its expiry
// makes the poller return at once, whatever its timeout.
//
// Waking an idle process still takes time (on a VM, a hypervisor exit:
// tens to a couple of hundred microseconds), which a single stream's
// TTFT would read as the server's. So the pacer learns that latency
// (the running median of how late its alarm woke it) and sets the alarm
// that much early; when it wakes before the next deadline it waits the
// rest on the CPU, from a budget of spinShare of the time, so that a
// busy pacer (thousands of streams, a deadline every few microseconds)
// costs no more than that. A wait is never ended before its deadline.
//
// One pacer serves every simulator in the process (a test may run
// several): it starts with the first wait and lives as long as the
// process.
type pacer struct {
	mu    sync.Mutex
	waits waitHeap
	// armed is the deadline the alarm is set for; zero when it is not set
	// (or has fired and not been set again).
	armed time.Time
	alarm alarm
	// alarmAt is when the alarm is set to go off (armed, or lead before
	// it); learn says whether its wake-up measures the wake latency (it
	// was set for a moment far enough ahead).
	alarmAt time.Time
	learn   bool
	// lead is the running median of the wake latency, how early the
	// alarm is set when the budget can pay for waiting out the rest.
	lead time.Duration
	// budget is the CPU time the pacer may still spend waiting on the
	// CPU; it grows by spinShare of the time that passes (toppedUp).
	budget   time.Duration
	toppedUp time.Time
}

const (
	// maxLead bounds lead: a wake later than this is a busy machine, not
	// the cost of waking an idle one.
	maxLead = 300 * time.Microsecond
	// leadStep is how far one wake moves lead toward the median.
	leadStep = 2 * time.Microsecond
	// minLearn is how far ahead an alarm must be set for its wake to
	// count as a measurement of the wake latency.
	minLearn = 500 * time.Microsecond
	// spinShare is the share of time the pacer may spend waiting on the
	// CPU for a deadline it woke early for, and maxBudget what it may
	// save up.
	spinShare = 0.05
	maxBudget = 5 * time.Millisecond
)

// An alarm fires once, after the duration it was last set to.
type alarm interface {
	// set (re)arms the alarm to fire d from now (d > 0); an expiry not
	// yet waited for is forgotten.
	set(d time.Duration)
	// wait blocks until the alarm fires.
	wait()
}

// A pacerWait is one stream's wait for its next deadline: the pacer
// sends on ch when the deadline comes. ch has room for one wake, so that
// the stream's other wake-up (its request ended, the server closed) can
// use it too without blocking.
type pacerWait struct {
	at    time.Time
	ch    chan struct{}
	index int // in the heap; -1 when not in it
}

func newPacerWait() *pacerWait { return &pacerWait{ch: make(chan struct{}, 1), index: -1} }

// poke wakes the waiter now (for a reason of its own; it checks why).
func (w *pacerWait) poke() {
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

var (
	thePacer     *pacer
	thePacerOnce sync.Once
)

// sharedPacer is the process's pacer, started on first use.
func sharedPacer() *pacer {
	thePacerOnce.Do(func() {
		thePacer = &pacer{alarm: newAlarm()}
		go thePacer.run()
	})
	return thePacer
}

// add makes the pacer wake w at at. w must not be waiting already.
func (p *pacer) add(w *pacerWait, at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	w.at = at
	heap.Push(&p.waits, w)
	p.arm()
}

// remove takes w out of the pacer's waits, if it is still there (a
// stream that was woken for another reason).
func (p *pacer) remove(w *pacerWait) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if w.index >= 0 {
		heap.Remove(&p.waits, w.index)
	}
}

// arm sets the alarm for the earliest deadline (lead early when the
// budget allows) unless it is set for that one or an earlier one
// already. The caller holds mu.
func (p *pacer) arm() {
	if len(p.waits) == 0 {
		return
	}
	at := p.waits[0].at
	if !p.armed.IsZero() && !at.Before(p.armed) {
		return
	}
	p.armed, p.alarmAt = at, at
	if p.budget >= p.lead {
		p.alarmAt = at.Add(-p.lead)
	}
	d := time.Until(p.alarmAt)
	p.learn = d >= minLearn
	p.alarm.set(max(d, time.Nanosecond))
}

func (p *pacer) run() {
	for {
		p.alarm.wait()
		p.fire()
	}
}

// fire learns from how late the alarm woke, waits out on the CPU what is
// left before the earliest deadline (within the budget), wakes every
// wait that is due, never one before its time, and arms the alarm for
// the next.
func (p *pacer) fire() {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if p.learn {
		if now.Sub(p.alarmAt) > p.lead {
			p.lead = min(p.lead+leadStep, maxLead)
		} else {
			p.lead = max(p.lead-leadStep, 0)
		}
	}
	if !p.toppedUp.IsZero() {
		p.budget = min(p.budget+time.Duration(spinShare*float64(now.Sub(p.toppedUp))), maxBudget)
	}
	p.toppedUp = now
	p.armed, p.alarmAt, p.learn = time.Time{}, time.Time{}, false
	if len(p.waits) > 0 {
		if rest := p.waits[0].at.Sub(now); rest > 0 && rest <= p.lead && rest <= p.budget {
			// Woken early on purpose: the rest is shorter than a wake-up.
			// The lock is let go meanwhile, so that streams can add their
			// next deadlines.
			at := p.waits[0].at
			p.mu.Unlock()
			for time.Now().Before(at) {
			}
			p.mu.Lock()
			spun := time.Since(now)
			p.budget = max(p.budget-spun, 0)
			now = time.Now()
		}
	}
	for len(p.waits) > 0 && !p.waits[0].at.After(now) {
		heap.Pop(&p.waits).(*pacerWait).poke()
	}
	p.arm()
}

// waitHeap orders waits by deadline.
type waitHeap []*pacerWait

func (h waitHeap) Len() int           { return len(h) }
func (h waitHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h waitHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *waitHeap) Push(x any) {
	w := x.(*pacerWait)
	w.index = len(*h)
	*h = append(*h, w)
}
func (h *waitHeap) Pop() any {
	old := *h
	n := len(old)
	w := old[n-1]
	old[n-1] = nil
	w.index = -1
	*h = old[:n-1]
	return w
}

// timerAlarm is an alarm on a Go timer, for systems without a timerfd:
// millisecond-grained when the process is idle, as above.
type timerAlarm struct{ t *time.Timer }

func newTimerAlarm() *timerAlarm { return &timerAlarm{t: time.NewTimer(time.Hour)} }

func (a *timerAlarm) set(d time.Duration) { a.t.Reset(d) }
func (a *timerAlarm) wait()               { <-a.t.C }
