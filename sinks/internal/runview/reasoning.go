package runview

import (
	"fmt"

	"github.com/benchrun/benchrun/internal/chart"
	"github.com/benchrun/benchrun/internal/results"
)

// Colours of a request's three phases in the time-split chart.
var phaseColors = [3]string{"#9aa5b1", chart.Palette[1], chart.Palette[0]}

// ReasoningCharts draws, per shape whose requests thought, where a
// request's time went at each load level: to its first token (queueing
// and prefill: ttft_ms), thinking (ttfo_ms − ttft_ms) and answering
// (e2el_ms − ttfo_ms), a stacked bar of the cell's means, which sum to
// its e2el_ms. A cell with an unanswered request is left out (its TTFO
// mean would be over fewer requests than its E2EL's) and counted in the
// note; a shape where nothing thought draws nothing.
func ReasoningCharts(cells []results.Cell) []chart.Rendered {
	order, shapes := byShape(cells, func(c results.Cell) bool {
		return c.Status == results.StatusOK && results.ValueOr(c.ReasoningTokensAvg, 0) > 0
	})
	var out []chart.Rendered
	for _, k := range order {
		bc := &chart.Bars{Title: fmt.Sprintf("%s: where a request's time went", k), XLabel: "ms per request, means (shorter is better)"}
		left := 0
		for _, c := range shapes[k] {
			ttft, ttfo, e2el := c.TTFTMs, c.TTFOMs, c.E2ELMs
			if ttft == nil || ttfo == nil || e2el == nil || results.ValueOr(c.AnsweredPct, 0) != 100 {
				left++
				continue
			}
			label := LoadLabel(c)
			if c.Reasoning != "" {
				label += " " + c.Reasoning
			}
			phases := [3]float64{*ttft, *ttfo - *ttft, *e2el - *ttfo}
			names := [3]string{"to first token (queue and prefill)", "thinking", "answering"}
			var segs []chart.Segment
			for i, v := range phases {
				segs = append(segs, chart.Segment{Value: max(v, 0), Color: phaseColors[i], Tip: fmt.Sprintf("%s: %s %.1f ms", label, names[i], v)})
			}
			bc.Bars = append(bc.Bars, chart.Bar{Label: label, Segments: segs})
		}
		if len(bc.Bars) == 0 {
			continue
		}
		bc.Note = "grey: to first token · orange: thinking · blue: answering"
		if left > 0 {
			bc.Note += fmt.Sprintf(" · %d load levels with unanswered requests left out", left)
		}
		out = append(out, chart.Rendered{Name: "reasoning-" + k.slug(), Title: bc.Title, SVG: bc.SVG()})
	}
	return out
}
