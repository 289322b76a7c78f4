package measure

import (
	"github.com/benchrun/benchrun/internal/results"
)

// toolReading gathers a cell's tool-call and structured-output columns
// from its completed requests (docs/METRICS.md, Tool calls and structured
// output): calls per request over those that offered tools, the shares of
// calls with JSON and schema-valid arguments, the share of answers valid
// against the response_format. Each is NULL when no request asked for it,
// and an exact 0 or 100 when every one failed or passed.
type toolReading struct {
	withTools, calls, callsJSON, callsValid, formats, valid int64
}

// add reads one completed request.
func (t *toolReading) add(r *results.Request) {
	if r.ToolCalls != nil {
		t.withTools++
		t.calls += *r.ToolCalls
		t.callsJSON += derefCount(r.ToolCallsJSON)
		t.callsValid += derefCount(r.ToolCallsValid)
	}
	if r.AnswerValid != nil {
		t.formats++
		if *r.AnswerValid {
			t.valid++
		}
	}
}

// fill sets the tool-call and structured-output columns.
func (t *toolReading) fill(row *results.Cell) {
	row.ToolCallsMean = results.SomeIf(t.withTools > 0, float64(t.calls)/float64(max(t.withTools, 1)))
	row.ToolArgsJSONPct = results.SomeIf(t.calls > 0, pct(t.callsJSON, t.calls))
	row.ToolArgsValidPct = results.SomeIf(t.calls > 0, pct(t.callsValid, t.calls))
	row.StructuredValidPct = results.SomeIf(t.formats > 0, pct(t.valid, t.formats))
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
