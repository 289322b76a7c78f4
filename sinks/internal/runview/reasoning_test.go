package runview

import (
	"regexp"
	"strings"
	"testing"

	"github.com/benchrun/benchrun/internal/results"
)

// TestReasoningChartsSplitTheTime: a thinking model's load levels draw as
// stacked bars whose parts are the cell's TTFT, its thinking (TTFO −
// TTFT) and its answering (E2EL − TTFO), summing to the E2EL; a level
// with an unanswered request is left out and said; a run that did not
// think draws no such chart.
func TestReasoningChartsSplitTheTime(t *testing.T) {
	cell := func(conc int64, ttft, ttfo, e2el, answered float64) results.Cell {
		return results.Cell{Stage: "sweep", ISL: 64, OSL: 32, Concurrency: conc, Status: results.StatusOK, Completed: 8,
			TTFTMs: results.Some(ttft), TTFOMs: results.Some(ttfo), E2ELMs: results.Some(e2el),
			ReasoningTokensAvg: results.Some(200.0), AnsweredPct: results.Some(answered)}
	}
	cells := []results.Cell{cell(1, 20, 1020, 1135, 100), cell(16, 80, 1080, 1540, 100), cell(32, 90, 1100, 1600, 87.5)}
	charts := ReasoningCharts(cells)
	if len(charts) != 1 || charts[0].Name != "reasoning-sweep-64-32" {
		t.Fatalf("charts %v, want one named reasoning-sweep-64-32", charts)
	}
	svg := charts[0].SVG
	var tips []string
	for _, m := range regexp.MustCompile(`class="segment"[^>]*><title>([^<]*)</title>`).FindAllStringSubmatch(svg, -1) {
		tips = append(tips, m[1])
	}
	want := []string{
		"c=1: to first token (queue and prefill) 20.0 ms", "c=1: thinking 1000.0 ms", "c=1: answering 115.0 ms",
		"c=16: to first token (queue and prefill) 80.0 ms", "c=16: thinking 1000.0 ms", "c=16: answering 460.0 ms",
	}
	if strings.Join(tips, "|") != strings.Join(want, "|") {
		t.Errorf("segments:\n got %q\nwant %q", tips, want)
	}
	if !strings.Contains(svg, ">1135<") || !strings.Contains(svg, ">1540<") || !strings.Contains(svg, "1 load levels with unanswered requests left out") {
		t.Errorf("bar totals are not the E2EL means, or the left-out level is not said")
	}
	for i := range cells {
		cells[i].ReasoningTokensAvg = results.Some(0.0)
	}
	if got := ReasoningCharts(cells); len(got) != 0 {
		t.Errorf("a run that did not think drew %d time-split charts", len(got))
	}
}
