package telemetry

import (
	"fmt"

	"github.com/benchrun/benchrun/internal/results"
)

// maxKeptReadings bounds the readings a probe keeps samples of for one
// cell's window: at the default 100 ms interval a window of 102 s keeps
// every reading, and a longer one (a soak's hour) a uniform grid of
// 512 to 1,024 of them, its step doubling each time the grid fills. What
// a probe holds then does not grow with the cell's length; its columns
// are folded from every reading, never from the kept ones.
const maxKeptReadings = 1024

// thinned are a window's readings thinned to a uniform grid of at most
// max of them: reading i (from 0) is kept while i is a multiple of the
// step.
type thinned[T any] struct {
	max  int // 0: maxKeptReadings
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
