package report_test

import (
	"math"
	"strings"
	"testing"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/sinks/report"
)

func TestChartsByLoadKind(t *testing.T) {
	closed := fixture().Cells
	open := make([]results.Cell, len(closed))
	for i, c := range closed {
		c.Rate, c.Concurrency = float64(c.Concurrency)*2, 0
		open[i] = c
	}
	broken := make([]results.Cell, len(closed))
	for i, c := range closed {
		c.Status = results.StatusError
		broken[i] = c
	}
	nan := append([]results.Cell(nil), closed...)
	nan[1].OutputTokS, nan[1].TTFTP99Ms, nan[2].ITLP50Ms = results.Some(math.NaN()), results.Some(math.Inf(1)), nil

	for _, tc := range []struct {
		name  string
		cells []results.Cell
		want  string
	}{
		{"closed loop", closed, "throughput ttft itl tradeoff"},
		{"open loop", open, "throughput-rate ttft-rate itl-rate tradeoff-rate rate-sweep-64-32 rate-sweep-256-32"},
		{"both", append(append([]results.Cell(nil), closed...), open...), "throughput ttft itl tradeoff throughput-rate ttft-rate itl-rate tradeoff-rate rate-sweep-64-32 rate-sweep-256-32"},
		{"no ok cell", broken, ""},
		{"unmeasured values", nan, "throughput ttft itl tradeoff"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			charts := report.Charts(report.Data{Cells: tc.cells})
			var names []string
			for _, c := range charts {
				names = append(names, c.Name)
				if strings.Contains(c.SVG, "NaN") || strings.Contains(c.SVG, "Inf") {
					t.Errorf("%s: SVG carries a non-finite coordinate", c.Name)
				}
				if !strings.HasPrefix(c.SVG, "<svg ") || !strings.HasSuffix(c.SVG, "</svg>") {
					t.Errorf("%s: not an SVG document", c.Name)
				}
			}
			if got := strings.Join(names, " "); got != tc.want {
				t.Errorf("charts %q, want %q", got, tc.want)
			}
		})
	}
}
