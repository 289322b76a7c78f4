package validate

import (
	"fmt"
	"time"

	"github.com/benchrun/benchrun/internal/loadgen"
	"github.com/benchrun/benchrun/internal/measure"
	"github.com/benchrun/benchrun/internal/results"
)

// fillRow computes the documents' row from the timed requests over the
// timed window with the sweep's definitions (measure.FillCell,
// docs/METRICS.md), so that a ratio divides like by like, and returns the
// cell's request rows. Failed requests are counted and kept out of every
// latency figure.
func fillRow(row *results.Cell, rs []loadgen.Result, window time.Duration, slo measure.SLO) []results.Request {
	// First: it may set a mixed cell's kernel stamps back to user ones.
	stampNote := loadgen.CellNotes(row, rs)
	reqs := loadgen.RequestRows(*row, rs)
	intervals, span := measure.SendsOf(results.RequestSlice(reqs))
	measure.FillCell(row, results.RequestSlice(reqs), measure.CellWindow{Span: window, SendIntervals: intervals, SendSpan: span}, slo)
	row.Notes = fmt.Sprintf("prompts from %d real documents (isl is the synthetic cell's; see effective_isl and synthetic_effective_isl)", row.Documents)
	if stampNote != "" {
		row.Notes += "; " + stampNote
	}
	return reqs
}
