package measure

import (
	"github.com/benchrun/benchrun/internal/results"
)

// fillTools sets a cell's tool-call and structured-output columns from
// its completed requests (docs/METRICS.md, Tool calls and structured
// output): calls per request over those that offered tools, the shares of
// calls with JSON and schema-valid arguments, the share of answers valid
// against the response_format. Each is NULL when no request asked for it,
// and an exact 0 or 100 when every one failed or passed.
func fillTools(row *results.Cell, reqs results.Requests) {
	var withTools, calls, callsJSON, callsValid, formats, valid int64
	for r := range reqs.All() {
		if _, ok := SampleOf(r); !ok {
			continue
		}
		if r.ToolCalls != nil {
			withTools++
			calls += *r.ToolCalls
			callsJSON += derefCount(r.ToolCallsJSON)
			callsValid += derefCount(r.ToolCallsValid)
		}
		if r.AnswerValid != nil {
			formats++
			if *r.AnswerValid {
				valid++
			}
		}
	}
	row.ToolCallsMean = results.SomeIf(withTools > 0, float64(calls)/float64(max(withTools, 1)))
	row.ToolArgsJSONPct = results.SomeIf(calls > 0, pct(callsJSON, calls))
	row.ToolArgsValidPct = results.SomeIf(calls > 0, pct(callsValid, calls))
	row.StructuredValidPct = results.SomeIf(formats > 0, pct(valid, formats))
}

// pct is 100·n/of, exact at 0 and 100 (of > 0).
func pct(n, of int64) float64 {
	if n == of {
		return 100
	}
	return 100 * float64(n) / float64(max(of, 1))
}

func derefCount(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}
