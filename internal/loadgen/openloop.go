package loadgen

import (
	"context"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benchrun/benchrun/internal/ktimer"
)

// dispatchLead is how long before its time a streamed request is built and put on
// the open loop's board (see board): the sender's own timer fires late
// when the machine is busy, so it works this far ahead and the send itself
// is left to whoever runs first once it is due (docs/benchmarks/
// measurements.md, "How the client keeps its schedule, measured", has the
// figures behind this file's constants).
const dispatchLead = 20 * time.Millisecond

// preciseWait is the shortest wait the sender sleeps on the kernel's
// timer (package ktimer); shorter ones are the runtime's, whose wakes
// come at the network poller's next return, at most a millisecond late.
// A precise wake is one more time the process goes idle and wakes, which
// costs CPU, while the runtime's wakes serve every send due within the
// millisecond at once: past a thousand requests a second a wake per
// request costs the client more per request than the lateness it saves
// (docs/benchmarks/measurements.md, "The sender's timer").
const preciseWait = time.Millisecond

// longRequest is how long requests must take for a pause of the sender
// to be caught up past the usual window (see openLoop.pace).
const longRequest = 4 * behind

// shortRequest is the longest a request may take on average (from its
// send to its end, successful ones only) for an open loop's load to count
// as one of short requests (see openLoop.paceShort).
const shortRequest = behind

// shortAfter is how many requests must have ended well before their
// average says whether a load is one of short requests: one quick answer
// (a one-token reply among long ones) does not decide it.
const shortAfter = 16

// turnoverSpans is how many of the quickest request times the in-flight
// window of short requests leaves room for: requests scheduled within
// that span of now may all be in flight, and then some (behindWindow).
const turnoverSpans = 4

// growStep is how long the sender waits, in flight at the window of short
// requests, before the window grows by one; it grows by shortSlack at most
// (see paceShort).
const (
	growStep   = time.Millisecond
	shortSlack = 1024
)

// backstop is how late the sender hands over a due request itself while
// the readers poll the board many times in that span (readerPace).
const backstop = 5 * time.Millisecond

// readerPace tells the open loop's sender whether the goroutines reading
// streams poll the board often enough to hand every request over as it
// falls due. Then the sender does not wake at each due time: a timer
// that fires readies its goroutine into the P's next-in-line slot, and
// at a due time that is exactly when a reader has just readied the
// worker for the same request, which the sender's wake-up then pushes
// behind every runnable reader. It wakes at most once per backstop
// instead, and hands over what the readers left.
type readerPace struct {
	mark  int64     // the board's reader poll count at since
	since time.Time // start of the span measured
	fast  bool      // the last span's polls came often enough
}

// minPolls is how many polls per backstop span count as often enough:
// readers then poll more often than the sender's own timer fires on a
// small machine even when it is idle, and a span with no poll at all is
// rare.
const minPolls = 20

