package runview

import (
	"fmt"
	"slices"

	"github.com/benchrun/benchrun/internal/chart"
	"github.com/benchrun/benchrun/internal/measure"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/stats"
)

// distLevels is how many percentiles a distribution keeps: 0, 1, ... 100.
// A cell's raw samples can be millions of gaps; its curve needs these.
const distLevels = 101

// Dist is a cell's latency distributions: its TTFT, ITL and E2EL at each
// whole percentile (nil without samples), from its completed requests.
type Dist struct {
	TTFT, ITL, E2EL []float64
}

// DistOf computes a cell's distributions from its request rows.
func DistOf(reqs results.Requests) Dist {
	var ttft, e2el []float64
	// The gaps, one per token, are ranked rather than held (a soak's are
	// tens of millions): the same levels. Rank's first reading gathers
	// the TTFT and E2EL too.
	first := true
	itl := stats.Rank(func(yield func(float64)) {
		for r := range reqs.All() {
			s, ok := measure.SampleOf(r)
			if !ok {
				continue
			}
			if first {
				ttft, e2el = append(ttft, s.TTFTMs), append(e2el, s.E2ELMs)
			}
			for _, g := range s.GapsMs {
				yield(g)
			}
		}
		first = false
	}, func(n int) []int { return stats.PercentileRanks(n, levelPcts()...) }, stats.MaxHeld)
	var itlLevels []float64
	if itl.N > 0 {
		itlLevels = make([]float64, distLevels)
		for i := range itlLevels {
			itlLevels[i] = itl.Percentile(float64(i))
		}
	}
	return Dist{TTFT: levels(ttft), ITL: itlLevels, E2EL: levels(e2el)}
}

// levelPcts are the whole percentiles a distribution keeps.
func levelPcts() []float64 {
	out := make([]float64, distLevels)
	for i := range out {
		out[i] = float64(i)
	}
	return out
}

// levels is xs's whole percentiles; it sorts xs in place (DistOf's own:
// a sorted copy held a long cell's gaps twice at its end).
func levels(xs []float64) []float64 {
	if len(xs) == 0 {
		return nil
	}
	slices.Sort(xs)
	sorted := xs
	out := make([]float64, distLevels)
	for i := range out {
		out[i] = stats.SortedPercentile(sorted, float64(i))
	}
	return out
}

// DistCharts draws, per stage and shape, each latency's distribution
// (the share of requests at or under a latency) at every load level:
// where the tail starts, which a p99 alone hides. dists holds the cells'
// distributions by cell id.
func DistCharts(cells []results.Cell, dists map[string]Dist) []chart.Rendered {
	type shape struct {
		stage    string
		isl, osl int64
	}
	var order []shape
	byShape := map[shape][]results.Cell{}
	for _, c := range cells {
		if c.Status != results.StatusOK || c.Program != "" || c.Search == "knee" {
			continue
		}
		if _, ok := dists[c.CellID]; !ok {
			continue
		}
		k := shape{c.Stage, c.ISL, c.OSL}
		if _, ok := byShape[k]; !ok {
			order = append(order, k)
		}
		byShape[k] = append(byShape[k], c)
	}
	metrics := []struct {
		key, name string
		of        func(Dist) []float64
	}{
		{"ttft", "TTFT", func(d Dist) []float64 { return d.TTFT }},
		{"itl", "ITL", func(d Dist) []float64 { return d.ITL }},
		{"e2el", "E2EL", func(d Dist) []float64 { return d.E2EL }},
	}
	var out []chart.Rendered
	for _, k := range order {
		for _, m := range metrics {
			l := &chart.Line{
				Title:  fmt.Sprintf("%s distribution · %s %d:%d", m.name, k.stage, k.isl, k.osl),
				XLabel: m.name + ", ms", YLabel: "requests at or under it, % (ITL: gaps)", FitX: true,
				Note: "one curve a load level; a curve far right at the top is a tail",
			}
			for i, c := range byShape[k] {
				q := m.of(dists[c.CellID])
				if q == nil {
					continue
				}
				s := chart.Series{Name: LoadLabel(c), Color: chart.Palette[i%len(chart.Palette)], Plain: true}
				for p, v := range q {
					pt := chart.Point{X: v, Y: float64(p)}
					if p%10 == 0 || p == 95 || p == 99 {
						pt.Tip = fmt.Sprintf("%s p%d: %.2f ms", LoadLabel(c), p, v)
					}
					s.Points = append(s.Points, pt)
				}
				l.Series = append(l.Series, s)
			}
			if !hasPoints(l) {
				continue
			}
			out = append(out, chart.Rendered{Name: fmt.Sprintf("dist-%s-%s-%d-%d", m.key, ChartSlug(k.stage), k.isl, k.osl), Title: l.Title, SVG: l.SVG()})
		}
	}
	return out
}
