package measure

import (
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
)

// thinking is an ok request that reasoned r tokens from ttfr and answered
// a tokens from ttfo (ttfo 0: no answer, its reasoning ending at e2el).
func thinking(ttfr, ttfo, e2el float64, r, a int64) results.Request {
	q := okReq(0, 0, ttfr, e2el, nil, []int64{r + a})
	q.TTFRMs, q.ReasoningTokens, q.AnswerTokens = results.Some(ttfr), results.Some(r), results.Some(a)
	q.ReasoningSource, q.Answered = "events", results.Some(ttfo > 0)
	if ttfo > 0 {
		q.TTFOMs, q.ReasoningEndMs = results.Some(ttfo), results.Some(ttfo-5)
	} else {
		q.ReasoningEndMs = results.Some(e2el)
	}
	return q
}

// TestFillCellReasoning: the cell's reasoning columns from its requests:
// ttfo over those that answered, tokens per request, each phase's rate,
// the answered share; a failed request counts in none of them.
func TestFillCellReasoning(t *testing.T) {
	reqs := []results.Request{
		thinking(20, 1020, 1175, 200, 32),     // 200 tok / 1 s; 31 / 155 ms = 200 tok/s
		thinking(20, 1020, 1175, 200, 32),     // the same
		thinking(20, 0, 515, 100, 0),          // cut: 99 tok / 495 ms = 200 tok/s, no answer
		failedReq(time.Second, 0, "HTTP 500"), // nothing
	}
	// Two of them answered with a tool call: the first call's token at
	// 1020 and 1100 ms (the second wrote text first).
	reqs[0].TTFTCMs, reqs[1].TTFTCMs = results.Some(1020.0), results.Some(1100.0)
	var row results.Cell
	FillCell(&row, results.AsRequests(reqs), CellWindow{Span: 2 * time.Second}, SLO{})
	switch {
	case !near(row.TTFTCMs, 1060):
		t.Errorf("ttftc %v, want the mean of 1020 and 1100 over the requests that called", row.TTFTCMs)
	case !near(row.TTFOP50Ms, 1020) || !near(row.TTFOMs, 1020) || !near(row.TTFOMaxMs, 1020):
		t.Errorf("ttfo mean %v p50 %v max %v, want 1020", row.TTFOMs, row.TTFOP50Ms, row.TTFOMaxMs)
	case !near(row.TTFRMs, 20):
		t.Errorf("ttfr %v, want 20", row.TTFRMs)
	case !near(row.ReasoningTokensAvg, 500.0/3) || !near(row.AnswerTokensAvg, 64.0/3):
		t.Errorf("tokens per request: reasoning %v answer %v", row.ReasoningTokensAvg, row.AnswerTokensAvg)
	case !near(row.ReasoningTokS, 200) || !near(row.AnswerTokS, 200):
		t.Errorf("rates: reasoning %v answer %v tok/s, want 200 and 200", row.ReasoningTokS, row.AnswerTokS)
	case !near(row.AnsweredPct, 200.0/3):
		t.Errorf("answered_pct %v, want 66.7", row.AnsweredPct)
	}
	// Rows written before the columns existed leave them NULL.
	var old results.Cell
	FillCell(&old, results.AsRequests([]results.Request{okReq(0, 0, 10, 40, []float64{10, 20}, nil)}), CellWindow{Span: time.Second}, SLO{})
	if old.TTFOMs != nil || old.AnsweredPct != nil || old.ReasoningTokensAvg != nil || old.TTFTCMs != nil {
		t.Errorf("rows without reasoning columns: ttfo %v answered %v reasoning %v, want NULL", old.TTFOMs, old.AnsweredPct, old.ReasoningTokensAvg)
	}
}
