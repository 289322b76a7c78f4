// Package measure knows the machine a measurement ran on: how late it ran
// threads that asked to wake while a load ran (the probe), what that
// lateness could have done to each metric (Allowance), and whether it
// explains a check that failed (Explain). Verdicts (pipeline's
// assertions, the baseline, regress) and precision tests judge against
// it, so that a red verdict the machine's own lateness could explain is
// called inconclusive, not a failure.
package machine

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/benchrun/benchrun/internal/ktimer"
	"github.com/benchrun/benchrun/internal/stats"
)

// A Probe measures how late this machine runs threads that asked to wake
// at a given time, while a load runs: what no program on this machine
// could go below. On a shared VM the whole machine stops now and then
// (its host runs something else; a kernel thread such as DAMON's kdamond
// holds a core for 4-12 ms), and other processes hold the cores for a
// scheduler slice at a time; every wake due then is late, whatever the
// program does.
//
// The probe is a child process (this executable, started with ProbeEnv
// set and served by this package's init), so that it competes for the
// cores like any other program and shares no Go scheduler with the
// client. It samples two paths:
//
//   - Wake: one thread sleeps a millisecond at a time in the kernel and
//     writes how late each sleep ended: the floor under a client's send
//     lag (Samples.Floor). It costs about 850 wake-ups a second.
//   - Loop: a timer on an event loop (the runtime's network poller, as a
//     server's timer or socket) whose task is handed to another thread,
//     every 2 ms: the path a server's token takes from its timer or its
//     scheduler to the write. On a busy machine it is several times later
//     than the lone thread (each hand-over waits for a core again), and it
//     is what a server under test suffered; verdicts judge with it.
type Probe struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{}
	once  sync.Once
	err   error // Stop's

	mu      sync.Mutex
	rec     Record
	readErr error
	// keeps are the open keeps' starts (Keep), by id: the probe keeps the
	// raw samples due since the earliest of them, and none while no keep
	// is open. Windows (Begin) hold no samples: they fold them.
	keeps   map[uint64]time.Time
	nextID  uint64
	keep    time.Time // samples due before it are not kept
	windows map[uint64]*windowFold
	// observe, when set, is told every sample as it comes (Observe).
	observe func(path string, late time.Duration)
}

// Observe tells f every sample from now on, window or not: its path
// ("wake", the lone thread; "loop", the event loop) and how late it was
// (the live metrics). f must be quick: it runs on the probe's reader.
func (p *Probe) Observe(f func(path string, late time.Duration)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.observe = f
}

// Sample is one wait of the probe: when it was due to end and how late
// it ended.
type Sample struct {
	Due  time.Time
	Late time.Duration
}

// Samples are one path's samples, in order.
type Samples []Sample

// Record is what the probe saw: each path's samples.
type Record struct {
	Wake Samples // a lone thread's sleeps
	Loop Samples // an event loop's timer, handed to another thread
}

// Between is the record of the samples due in [from, to].
func (r Record) Between(from, to time.Time) Record {
	return Record{Wake: r.Wake.Between(from, to), Loop: r.Loop.Between(from, to)}
}

// ProbeEnv, set in a process's environment, makes this package's init
// run the probe instead of the program.
const ProbeEnv = "BENCHRUN_MACHINE_PROBE"

const (
	// wakePeriod is how long the lone thread sleeps at a time: the
	// resolution of the stalls it sees.
	wakePeriod = time.Millisecond
	// loopPeriod is the event loop's timer period.
	loopPeriod = 2 * time.Millisecond
	// stallMin is how late a wake must be to count as a stall of the
	// machine (Floor): sleeps end up to a few hundred microseconds late on
	// a busy machine without anything having stopped.
	stallMin = time.Millisecond
)

