package machine

import (
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// A window's lateness is folded as its samples come, so that what it
// holds does not grow with its length: a cell of 30 minutes sees 1.5
// million wakes and 900,000 loop samples, 75 MB as Samples.
//
// Each path is an HdrHistogram of microseconds, 3 significant digits:
// exact to the microsecond below 2.048 ms, within 0.1 % above, up to an
// hour (a later sample counts as an hour; the max stays exact). It holds
// 0.2 MB whatever the window's length. The percentiles are the
// histogram's (the smallest recorded value with at least that share of
// the samples at or below it, to its resolution) where a sorted record
// interpolated between neighbours: they differ by at most a microsecond
// or 0.1 %, well below the millisecond allowances read from them.
const (
	lateHistMaxUs = int64(time.Hour / time.Microsecond)
	lateHistSig   = 3
)

// lateFold is one path's lateness over a window.
type lateFold struct {
	h   *hdrhistogram.Histogram
	max time.Duration
}

func newLateFold() lateFold {
	return lateFold{h: hdrhistogram.New(1, lateHistMaxUs, lateHistSig)}
}

func (f *lateFold) add(late time.Duration) {
	us := min(max(late.Microseconds(), 0), lateHistMaxUs)
	_ = f.h.RecordValue(us) // in range by construction
	f.max = max(f.max, late)
}

// n is how many samples the fold took.
func (f *lateFold) n() int64 { return f.h.TotalCount() }

// percentileMs is the p-th percentile, in ms.
func (f *lateFold) percentileMs(p float64) float64 {
	return float64(f.h.ValueAtPercentile(p)) / 1000
}

// maxMs is the exact max, in ms.
func (f *lateFold) maxMs() float64 {
	return float64(f.max) / float64(time.Millisecond)
}

// windowFold is one window's two paths, from its start.
type windowFold struct {
	from       time.Time
	wake, loop lateFold
}

func newWindowFold(from time.Time) *windowFold {
	return &windowFold{from: from, wake: newLateFold(), loop: newLateFold()}
}

// add folds a sample of kind ('w' or 'l') due in the window.
func (w *windowFold) add(kind byte, s Sample) {
	if s.Due.Before(w.from) {
		return
	}
	if kind == 'w' {
		w.wake.add(s.Late)
	} else {
		w.loop.add(s.Late)
	}
}
