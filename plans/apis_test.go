package plans_test

import (
	"testing"

	"github.com/benchrun/benchrun/internal/results"
)

// TestAPIsPlan runs plans/apis.cue against the simulator: the Responses
// sweep's rows per effort with the simulator's reasoning tokens (20, 80)
// and its time to the first answer the thinking's length after the TTFT
// (60 and 180 ms), the Messages sweep's 40 reasoning tokens and 100 ms,
// every request answered; the rerank rows' documents_s eight times req_s.
func TestAPIsPlan(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the plan")
	}
	cells, _ := runExampleTables(t, "apis.cue")
	byID := map[string]results.Cell{}
	for _, c := range cells {
		byID[c.CellID] = c
	}
	for _, tc := range []struct {
		id      string
		think   float64
		ttfoP50 float64
	}{
		{"responses/64:128/c1/reasoning_effort=low", 20, 60},
		{"responses/64:128/c4/reasoning_effort=high", 80, 180},
		{"messages/64:128/c1", 40, 100},
		{"messages/64:128/c4", 40, 100},
	} {
		c, ok := byID[tc.id]
		switch {
		case !ok:
			t.Errorf("no row %s", tc.id)
		case c.Status != results.StatusOK || c.ReasoningTokensAvg == nil || *c.ReasoningTokensAvg != tc.think || results.ValueOr(c.AnswerTokensAvg, -1) != 128-tc.think:
			t.Errorf("%s: status %s (%s), reasoning %v answer %v tokens per request, want %v and %v", tc.id, c.Status, c.Reason,
				c.ReasoningTokensAvg, results.ValueOr(c.AnswerTokensAvg, -1), tc.think, 128-tc.think)
		case results.ValueOr(c.AnsweredPct, -1) != 100 || results.ValueOr(c.EffectiveISL, -1) != 64:
			t.Errorf("%s: answered %v%%, effective isl %v", tc.id, results.ValueOr(c.AnsweredPct, -1), results.ValueOr(c.EffectiveISL, -1))
		case c.TTFOP50Ms == nil || *c.TTFOP50Ms < tc.ttfoP50 || *c.TTFOP50Ms > tc.ttfoP50+20:
			t.Errorf("%s: ttfo p50 %v ms, want %v", tc.id, results.ValueOr(c.TTFOP50Ms, -1), tc.ttfoP50)
		}
	}
	for _, id := range []string{"rerank/32:1/c1/b8", "rerank/32:1/c4/b8"} {
		c, ok := byID[id]
		if d, r := results.ValueOr(c.DocumentsS, -1), results.ValueOr(c.ReqS, -1); !ok || c.Status != results.StatusOK || d <= 0 || d < 8*r*(1-1e-9) || d > 8*r*(1+1e-9) {
			t.Errorf("%s: found %v, status %s (%s), documents_s %v, req_s %v", id, ok, c.Status, c.Reason, d, r)
		}
	}
}
