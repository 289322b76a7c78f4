package engine

import (
	"fmt"
	"sync"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/pipeline"
)

// cellTally counts one stage's cell rows of this attempt and its error
// rows, with the first error, as they are emitted.
type cellTally struct {
	rows, errors int
	first        string
}

// cellTallies is every stage's tally, safe for the stages' goroutines.
type cellTallies struct {
	mu sync.Mutex
	by map[string]*cellTally
}

// add counts a cell row.
func (t *cellTallies) add(c results.Cell) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.by == nil {
		t.by = map[string]*cellTally{}
	}
	n := t.by[c.Stage]
	if n == nil {
		n = &cellTally{}
		t.by[c.Stage] = n
	}
	if results.MeasurementOf(c.Measurement) == 1 {
		n.rows++ // a confirmation is the same cell, measured again
	}
	if c.Status == results.StatusError {
		n.errors++
		if n.first == "" {
			n.first = fmt.Sprintf("%s: %s", pipeline.CellLabel(c), c.Reason)
		}
	}
}

// errorReason says why a stage whose run returned no error is not ok:
// "2 of 6 cells error; first: sweep 64:32 c=1: 8 of 8 requests failed;
// first: HTTP 500: ..." ("" when none of its cells is an error).
func (t *cellTallies) errorReason(stage string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := t.by[stage]
	if n == nil || n.errors == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d cells error; first: %s", n.errors, n.rows, n.first)
}

// currentErrors says why a service whose rows (a launch stage's
// start-ups) include errors is not ok, from the current row of each of
// its cells: an error a retried start replaced does not count. "" when
// none is an error.
func (r *runner) currentErrors(stage string) string {
	rows := r.judge.Rows(stage)
	n, first := 0, ""
	for _, c := range rows {
		if c.Status == results.StatusError {
			if n++; first == "" {
				first = fmt.Sprintf("%s: %s", pipeline.CellLabel(c), c.Reason)
			}
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d cells error; first: %s", n, len(rows), first)
}