// StartProbe starts the probe process. Stop it with Stop; it also ends
// when this process dies (its stdin closes; on Linux it gets SIGKILL
// too).
func StartProbe() (*Probe, error) {
	if os.Getenv(ProbeEnv) != "" {
		// Only a program that replaced this package's init could get here;
		// it would otherwise start one probe from each probe, without end.
		return nil, errors.New("machine probe: this process was started as a probe but did not serve it")
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("machine probe: finding this executable: %w", err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), ProbeEnv+"=1")
	cmd.SysProcAttr = childSysProcAttr()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("machine probe: %w", err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("machine probe: %w", err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("machine probe: starting %s: %w", exe, err)
	}
	p := &Probe{cmd: cmd, stdin: stdin, done: make(chan struct{})}
	ready := make(chan struct{})
	go p.read(out, ready)
	select {
	case <-ready:
		return p, nil
	case <-p.done:
		_, err := p.Stop()
		return nil, fmt.Errorf("machine probe: the probe process ended before its first sample: %w", err)
	case <-time.After(5 * time.Second):
		p.Stop()
		return nil, errors.New("machine probe: no sample from the probe process in 5 s")
	}
}

// read takes the probe's samples, "w|l due_unix_ns late_ns" a line,
// until it ends; ready is closed at the first.
func (p *Probe) read(out io.Reader, ready chan struct{}) {
	defer close(p.done)
	sc := bufio.NewScanner(out)
	first := true
	for sc.Scan() {
		s, kind, ok := parseSample(sc.Text())
		p.mu.Lock()
		if observe := p.observe; observe != nil && ok {
			observe(samplePath(kind), s.Late)
		}
		if ok {
			for _, w := range p.windows {
				w.add(kind, s)
			}
		}
		switch {
		case !ok:
			p.readErr = fmt.Errorf("machine probe: unreadable sample %q", sc.Text())
		case len(p.keeps) == 0 || s.Due.Before(p.keep):
			// No keep needs it.
		case kind == 'w':
			p.rec.Wake = append(p.rec.Wake, s)
		default:
			p.rec.Loop = append(p.rec.Loop, s)
		}
		p.mu.Unlock()
		if ok && first {
			first = false
			close(ready)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := sc.Err(); err != nil {
		p.readErr = fmt.Errorf("machine probe: reading samples: %w", err)
	} else if first && p.readErr == nil {
		p.readErr = errors.New("machine probe: no output")
	}
}

// samplePath names a sample's kind as Observe says it.
func samplePath(kind byte) string {
	if kind == 'w' {
		return "wake"
	}
	return "loop"
}

// parseSample reads one line of the probe's output.
func parseSample(line string) (Sample, byte, bool) {
	f := strings.Fields(line)
	if len(f) != 3 || (f[0] != "w" && f[0] != "l") {
		return Sample{}, 0, false
	}
	d, err1 := strconv.ParseInt(f[1], 10, 64)
	l, err2 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil {
		return Sample{}, 0, false
	}
	return Sample{Due: time.Unix(0, d), Late: time.Duration(l)}, f[0][0], true
}

// Keep makes the probe keep its raw samples (Record) from now until
// release is called: for a bounded stretch such as self-bench's searches,
// whose floor replays each request's due time against the stops. A
// cell's window (Begin) folds its samples instead and holds none.
func (p *Probe) Keep() (release func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	from := time.Now()
	if p.keeps == nil {
		p.keeps = map[uint64]time.Time{}
	}
	p.nextID++
	id := p.nextID
	if len(p.keeps) == 0 || from.Before(p.keep) {
		p.keep = from
	}
	p.keeps[id] = from
	var once sync.Once
	return func() { once.Do(func() { p.release(id) }) }
}

// release ends keep id and lets go of the samples no open keep needs.
func (p *Probe) release(id uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.keeps, id)
	if len(p.keeps) == 0 {
		p.rec = Record{}
		return
	}
	earliest := time.Time{}
	for _, from := range p.keeps {
		if earliest.IsZero() || from.Before(earliest) {
			earliest = from
		}
	}
	p.keep = earliest
	p.rec = p.rec.since(earliest)
}

// open registers a window folding the samples due from from and returns
// its id.
func (p *Probe) open(from time.Time) uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.windows == nil {
		p.windows = map[uint64]*windowFold{}
	}
	p.nextID++
	p.windows[p.nextID] = newWindowFold(from)
	return p.nextID
}

// close unregisters window id and returns what it folded (nil for an
// unknown id).
func (p *Probe) close(id uint64) *windowFold {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.windows[id]
	delete(p.windows, id)
	return w
}

// since is the record less the samples due before from, in new
// slices (so the old ones' memory goes).
func (r Record) since(from time.Time) Record {
	keep := func(s Samples) Samples {
		i, _ := slices.BinarySearchFunc(s, from, func(x Sample, t time.Time) int { return x.Due.Compare(t) })
		return slices.Clone(s[i:])
	}
	return Record{Wake: keep(r.Wake), Loop: keep(r.Loop)}
}

// Record is the samples the open keeps hold (Keep): those due since the
// earliest of them began.
func (p *Probe) Record() Record {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Record{Wake: slices.Clone(p.rec.Wake), Loop: slices.Clone(p.rec.Loop)}
}

// Stop ends the probe process and returns the samples its open keeps
// hold (again, on a later call). The process is killed if it has not ended 3 s after its
// stdin closed.
func (p *Probe) Stop() (Record, error) {
	p.once.Do(func() {
		p.stdin.Close()
		select {
		case <-p.done:
		case <-time.After(3 * time.Second):
			p.cmd.Process.Kill()
			<-p.done
		}
		if err := p.cmd.Wait(); err != nil {
			p.err = fmt.Errorf("machine probe: %w", err)
		}
	})
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.readErr != nil {
		return p.rec, p.readErr
	}
	return p.rec, p.err
}

// The probe process: any program that links this package can be
// re-executed as one (its init serves it and exits), test binaries
// included, so no main has to remember to.
func init() {
	if os.Getenv(ProbeEnv) != "" {
		serveProbe()
	}
}

// serveProbe runs the probe until its stdin closes, then exits.
func serveProbe() {
	// Three Ps: the sleeping thread keeps one (sleepThread), and the
	// event loop's hand-over goes from one of the other two to the other,
	// as in a server whose Ps are not all busy.
	runtime.GOMAXPROCS(3)
	runtime.LockOSThread()
	stop := make(chan struct{})
	go func() {
		io.Copy(io.Discard, os.Stdin)
		close(stop)
	}()
	out := &sampleWriter{w: bufio.NewWriter(os.Stdout)}
	go loopSamples(out)
	// Each wake is due a period after the one before it woke, timed
	// before its sample is written: a stop of the process while this
	// thread is out of its sleep (writing a sample, waiting for the
	// writer's lock) makes the next wake late, where a sleep timed from
	// its own start saw nothing of it.
	next := time.Now().Add(wakePeriod)
	for {
		select {
		case <-stop:
			out.mu.Lock()
			out.w.Flush()
			os.Exit(0)
		default:
		}
		if d := time.Until(next); d > 0 {
			sleepThread(d)
		}
		now := time.Now()
		out.put('w', next, now.Sub(next))
		next = later(next, now).Add(wakePeriod)
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// loopSamples waits for a timer on the runtime's poller every
// loopPeriod and hands each expiry to another goroutine, which takes how
// late it runs.
func loopSamples(out *sampleWriter) {
	t := ktimer.New(context.Background()) // a timerfd on the poller: the kernel's precision
	handoff := make(chan time.Time)
	go func() {
		for due := range handoff {
			out.put('l', due, time.Since(due))
		}
	}()
	for {
		due := time.Now().Add(loopPeriod)
		t.SleepUntil(due)
		handoff <- due
	}
}

// sampleWriter writes both paths' samples to stdout, flushed every
// 100 ms (the first at once: StartProbe waits for it).
type sampleWriter struct {
	mu      sync.Mutex
	w       *bufio.Writer
	flushed time.Time
}

func (s *sampleWriter) put(kind byte, due time.Time, late time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(s.w, "%c %d %d\n", kind, due.UnixNano(), late)
	if time.Since(s.flushed) >= 100*time.Millisecond {
		if s.w.Flush() != nil {
			os.Exit(0) // the parent is gone
		}
		s.flushed = time.Now()
	}
}

// Between are the samples due in [from, to].
func (s Samples) Between(from, to time.Time) Samples {
	i := sort.Search(len(s), func(k int) bool { return !s[k].Due.Before(from) })
	j := sort.Search(len(s), func(k int) bool { return s[k].Due.After(to) })
	return s[i:max(i, j)]
}

// Lateness summarizes how late the wakes were, in ms.
func (s Samples) Lateness() stats.Summary {
	ms := make([]float64, len(s))
	for i, w := range s {
		ms[i] = float64(w.Late) / float64(time.Millisecond)
	}
	return stats.Summarize(ms)
}

// Floor is the send lag, in ms, that a client which sent every request
// the instant the machine let it run would have had on this schedule:
// a request due while the machine stood still (a wake late by stallMin
// or more: the probe could not run from its due time to when it woke)
// is late by what was left of that stop, any other by nothing. Requests
// due where the probe has no samples count as not late. Read it from
// the Wake path.
func (s Samples) Floor(scheduled []time.Time) stats.Summary {
	type stop struct{ from, to time.Time }
	var stops []stop
	for _, w := range s {
		if w.Late >= stallMin {
			stops = append(stops, stop{w.Due, w.Due.Add(w.Late)})
		}
	}
	lags := make([]float64, len(scheduled))
	for i, at := range scheduled {
		// The last stop that began at or before at.
		k := sort.Search(len(stops), func(k int) bool { return stops[k].from.After(at) })
		if k > 0 && stops[k-1].to.After(at) {
			lags[i] = float64(stops[k-1].to.Sub(at)) / float64(time.Millisecond)
		}
	}
	return stats.Summarize(lags)
}
