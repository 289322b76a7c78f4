package loadgen

import (
	"bufio"
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

	"github.com/benchrun/benchrun/internal/stats"
)

// A wake probe measures how late this machine runs a thread that asked to
// wake at a given time, while a load runs: the floor under the client's
// send lag that no client on this machine could go below. On a shared
// VM the whole machine stops now and then (its host runs something else;
// a kernel thread such as DAMON's kdamond holds a core for 4-12 ms), and
// every request due in such a stop is late by what is left of it,
// whatever the client does. Measured on the 2-core machine this project
// runs on, at 4,096 streams: a real-time probe thread on each core saw
// both cores stopped together for 2-20 ms at a time, and the client's
// 5-60 ms send-lag episodes fell on those stops.
//
// The probe is a child process (this executable, started with
// WakeProbeEnv set), so that it competes for the cores like any other
// thread and shares no Go scheduler with the client: one thread sleeps
// wakeProbePeriod at a time and writes how late each sleep ended. It
// costs about 850 wake-ups a second: 2.6 % of a core on this project's
// VMs, where a wake-up is a hypervisor exit (/proc, 5 s idle).
type WakeProbe struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{}
	once  sync.Once
	err   error // Stop's

	mu      sync.Mutex
	samples []WakeSample
	readErr error
}

// WakeSample is one sleep of the probe: when it was due to end and how
// late it ended.
type WakeSample struct {
	Due  time.Time
	Late time.Duration
}

// WakeProbeEnv, set in a process's environment, makes ServeWakeProbe
// run the probe instead of the program.
const WakeProbeEnv = "BENCHRUN_WAKE_PROBE"

// wakeProbePeriod is how long the probe sleeps at a time: the resolution
// of the stalls it sees.
const wakeProbePeriod = time.Millisecond

// stallMin is how late a wake must be to count as a stall of the machine
// (Floor): sleeps end up to a few hundred microseconds late on a busy
// machine without anything having stopped.
const stallMin = time.Millisecond

// StartWakeProbe starts the probe process. Stop it with Stop; it also
// ends when this process dies (its stdin closes; on Linux it gets
// SIGKILL too).
func StartWakeProbe() (*WakeProbe, error) {
	if os.Getenv(WakeProbeEnv) != "" {
		// A program that starts probes without calling ServeWakeProbe
		// first would otherwise start one from each probe, without end.
		return nil, errors.New("wake probe: this process was started as a probe but did not serve it (call loadgen.ServeWakeProbe first thing in main or TestMain)")
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("wake probe: finding this executable: %w", err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), WakeProbeEnv+"=1")
	cmd.SysProcAttr = childSysProcAttr()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("wake probe: %w", err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("wake probe: %w", err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("wake probe: starting %s: %w", exe, err)
	}
	p := &WakeProbe{cmd: cmd, stdin: stdin, done: make(chan struct{})}
	ready := make(chan struct{})
	go p.read(out, ready)
	select {
	case <-ready:
		return p, nil
	case <-p.done:
		_, err := p.Stop()
		return nil, fmt.Errorf("wake probe: the probe process ended before its first sample: %w", err)
	case <-time.After(5 * time.Second):
		p.Stop()
		return nil, errors.New("wake probe: no sample from the probe process in 5 s")
	}
}

// read takes the probe's samples, "due_unix_ns late_ns" a line, until it
// ends; ready is closed at the first.
func (p *WakeProbe) read(out io.Reader, ready chan struct{}) {
	defer close(p.done)
	sc := bufio.NewScanner(out)
	first := true
	for sc.Scan() {
		due, late, ok := strings.Cut(sc.Text(), " ")
		d, err1 := strconv.ParseInt(due, 10, 64)
		l, err2 := strconv.ParseInt(late, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			p.mu.Lock()
			p.readErr = fmt.Errorf("wake probe: unreadable sample %q", sc.Text())
			p.mu.Unlock()
			continue
		}
		p.mu.Lock()
		p.samples = append(p.samples, WakeSample{Due: time.Unix(0, d), Late: time.Duration(l)})
		p.mu.Unlock()
		if first {
			first = false
			close(ready)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := sc.Err(); err != nil {
		p.readErr = fmt.Errorf("wake probe: reading samples: %w", err)
	} else if first && p.readErr == nil {
		p.readErr = errors.New("wake probe: no output")
	}
}

// Samples are the probe's samples so far, in order.
func (p *WakeProbe) Samples() WakeSamples {
	p.mu.Lock()
	defer p.mu.Unlock()
	return WakeSamples(slices.Clone(p.samples))
}

// Stop ends the probe process and returns all its samples (again, on a
// later call). The process is killed if it has not ended 3 s after its
// stdin closed.
func (p *WakeProbe) Stop() (WakeSamples, error) {
	p.once.Do(func() {
		p.stdin.Close()
		select {
		case <-p.done:
		case <-time.After(3 * time.Second):
			p.cmd.Process.Kill()
			<-p.done
		}
		if err := p.cmd.Wait(); err != nil {
			p.err = fmt.Errorf("wake probe: %w", err)
		}
	})
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.readErr != nil {
		return WakeSamples(p.samples), p.readErr
	}
	return WakeSamples(p.samples), p.err
}

// ServeWakeProbe runs the probe and exits when this process was started
// as one (WakeProbeEnv set); otherwise it returns at once. Programs that
// start probes call it first thing in main (and tests in TestMain).
func ServeWakeProbe() {
	if os.Getenv(WakeProbeEnv) == "" {
		return
	}
	// Two Ps: the sleeping thread keeps one (sleepThread), the goroutine
	// that sees stdin close gets the other.
	runtime.GOMAXPROCS(2)
	runtime.LockOSThread()
	stop := make(chan struct{})
	go func() {
		io.Copy(io.Discard, os.Stdin)
		close(stop)
	}()
	w := bufio.NewWriter(os.Stdout)
	var flushed time.Time // the first sample goes out at once: StartWakeProbe waits for it
	for {
		select {
		case <-stop:
			w.Flush()
			os.Exit(0)
		default:
		}
		t0 := time.Now()
		sleepThread(wakeProbePeriod)
		late := time.Since(t0) - wakeProbePeriod
		fmt.Fprintf(w, "%d %d\n", t0.Add(wakeProbePeriod).UnixNano(), late)
		if time.Since(flushed) >= 100*time.Millisecond {
			if w.Flush() != nil {
				os.Exit(0) // the parent is gone
			}
			flushed = time.Now()
		}
	}
}

// WakeSamples are a probe's samples, in order.
type WakeSamples []WakeSample

// Between are the samples due in [from, to].
func (s WakeSamples) Between(from, to time.Time) WakeSamples {
	i := sort.Search(len(s), func(k int) bool { return !s[k].Due.Before(from) })
	j := sort.Search(len(s), func(k int) bool { return s[k].Due.After(to) })
	return s[i:max(i, j)]
}

// Lateness summarizes how late the wakes were, in ms.
func (s WakeSamples) Lateness() stats.Summary {
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
// due where the probe has no samples count as not late.
func (s WakeSamples) Floor(scheduled []time.Time) stats.Summary {
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
