package plans_test

import (
	"math"
	"testing"

	"github.com/benchrun/benchrun/internal/results"
)

// TestToolsPlan runs plans/tools.cue against the simulator: every request
// of the tool sweeps is ok with one call (a tool call is an answer), the
// arguments' rates read within ±3 points of the simulator's 10 % cut
// and 10 % schema-invalid over 400 requests, and the structured sweep's
// valid rate within ±3 of its 95 %, its tool columns NULL.
func TestToolsPlan(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the plan")
	}
	cells, _ := runExampleTables(t, "tools.cue")
	byStage := map[string]results.Cell{}
	for _, c := range cells {
		byStage[c.Stage] = c
	}
	near := func(p *float64, want float64) bool { return p != nil && math.Abs(*p-want) <= 3 }
	tools, forced, structured := byStage["tools"], byStage["forced"], byStage["structured"]
	if tools.Status != results.StatusOK || tools.Completed != 400 || tools.ToolCallsMean == nil || *tools.ToolCallsMean != 1 ||
		!near(tools.ToolArgsJSONPct, 90) || !near(tools.ToolArgsValidPct, 80) {
		t.Errorf("tools: status %s, %d completed, %v calls per request, args JSON %v %%, valid %v %%; want ok, 400, 1, 90 ± 3, 80 ± 3",
			tools.Status, tools.Completed, tools.ToolCallsMean, tools.ToolArgsJSONPct, tools.ToolArgsValidPct)
	}
	if forced.Status != results.StatusOK || forced.ToolCallsMean == nil || *forced.ToolCallsMean != 1 {
		t.Errorf("forced: status %s, %v calls per request", forced.Status, forced.ToolCallsMean)
	}
	if structured.Status != results.StatusOK || !near(structured.StructuredValidPct, 95) || structured.ToolCallsMean != nil {
		t.Errorf("structured: status %s, %v %% valid, %v tool calls; want ok, 95 ± 3, NULL", structured.Status, structured.StructuredValidPct, structured.ToolCallsMean)
	}
}