// busy reports whether the readers poll often enough, measured over
// spans of at least backstop.
func (p *readerPace) busy(b *board, now time.Time) bool {
	if el := now.Sub(p.since); el >= backstop {
		n := b.readerPolls.Load()
		p.fast = float64(n-p.mark) >= minPolls*float64(el)/float64(backstop)
		p.mark, p.since = n, now
	}
	return p.fast
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// board holds an open loop's requests that are built but not yet due, in
// due order. Whoever runs when one is due hands it to a worker: the
// sender, woken by its timer, but also every goroutine reading a stream
// (after each event) and every worker that finished a request. On a
// saturated machine the readers are what runs: a timer fires only when
// its own P schedules, and a goroutine it readies can wait behind
// thousands of readers the poller woke, so a send that waited for the
// sender alone leaves late; a reader that hands it over puts the worker
// next in line on its own P.
type board struct {
	start time.Time
	// next is when the first request on the board is due, in ns since
	// start (math.MaxInt64: none); a poll before it costs one load.
	next atomic.Int64
	// readerPolls counts the readers' polls (readerPace reads it).
	readerPolls atomic.Int64

	mu   sync.Mutex
	q    []job
	head int
	// dispatch hands a due request to a worker (called with mu held).
	dispatch func(job)
}

type job struct {
	i   int
	req Request
}

type boardKey struct{}

// boardOf returns the board of the open loop that sent the request whose
// context this is, or nil.
func boardOf(ctx context.Context) *board {
	b, _ := ctx.Value(boardKey{}).(*board)
	return b
}

func newBoard(start time.Time, dispatch func(job)) *board {
	b := &board{start: start, dispatch: dispatch}
	b.next.Store(math.MaxInt64)
	return b
}

// due reports whether a request on the board is due at now.
func (b *board) due(now time.Time) bool {
	return b != nil && int64(now.Sub(b.start)) >= b.next.Load()
}

// poll hands the first request due at now, if any, to a worker, and
// reports whether it did. One per call: the worker it readies (or
// starts) takes its P's one next-in-line slot, so it runs as soon as the
// caller parks; a second one readied before that takes the slot and
// pushes the first behind every goroutine already runnable on that P
// (hundreds of readers at thousands of streams). The rest are handed
// over by the next poll, from whoever runs next.
func (b *board) poll(now time.Time) bool {
	if !b.due(now) {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.head == len(b.q) || b.q[b.head].req.Scheduled.After(now) {
		return false
	}
	j := b.q[b.head]
	b.q[b.head] = job{}
	b.head++
	b.dispatch(j)
	b.setNext()
	return true
}

// readerPoll is poll for a goroutine reading a stream, after an event:
// counted, so the sender knows how often readers come by (readerPace).
func (b *board) readerPoll(now time.Time) {
	if b == nil {
		return
	}
	b.readerPolls.Add(1)
	b.poll(now)
}

func (b *board) setNext() {
	if b.head == len(b.q) {
		b.q, b.head = b.q[:0], 0
		b.next.Store(math.MaxInt64)
		return
	}
	if b.head >= 1024 && 2*b.head >= len(b.q) {
		// The sent half goes: a board that is never empty (a soak's
		// sender always a request ahead) grew by a job a request sent,
		// 1.3 MB in 25 s at 500 requests a second (issue 50).
		n := copy(b.q, b.q[b.head:])
		clear(b.q[n:])
		b.q, b.head = b.q[:n], 0
	}
	b.next.Store(int64(b.q[b.head].req.Scheduled.Sub(b.start)))
}

func (b *board) push(j job) {
	b.mu.Lock()
	b.q = append(b.q, j)
	b.setNext()
	b.mu.Unlock()
}

// nextDue is when the first request on the board is due (ok false: the
// board is empty).
func (b *board) nextDue() (time.Time, bool) {
	n := b.next.Load()
	if n == math.MaxInt64 {
		return time.Time{}, false
	}
	return b.start.Add(time.Duration(n)), true
}

// close empties the board for good (the requests left on it are not
// sent) and runs last under its lock, so no poll dispatches after it.
func (b *board) close(last func()) {
	b.mu.Lock()
	b.q, b.head = nil, 0
	b.next.Store(math.MaxInt64)
	last()
	b.mu.Unlock()
}

// openLoop is runOpen's state: the sender's schedule and pacing, and the
// pool of workers it hands requests to.
type openLoop struct {
	ctx   context.Context
	t     *Target
	l     Load
	start time.Time
	next  func(i int) Request
	// finish receives each result, from the worker that measured it.
	finish func(i int, r Result)

	// limit caps requests in flight (sem's capacity); auto: it is the
	// client's own, not the plan's.
	limit int
	auto  bool
	sem   chan struct{}
	held  int
	// freed says a request in flight ended (one token: a send waiting
	// for it takes it; completions while none waits collapse into one).
	freed chan struct{}
	// window, while behind: the in-flight count it may grow to (0: on
	// schedule).
	window int
	// endedBehind: a request ended while the client waited, behind.
	endedBehind bool
	onSchedule  int // in flight when the client was last on schedule
	lastPush    time.Time
	lastTook    atomic.Int64 // how long the last request to end took (ns)

	// The window of short requests (paceShort).
	tookAvg   atomic.Int64  // moving average of how long successful requests took (ns)
	tookN     atomic.Int64  // how many went into it
	quickest  time.Duration // the least tookAvg seen by the sender
	shortWin  bool          // window is the window of short requests
	grown     int           // what that window grew by while the sender waited at it
	paced     int
	scheduled recentTimes // scheduled times of the requests sent lately

	// Requests go to a pool of workers that is grown on demand and reused,
	// as vegeta does: a fresh goroutine per request would grow a fresh
	// stack through the HTTP round trip every time (about a tenth of the
	// client's CPU at a few thousand requests per second).
	work chan job
	wg   sync.WaitGroup
	sent atomic.Int64
	b    *board
	// dctx is the workers' context: ctx carrying the board, so readers
	// of streams hand over due requests (boardOf).
	dctx context.Context

	streams bool
	gen     *Generator
	// timer wakes the sender at its due times to the kernel timer's
	// precision: on the runtime's timers an idle client sends up to a
	// millisecond late (package ktimer).
	timer     *ktimer.Timer
	holdTimer *time.Timer
	n         int // requests built
	pend      job // built, not yet on the board
	havePend  bool
	exhausted bool // the load's last request was built
	readers   readerPace
}

// runOpen is Run's open loop: requests sent on the schedule, whatever the
// server's pace.
func runOpen(ctx context.Context, t *Target, l Load, start time.Time, next func(i int) Request, finish func(i int, r Result)) (RunStats, error) {
	o := &openLoop{ctx: ctx, t: t, l: l, start: start, next: next, finish: finish, lastPush: start}
	// Without a cap of the plan's, the client's own keeps an overload
	// from failing on file descriptors or ports (limits.go).
	o.limit, o.auto = l.MaxInFlight, l.MaxInFlight == 0
	if o.auto {
		o.limit = InFlightLimit()
	}
	o.sem = make(chan struct{}, o.limit)
	o.freed = make(chan struct{}, 1)
	o.work = make(chan job)
	o.b = newBoard(start, o.dispatch)
	o.dctx = context.WithValue(ctx, boardKey{}, o.b)

	o.streams = t.Stream && !t.Endpoint.oneBody()
	o.gen = l.Schedule.NewGenerator()
	o.timer = ktimer.New(ctx)
	o.timer.PreciseFrom = preciseWait
	defer o.timer.Stop()
	o.holdTimer = time.NewTimer(time.Hour)
	defer o.holdTimer.Stop()
	o.send()
	o.b.close(func() { close(o.work) })
	o.wg.Wait()
	st := RunStats{Start: start, Sent: int(o.sent.Load()), Held: o.held, Paced: o.paced}
	if o.auto {
		st.InFlightLimit = o.limit
	}
	return st, nil
}

// dispatch is the board's hand-over: to an idle worker, or a new one.
func (o *openLoop) dispatch(j job) {
	o.sent.Add(1)
	o.l.Counters.Sent.Add(1)
	select {
	case o.work <- j:
	default:
		o.wg.Add(1)
		go o.worker(j)
	}
}

// worker sends j, then every request handed to it, until the board closes.
func (o *openLoop) worker(j job) {
	defer o.wg.Done()
	for {
		r := o.t.Do(o.dctx, j.req)
		if !r.Finished.IsZero() {
			took := int64(r.Finished.Sub(r.Sent))
			o.lastTook.Store(took)
			if r.Err == nil {
				// Racing workers may lose an update: an average
				// of the others is as good.
				avg := o.tookAvg.Load()
				if avg == 0 {
					avg = took
				}
				o.tookAvg.Store(avg + (took-avg)/8)
				o.tookN.Add(1)
			}
		}
		<-o.sem
		select {
		case o.freed <- struct{}{}:
		default:
		}
		o.finish(j.i, r)
		o.b.poll(time.Now())
		var ok bool
		if j, ok = <-o.work; !ok {
			return
		}
	}
}

// send is the sender's loop: it builds each request ahead of its time,
// puts it on the board when it is near due, and hands over what is due,
// until the load's last request is on the board and handed over or ctx
// ends.
func (o *openLoop) send() {
	b := o.b
	for o.ctx.Err() == nil {
		o.build()
		headDue, boardBusy := b.nextDue()
		// Behind its schedule, requests go on the board only once due:
		// one put there early would be sent at its time past the hold
		// (hold), and the holds are what keep an overload paced.
		// Without streams there is no reader to hand a request over,
		// and putting them there early costs non-streamed rate.
		lead := dispatchLead
		if o.window > 0 || !o.streams {
			lead = 0
		}
		if !o.havePend && !boardBusy {
			return
		}
		if !o.sleepUntil(o.wakeAt(headDue, boardBusy, lead)) {
			return
		}
		now := time.Now()
		handOver(b, now)
		if !o.havePend || o.pend.req.Scheduled.After(now.Add(lead)) {
			continue
		}
		o.pace(now)
		if !o.hold() || !o.admit() {
			return
		}
		b.push(o.pend)
		o.scheduled.add(o.pend.req.Scheduled)
		o.lastPush = time.Now()
		o.havePend = false
		handOver(b, time.Now())
	}
}

// build builds the next request, unless one is pending or the load's
// last one was built.
func (o *openLoop) build() {
	if o.havePend || o.exhausted {
		return
	}
	l := o.l
	if l.Schedule.Trace != nil && o.n >= len(l.Schedule.Trace) {
		o.exhausted = true // the trace's last request was built
		return
	}
	off := o.gen.Next()
	if l.done(o.n, off-l.Schedule.Phase) {
		// A phased shard's bound is on its own time, not the phase's.
		o.exhausted = true
		return
	}
	// The request is built, body and all, before its time comes, so
	// only the hand-off to a worker separates the schedule from the send.
	req := o.next(o.n)
	req.Scheduled = o.start.Add(off)
	o.t.prepare(&req)
	o.pend, o.havePend = job{o.n, req}, true
	o.n++
}

// wakeAt is when the sender wakes next: one wake per request, at the
// first request's due time (to hand it over, unless a reader did),
// pushing then every request due within the lead; a request waits for
// its own wake only when no due time comes before half the lead is left.
// While readers poll the board often, they hand requests over as they
// fall due and the sender only backs them up, a backstop later (see
// readerPace).
func (o *openLoop) wakeAt(headDue time.Time, boardBusy bool, lead time.Duration) time.Time {
	wake := headDue
	if now := time.Now(); lead > 0 && boardBusy && o.readers.busy(o.b, now) {
		wake = later(headDue, now).Add(backstop)
	}
	if o.havePend {
		if at := o.pend.req.Scheduled.Add(-lead / 2); !boardBusy || at.Before(wake) {
			wake = at
		}
	}
	return wake
}

// sleepUntil waits for wake; false: ctx ended first.
func (o *openLoop) sleepUntil(wake time.Time) bool {
	return o.timer.SleepUntil(wake)
}

// pace sets the in-flight window for the pending request, due at now or
// earlier. Far behind its schedule, the client is the limit. Sending every
// overdue request at once would open a connection (and a goroutine on both
// sides) for each, and the pile-up slows the client further than holding
// the in-flight count does. So once behind, it lets in-flight grow by
// behindWindow over what it was (a passing stall's backlog goes at once),
// and past that sends one request per request that ends; on schedule
// again, in-flight grows as the load needs.
func (o *openLoop) pace(now time.Time) {
	if o.paceShort(now) {
		return
	}
	switch late := now.Sub(o.pend.req.Scheduled); {
	case late <= behind:
		o.window, o.endedBehind = 0, false
		o.onSchedule = len(o.sem)
	case o.window == 0:
		o.window = len(o.sem) + behindWindow
		if now.Sub(o.lastPush) > behind && time.Duration(o.lastTook.Load()) > longRequest {
			// The sender itself was held up (its thread preempted,
			// a collection) while requests that last (streams)
			// went on ending: the window grows from what was in
			// flight while on schedule, not from what is left, or
			// the requests that ended meanwhile would shrink it by
			// as many and the backlog, paced one send per request
			// that ends (the ones it just sent end only seconds
			// later), would stay as late as the pause for as long
			// as the load lasts. Short requests end soon enough to
			// pace it, and an overload of them needs the tighter
			// window to keep its delivered rate.
			o.window = max(len(o.sem), o.onSchedule) + behindWindow
		}
	}
}

// hold waits, when in flight is at the window, for a request to end;
// false: ctx ended first. Until one has ended in this spell behind, it
// waits at most behind: with requests that last seconds (streams
// starting) the first to end may be seconds away, and a pause of the
// client's own (a collection) would hold its backlog until then; so the
// window grows by what the schedule asks for in that time and then some,
// and the backlog drains. An overload of short requests keeps ending them
// and stays paced by them.
func (o *openLoop) hold() bool {
	if o.window == 0 || len(o.sem) < o.window {
		return true
	}
	if o.shortWin {
		return o.holdShort()
	}
	o.held++
	if !o.endedBehind {
		o.holdTimer.Reset(behind)
	}
	select {
	case <-o.freed:
		o.endedBehind = true
	case <-holdC(o.holdTimer, o.endedBehind):
		o.window = len(o.sem) + behindWindow + int(o.rateNear(o.pend.req.Scheduled.Sub(o.start))*behind.Seconds())
	case <-o.ctx.Done():
		return false
	}
	return true
}

// paceShort sets the in-flight window of an open loop of short requests
// and reports whether the load is one: the plan set no cap of its own,
// and once shortAfter requests had ended well, they took shortRequest or
// less on average at least once. It stays one: a server that stops for a
// while, or falls behind a schedule it cannot carry, makes the requests it
// holds take longer, and from the client the two look alike to a load
// whose requests grew long (in flight over the window's time is then the
// same), so leaving the window on long averages let a sustained overload
// send its whole backlog at once and pile up again. A load whose requests
// do grow long gets the window's growth.
//
// Why: sent on schedule whatever the server's pace, every request that
// finds no connection free opens one. With short requests a server that
// falls behind for a moment (a cold start, a collection, the machine's
// own stop) then gets a connection per request due meanwhile: tens of
// thousands a second, each costing the server and the client more than a
// request on a warm one, so the server falls further behind and the pass
// runs on with that many queued at it, delivering less than the server
// carries (docs/METRICS.md, "Short requests and the server's turnover").
//
// So in flight may reach behindWindow plus the requests sent that were
// scheduled within turnoverSpans of the quickest the requests took on
// average (how long they take when the server holds no queue of this
// client's) before now: a burst of the schedule's own goes at once, and
// behind its schedule (the requests sent were due long ago) the window is
// what the server turns over. A send that finds in flight at
// the window waits for a request to end, keeping its scheduled time (the
// lateness is in send_lag, and RunStats.Paced counts the sends that
// waited), and the window grows by one for every growStep it waits, by
// shortSlack at most: requests that take longer than the quickest get
// their room, and a server that stops turning requests over gets at most
// shortSlack more while it is stopped, not a connection per request due.
func (o *openLoop) paceShort(now time.Time) bool {
	if !o.auto || o.tookN.Load() < shortAfter {
		return false
	}
	avg := time.Duration(o.tookAvg.Load())
	if o.quickest == 0 || avg < o.quickest {
		o.quickest = avg
	}
	if o.quickest == 0 || o.quickest > shortRequest {
		return false
	}
	o.shortWin = true
	o.window = behindWindow + o.scheduled.since(now.Add(-turnoverSpans*o.quickest)) + o.grown
	return true
}

// holdShort waits, in flight at the window of short requests, until a
// request ends, growing the window by one for every growStep it waits
// (by shortSlack at most); false: ctx ended first.
func (o *openLoop) holdShort() bool {
	o.paced++
	for len(o.sem) >= o.window {
		o.holdTimer.Reset(growStep)
		select {
		case <-o.freed:
		case <-o.holdTimer.C:
			if o.grown < shortSlack {
				o.grown++
				o.window++
			}
		case <-o.ctx.Done():
			return false
		}
	}
	return true
}

// recentTimes are the scheduled times of the requests an open loop sent
// within the last turnoverSpans*shortRequest, in send order.
type recentTimes struct {
	at   []time.Time
	head int
}

func (r *recentTimes) add(t time.Time) {
	r.at = append(r.at, t)
	// Drop what is too old to count, copying down once half is dropped.
	old := t.Add(-turnoverSpans * shortRequest)
	for r.head < len(r.at) && r.at[r.head].Before(old) {
		r.head++
	}
	if r.head > len(r.at)/2 {
		n := copy(r.at, r.at[r.head:])
		r.at, r.head = r.at[:n], 0
	}
}

// since counts the times at or after t.
func (r *recentTimes) since(t time.Time) int {
	live := r.at[r.head:]
	i, _ := slices.BinarySearchFunc(live, t, func(a, b time.Time) int { return a.Compare(b) })
	return len(live) - i
}

// admit takes the pending request's place in flight, waiting for one
// under the cap (counted as held when the cap is the client's own);
// false: ctx ended first.
func (o *openLoop) admit() bool {
	select {
	case o.sem <- struct{}{}:
		return true
	default:
	}
	if o.auto {
		o.held++
	}
	select {
	case o.sem <- struct{}{}:
		return true
	case <-o.ctx.Done():
		return false
	}
}

// rateNear is the schedule's rate at offset off (a trace's: its mean so
// far).
func (o *openLoop) rateNear(off time.Duration) float64 {
	if r := o.l.Schedule.rateAt(off - o.l.Schedule.Phase); r > 0 {
		return r
	}
	if off > 0 {
		return float64(o.n) / off.Seconds()
	}
	return 0
}

// handOver is the sender's poll of the board: when more requests are due
// than the one it handed over, it yields, so the worker it readied runs
// (and sends) before the next is handed over (see board.poll); the
// readers and workers that run meanwhile hand over the rest.
func handOver(b *board, now time.Time) {
	if b.poll(now) && b.due(now) {
		runtime.Gosched()
	}
}

// holdC is the hold's timer channel, or nil (never ready) once a request
// ended in this spell behind.
func holdC(t *time.Timer, ended bool) <-chan time.Time {
	if ended {
		return nil
	}
	return t.C
}
