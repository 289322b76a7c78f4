package measure

import (
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/stats"
)

// lengthReading gathers the completed requests' prompt and output
// lengths as the server counted them, for their percentiles: with
// effective_isl and effective_osl (their means) the realised length
// distribution, which a cell drawing its lengths (docs/PLANS.md, Length
// distributions) is judged by.
type lengthReading struct{ in, out []float64 }

// newLengthReading holds up to n requests' lengths without growing.
func newLengthReading(n int) lengthReading {
	return lengthReading{in: make([]float64, 0, n), out: make([]float64, 0, n)}
}

func (l *lengthReading) add(r *results.Request) {
	if r.Status != results.StatusOK {
		return
	}
	l.in = append(l.in, float64(r.InputTokens))
	l.out = append(l.out, float64(r.OutputTokens))
}

// fill sets the length percentiles, NULL when nothing completed.
func (l *lengthReading) fill(row *results.Cell) {
	row.EffectiveISLP50, row.EffectiveISLP90, row.EffectiveISLP99 = nil, nil, nil
	row.EffectiveOSLP50, row.EffectiveOSLP90, row.EffectiveOSLP99 = nil, nil, nil
	if len(l.in) == 0 {
		return
	}
	i, o := stats.SummarizeInPlace(l.in), stats.SummarizeInPlace(l.out)
	row.EffectiveISLP50, row.EffectiveISLP90, row.EffectiveISLP99 = results.Some(i.P50), results.Some(i.P90), results.Some(i.P99)
	row.EffectiveOSLP50, row.EffectiveOSLP90, row.EffectiveOSLP99 = results.Some(o.P50), results.Some(o.P90), results.Some(o.P99)
}
