package telemetry

import (
	"fmt"

	"github.com/benchrun/benchrun/internal/results"
)

// A probe keeps the samples of a cell's window in memory that does not
// grow with the window's length: every reading's until it holds
// maxKeptSamples of them (or maxKeptReadings readings), then a uniform
// grid of the readings from the first, every 2nd, 4th, ... (the step
// doubling each time the grid fills). At the default 100 ms interval a
// server's /metrics (about 16 samples a scrape) keeps every reading of a
// window of 25 s, a host probe's (4) of 102 s, a GPU probe's of one
// device (about 15 samples) of 27 s and of 8 devices 6.4 s; a longer
// window keeps a grid of half to all of that many readings (a soak's
// 30-minute cell, 128 to 256 scrapes of its server's metrics). About
// 150 bytes a sample: 0.6 MB a probe, which a load's collector goal
// makes 2.5 MB of resident memory. The probes' columns are folded from
// every reading, never from the kept ones.
const (
	maxKeptSamples  = 4096
	maxKeptReadings = 1024
	minKeptReadings = 64
)

// keptReadingsFor is the grid's size for readings of perReading samples.
func keptReadingsFor(perReading int) int {
	return min(max(maxKeptSamples/max(perReading, 1), minKeptReadings), maxKeptReadings)
}

// thinned are a window's readings thinned to a uniform grid of at most
// max of them: reading i (from 0) is kept while i is a multiple of the
// step.
type thinned[T any] struct {
	max  int // 0: maxKeptReadings; thinnedSamples sets it from its first reading's size
	step int // 0: 1
	next int // the index of the next reading
	kept []keptReading[T]
}

type keptReading[T any] struct {
	i int
	v T
}

// add takes one reading.
func (t *thinned[T]) add(v T) {
	if t.step == 0 {
		t.step = 1
	}
	i := t.next
	t.next++
	if i%t.step != 0 {
		return
	}
	t.kept = append(t.kept, keptReading[T]{i: i, v: v})
	limit := t.max
	if limit <= 0 {
		limit = maxKeptReadings
	}
	for len(t.kept) > limit {
		t.step *= 2
		kept := t.kept[:0]
		for _, g := range t.kept {
			if g.i%t.step == 0 {
				kept = append(kept, g)
			}
		}
		clear(t.kept[len(kept):]) // let the dropped readings go
		t.kept = kept
	}
}

// all are the kept readings, in order.
func (t *thinned[T]) all() []T {
	out := make([]T, len(t.kept))
	for i, g := range t.kept {
		out[i] = g.v
	}
	return out
}

// thinnedSamples are the samples of a window's readings, one group a
// reading, thinned.
type thinnedSamples struct{ thinned[[]results.Sample] }

// addRows takes one reading's samples (none is still a reading).
func (t *thinnedSamples) addRows(rows []results.Sample) {
	if t.max == 0 && len(rows) > 0 {
		t.max = keptReadingsFor(len(rows))
	}
	t.add(rows)
}

// rows are the kept samples, in reading order.
func (t *thinnedSamples) rows() []results.Sample {
	n := 0
	for _, g := range t.kept {
		n += len(g.v)
	}
	if n == 0 {
		return nil
	}
	out := make([]results.Sample, 0, n)
	for _, g := range t.kept {
		out = append(out, g.v...)
	}
	return out
}

// note says how the samples were thinned ("" when every reading was kept).
func (t *thinned[T]) note(interval string) string {
	if t.step <= 1 {
		return ""
	}
	return fmt.Sprintf("samples table thinned to every %d%s of %d readings (one each %s × %d); the columns are from every reading",
		t.step, ordinal(t.step), t.next, interval, t.step)
}

func ordinal(n int) string {
	switch {
	case n%100 >= 11 && n%100 <= 13:
		return "th"
	case n%10 == 1:
		return "st"
	case n%10 == 2:
		return "nd"
	case n%10 == 3:
		return "rd"
	}
	return "th"
}
