package report

import (
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/sinks/internal/runview"
)

// UsageChart builds a cell's utilisation-and-power chart from the run's
// samples; ok is false when the cell has none to plot.
func UsageChart(c results.Cell, samples []results.Sample) (Chart, bool) {
	return runview.UsageChart(c, samples)
}

// keepSamples is what the sink keeps of a batch of samples.
func keepSamples(dst []results.Sample, rows []results.Sample) []results.Sample {
	for _, s := range rows {
		if s.CellID != "" && runview.Plotted(s) {
			dst = append(dst, s)
		}
	}
	return dst
}
