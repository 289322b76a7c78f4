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

// progress is the live view on stderr: one line per point, redrawn in
// place while the point runs (cell, ladder point, done/total, req/s,
// ETA). It is silent unless the writer is a terminal, so logs, pipes and
// --quiet (io.Discard) get nothing.
type progress struct {
	w io.Writer // nil: silent
}

func newProgress(w io.Writer) *progress {
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return &progress{w: f}
	}
	// A wrapper (the redacting writer) over a terminal: draw through it.
	if fw, ok := w.(interface{ File() (*os.File, bool) }); ok {
		if f, ok := fw.File(); ok && term.IsTerminal(int(f.Fd())) {
			return &progress{w: w}
		}
	}
	return &progress{}
}

// line prints a finished point's summary.
func (p *progress) line(s string) {
	if p.w != nil {
		fmt.Fprintf(p.w, "\r\033[K  %s\n", s)
	}
}

// pointView draws one point's passes.
type pointView struct {
	p          *progress
	idx, total int
	label      string

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
	if v == nil || v.p.w == nil {
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
			fmt.Fprintf(v.p.w, "\r\033[K  [%d/%d] %s %s: %d/%s done, %d failed, %.1f req/s, ETA %s",
				v.idx, v.total, v.label, kind, done, total, c.Failed.Load(), rate, eta)
		}
	}(v.stop, v.stopped)
}

func (v *pointView) endPass() {
	if v == nil || v.p.w == nil {
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
