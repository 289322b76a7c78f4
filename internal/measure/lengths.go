package measure

import (
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/stats"
)

// fillLengths sets the percentiles of the completed requests' prompt and
// output lengths as the server counted them: with effective_isl and
// effective_osl (their means) the realised length distribution, which a
// cell drawing its lengths (docs/PLANS.md, Length distributions) is
// judged by. NULL when nothing completed.
func fillLengths(row *results.Cell, reqs results.Requests, completed int) {
	in := make([]float64, 0, completed)
	out := make([]float64, 0, completed)
	for r := range reqs.All() {
		if r.Status != results.StatusOK {
			continue
		}
		in = append(in, float64(r.InputTokens))
		out = append(out, float64(r.OutputTokens))
	}
	row.EffectiveISLP50, row.EffectiveISLP90, row.EffectiveISLP99 = nil, nil, nil
	row.EffectiveOSLP50, row.EffectiveOSLP90, row.EffectiveOSLP99 = nil, nil, nil
	if len(in) == 0 {
		return
	}
	i, o := stats.Summarize(in), stats.Summarize(out)
	row.EffectiveISLP50, row.EffectiveISLP90, row.EffectiveISLP99 = results.Some(i.P50), results.Some(i.P90), results.Some(i.P99)
	row.EffectiveOSLP50, row.EffectiveOSLP90, row.EffectiveOSLP99 = results.Some(o.P50), results.Some(o.P90), results.Some(o.P99)
}
