package sweep

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/benchrun/benchrun/internal/loadgen"
	"golang.org/x/term"
)

// progress is what stderr shows of a sweep: on a terminal, a live line
// per point redrawn in place while it runs (cell, ladder point,
// done/total, req/s, ETA) and a line per finished point; anywhere else
// (a CI log, a pipe, a file) the line per finished point alone, plain, so
// a log shows where a long run is. --quiet (io.Discard) gets nothing.
type progress struct {
	w   io.Writer // nil: silent
	tty bool      // draw the live view
}

func newProgress(w io.Writer) *progress {
	if w == nil || w == io.Discard {
		return &progress{}
	}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return &progress{w: f, tty: true}
	}
	// A wrapper (the redacting writer) over a terminal: draw through it.
	if fw, ok := w.(interface{ File() (*os.File, bool) }); ok {
		if f, ok := fw.File(); ok && term.IsTerminal(int(f.Fd())) {
			return &progress{w: w, tty: true}
		}
	}
	return &progress{w: w}
}

// line prints a finished point's summary.
func (p *progress) line(s string) {
	switch {
	case p.w == nil:
	case p.tty:
		fmt.Fprintf(p.w, "\r\033[K  %s\n", s)
	default:
		fmt.Fprintf(p.w, "  %s\n", s)
	}
}

// pointView draws one point's passes.
type pointView struct {
	p          *progress
	idx, total int
	label      string
	lv         liveView // the run's live view of its passes (live.go)
	// slice is the plan's slice width (0: automatic), and stopSlices
	// ends a long timed pass's line per slice (sliceprogress.go).
	slice      time.Duration
	stopSlices func()

	mu      sync.Mutex
	stop    chan struct{}
	stopped chan struct{}
}

func (p *progress) point(idx, total int, label string) *pointView {
	return &pointView{p: p, idx: idx, total: total, label: label}
}

// pass starts redrawing for one pass of expected requests (0: unknown, then
// the ETA comes from the duration).
func (v *pointView) pass(pass int, timed bool, expected int, c *loadgen.Counters, dur time.Duration) {
	if v == nil {
		return
	}
	v.lv.start(timed, c)
	if timed && dur >= sliceProgressMin && v.p.w != nil {
		v.stopSlices = v.sliceLines(c, dur)
	}
	if !v.p.tty {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.stop, v.stopped = make(chan struct{}), make(chan struct{})
	kind := fmt.Sprintf("warm-up %d", pass+1)
	if timed {
		kind = "timed"
	}
	start := time.Now()
	go func(stop, stopped chan struct{}) {
		defer close(stopped)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			done := c.Done.Load() + c.Failed.Load()
			el := time.Since(start)
			rate := float64(done) / el.Seconds()
			eta := "?"
			switch {
			case expected > 0 && rate > 0:
				eta = (time.Duration(float64(int64(expected)-done)/rate*float64(time.Second)) + 0).Round(time.Second).String()
			case dur > 0:
				eta = (dur - el).Round(time.Second).String()
			}
			total := "?"
			if expected > 0 {
				total = fmt.Sprint(expected)
			}
			fmt.Fprintf(v.p.w, "\r\033[K  %s %s %s: %d/%s done, %d failed, %.1f req/s, ETA %s",
				v.counter(), v.label, kind, done, total, c.Failed.Load(), rate, eta)
		}
	}(v.stop, v.stopped)
}

// counter is the point's place in the sweep: "[3/8]", or "[probe 9]" in a
// search, whose probes are chosen as it goes (total 0).
func (v *pointView) counter() string {
	if v.total <= 0 || v.idx > v.total {
		return fmt.Sprintf("[probe %d]", v.idx)
	}
	return fmt.Sprintf("[%d/%d]", v.idx, v.total)
}

func (v *pointView) endPass() {
	if v == nil {
		return
	}
	v.lv.stop()
	if v.stopSlices != nil {
		v.stopSlices()
		v.stopSlices = nil
	}
	if !v.p.tty {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.stop != nil {
		close(v.stop)
		<-v.stopped
		v.stop = nil
		// Leave a clean line for whatever prints next (assertion verdicts).
		fmt.Fprint(v.p.w, "\r\033[K")
	}
}

// pointsTotal is how many points the sweep measures, for the progress
// counter: the ladder's, or 0 for a search, which chooses its probes as
// it goes.
func pointsTotal(s *Stage, points []point) int {
	if s.cfg.Search != nil {
		return 0
	}
	return len(points)
}
