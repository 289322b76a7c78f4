package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/stats"
	"github.com/benchrun/benchrun/sinks/internal/runview"
)

// repeatRow is one metric of one repeated point: its mean over the
// repeats, the 95% interval and the coefficient of variation (AIPerf
// reports repeats the same way).
type repeatRow struct {
	Point, Metric      string
	N                  int
	Mean, Interval, CV string
}

// repeatMetrics are the metrics summarised over repeats.
var repeatMetrics = []struct {
	name string
	get  func(results.Cell) *float64
}{
	{results.LabelOf(results.ColOutputTokS), func(c results.Cell) *float64 { return c.OutputTokS }},
	{results.LabelOf(results.ColReqS), func(c results.Cell) *float64 { return c.ReqS }},
	{results.LabelOf(results.ColTTFTP50Ms), func(c results.Cell) *float64 { return c.TTFTP50Ms }},
	{results.LabelOf(results.ColTTFTP99Ms), func(c results.Cell) *float64 { return c.TTFTP99Ms }},
	{results.LabelOf(results.ColITLP50Ms), func(c results.Cell) *float64 { return c.ITLP50Ms }},
	{results.LabelOf(results.ColITLP99Ms), func(c results.Cell) *float64 { return c.ITLP99Ms }},
}

// repeatRows summarises the repeated points (cells with a repeat
// number), over their ok rows, in the order the points first appear. A
// metric null in a repeat is left out of that repeat (n says how many
// counted).
func repeatRows(cells []results.Cell) []repeatRow {
	type group struct {
		label string
		rows  []results.Cell
	}
	var order []string
	groups := map[string]*group{}
	for _, c := range cells {
		if c.Repeat <= 0 || c.Status != results.StatusOK {
			continue
		}
		point := strings.TrimSuffix(c.CellID, fmt.Sprintf("/rep%d", c.Repeat))
		g := groups[point]
		if g == nil {
			g = &group{label: runview.CellLabel(c)}
			groups[point] = g
			order = append(order, point)
		}
		g.rows = append(g.rows, c)
	}
	var out []repeatRow
	for _, p := range order {
		g := groups[p]
		for _, m := range repeatMetrics {
			var xs []float64
			for _, c := range g.rows {
				if v := m.get(c); v != nil && !math.IsNaN(*v) {
					xs = append(xs, *v)
				}
			}
			if len(xs) == 0 {
				continue
			}
			iv := stats.MeanCI(xs)
			row := repeatRow{Point: g.label, Metric: m.name, N: iv.N, Mean: shortFloat(iv.Mean), Interval: "–", CV: "–"}
			if !math.IsNaN(iv.Lo) {
				row.Interval = fmt.Sprintf("%s … %s (±%.1f%%)", shortFloat(iv.Lo), shortFloat(iv.Hi), iv.HalfWidthPct)
			}
			if !math.IsNaN(iv.CV) {
				row.CV = fmt.Sprintf("%.1f%%", 100*iv.CV)
			}
			out = append(out, row)
		}
	}
	return out
}

func shortFloat(v float64) string {
	switch a := math.Abs(v); {
	case a >= 100:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.4f", v)
}
