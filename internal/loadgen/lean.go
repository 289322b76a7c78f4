package loadgen

import (
	"time"

	"github.com/benchrun/benchrun/internal/results"
)

// Lean drops what only a request's row needs (RequestRow) from a result
// whose row is built, so that a cell holds little more than its rows
// until it ends (docs/METRICS.md, "Memory per finished request"): the
// answer's text, and every token event and stamp delay but the first and
// the last, which keep TTFT, E2EL and a mixed cell's user-space stamps
// (CellStamps; measure.UserStamps on its row) exact. Events still says
// how many events there were.
func (r *Result) Lean() {
	r.events = r.Events()
	paired := len(r.StampDelays) == len(r.Tokens) // one delay per event
	if n := len(r.Tokens); n > 2 {
		r.Tokens = []TokenEvent{r.Tokens[0], r.Tokens[n-1]}
	}
	switch n := len(r.StampDelays); {
	case !paired:
		r.StampDelays = nil // userStamps leaves such a result's stamps as they are
	case n > 2:
		r.StampDelays = []time.Duration{r.StampDelays[0], r.StampDelays[n-1]}
	}
	r.Text = ""
}

// Events is how many token events the request received.
func (r *Result) Events() int {
	if r.events > 0 {
		return r.events
	}
	return len(r.Tokens)
}

// Keep is what a measuring stage keeps of a finished request until its
// cell ends: its row (seq and cell are the caller's to set) and the
// result, Lean.
func Keep(r Result) (results.Request, Result) {
	row := RequestRow(results.Cell{}, 0, &r)
	r.Lean()
	return row, r
}
