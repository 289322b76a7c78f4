package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/benchrun/benchrun/internal/results"
)

// The utilisation-and-power-over-time chart of a cell (report.html): x is
// seconds since the cell's first plotted sample, the left axis GPU
// utilisation in percent (the server's CPU in cores when no GPU was
// read), the right axis power in watts, one line per device. It is drawn
// from the raw telemetry samples (the samples table), which reach the
// sink through pipeline.SampleSink, live or replayed; a cell without such
// samples has no chart, rather than an empty one.

// Sample metrics the chart plots.
const (
	metricGPUUtil = "gpu_util_pct"
	metricPower   = "power_w"
)

// serverCPUMetrics are the proc probe's names for the server's CPU use in
// cores; the chart falls back to it when no GPU was read. More than one
// name is accepted because the probe is newer than this chart.
var serverCPUMetrics = []string{"cpu_util", "cpu_util_cores", "cpu_cores"}

// plotted says whether the chart uses a sample: the sink keeps only these,
// since a long run at 100 ms has many more of every other metric.
func plotted(s results.Sample) bool {
	switch s.Metric {
	case metricGPUUtil, metricPower:
		return true
	}
	return s.Source == "proc" && slices.Contains(serverCPUMetrics, s.Metric)
}

// maxTimePoints bounds the points of one line: a 10-minute cell sampled
// every 100 ms has 6000, more than 600 pixels can show; above it the
// samples are averaged over equal time bins.
const maxTimePoints = 400

// samplesOf returns the samples of the cell's current row, in time order:
// the same cell id and attempt, and for a re-measurement (baseline.confirm)
// none from before the row started, which belong to the first
// measurement. Sorting makes the chart the same whatever order the
// samples came in (live, interleaved with the cells, or replayed after
// them).
func samplesOf(c results.Cell, all []results.Sample) []results.Sample {
	var out []results.Sample
	for _, s := range all {
		if s.CellID != c.CellID || results.AttemptOf(s.Attempt) != results.AttemptOf(c.Attempt) || !plotted(s) || !finite(s.Value) {
			continue
		}
		if c.Measurement > 1 && s.At.Before(c.StartedAt) {
			continue
		}
		out = append(out, s)
	}
	slices.SortStableFunc(out, func(a, b results.Sample) int {
		return cmp.Or(a.At.Compare(b.At), cmp.Compare(a.Device, b.Device), cmp.Compare(a.Metric, b.Metric))
	})
	return out
}

// UsageChart builds a cell's utilisation-and-power chart from the run's
// samples; ok is false when the cell has none to plot.
func UsageChart(c results.Cell, samples []results.Sample) (Chart, bool) {
	ss := samplesOf(c, samples)
	if c.CellID == "" || len(ss) == 0 {
		return Chart{}, false
	}
	t0 := ss[0].At
	// One line per (metric, device), in device order.
	type key struct{ metric, device string }
	lines := map[key][]point{}
	var devices []string
	for _, s := range ss {
		k := key{s.Metric, s.Device}
		if _, ok := lines[k]; !ok && !slices.Contains(devices, s.Device) {
			devices = append(devices, s.Device)
		}
		lines[k] = append(lines[k], point{x: s.At.Sub(t0).Seconds(), y: s.Value})
	}
	slices.Sort(devices)
	gpu := slices.ContainsFunc(ss, func(s results.Sample) bool { return s.Metric == metricGPUUtil })
	tc := &timeChart{title: "Utilisation and power · " + cellLabel(c), xLabel: "seconds since the cell's first sample"}
	var leftMetrics []string
	if gpu {
		tc.left = timeAxis{label: "GPU utilisation, %", max: 100}
		leftMetrics = []string{metricGPUUtil}
	} else {
		tc.left = timeAxis{label: "server CPU, cores"}
		leftMetrics = serverCPUMetrics
	}
	tc.right = timeAxis{label: "power, W"}
	i := 0
	for _, m := range leftMetrics {
		for _, d := range devices {
			if pts := lines[key{m, d}]; len(pts) > 0 {
				what := "GPU util"
				if !gpu {
					what = "server CPU"
				}
				tc.left.series = append(tc.left.series, series{name: strings.TrimSpace(d + " " + what), color: palette[i%len(palette)], pts: binned(pts)})
				i++
			}
		}
	}
	for _, d := range devices {
		if pts := lines[key{metricPower, d}]; len(pts) > 0 {
			tc.right.series = append(tc.right.series, series{name: strings.TrimSpace(d + " power"), color: palette[i%len(palette)], dash: true, pts: binned(pts)})
			i++
		}
	}
	if len(tc.left.series) == 0 && len(tc.right.series) == 0 {
		return Chart{}, false
	}
	var notes []string
	if len(tc.left.series) > 0 {
		notes = append(notes, "solid: "+tc.left.label+" (left axis)")
	}
	if len(tc.right.series) > 0 {
		notes = append(notes, "dashed: "+tc.right.label+" (right axis)")
	}
	tc.note = strings.Join(notes, " · ")
	return Chart{Name: "usage-" + chartSlug(c.CellID), Title: tc.title, SVG: tc.svg()}, true
}

// binned averages a line's points over maxTimePoints equal time bins when
// it has more.
func binned(pts []point) []point {
	if len(pts) <= maxTimePoints {
		return pts
	}
	end := pts[len(pts)-1].x
	width := end / maxTimePoints
	if width <= 0 {
		return pts[:maxTimePoints]
	}
	var out []point
	for lo := 0; lo < len(pts); {
		bin := min(int(pts[lo].x/width), maxTimePoints-1)
		hi := lo
		var sx, sy float64
		for hi < len(pts) && min(int(pts[hi].x/width), maxTimePoints-1) == bin {
			sx += pts[hi].x
			sy += pts[hi].y
			hi++
		}
		n := float64(hi - lo)
		out = append(out, point{x: sx / n, y: sy / n})
		lo = hi
	}
	return out
}

// chartSlug makes a cell id a file and element id: "sweep/64:32/c4" →
// "sweep-64-32-c4".
func chartSlug(id string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(id) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.TrimSuffix(b.String(), "-")
}

// timeAxis is one y axis of a time chart and the lines read against it.
type timeAxis struct {
	label  string
	max    float64 // a fixed top (100 for percent); 0: from the data
	series []series
}

func (a timeAxis) empty() bool {
	return !slices.ContainsFunc(a.series, func(s series) bool { return len(s.pts) > 0 })
}

func (a timeAxis) ticks() []float64 {
	hi := a.max
	for _, s := range a.series {
		for _, p := range s.pts {
			hi = math.Max(hi, p.y)
		}
	}
	return niceTicks(0, hi)
}

// timeChart is a line chart over time with two y axes, rendered as a
// standalone SVG document like chart (no script, no reference).
type timeChart struct {
	title, note, xLabel string
	left, right         timeAxis
}

const marginRTime = 64

func (c *timeChart) svg() string {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="usage" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s" font-family="system-ui,-apple-system,Segoe UI,Roboto,sans-serif" font-size="12">`,
		svgW, svgH, svgW, svgH, esc(c.title))
	fmt.Fprintf(&b, `<title>%s</title>`, esc(c.title))
	b.WriteString(`<rect width="100%" height="100%" fill="#ffffff"/>`)
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="15" font-weight="600" fill="#1f2933">%s</text>`, marginL-40, esc(c.title))
	y := 40
	if c.note != "" {
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#52606d">%s</text>`, marginL-40, y, esc(c.note))
		y += 16
	}
	lx, ly := marginL-40, y
	all := append(slices.Clone(c.left.series), c.right.series...)
	for _, s := range all {
		w := 26 + 7*len(s.name)
		if lx+w > svgW-marginR {
			lx, ly = marginL-40, ly+16
		}
		dash := ""
		if s.dash {
			dash = ` stroke-dasharray="6 4"`
		}
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3"%s/>`, lx, ly-4, lx+16, ly-4, s.color, dash)
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#323f4b">%s</text>`, lx+20, ly, esc(s.name))
		lx += w + 10
	}
	plotL, plotR, plotT, plotB := float64(marginL), float64(svgW-marginRTime), float64(ly+14), float64(svgH-marginB)

	xMax := 0.0
	for _, s := range all {
		for _, p := range s.pts {
			xMax = math.Max(xMax, p.x)
		}
	}
	xTicks := niceTicks(0, xMax)
	xTop := xTicks[len(xTicks)-1]
	xMap := func(x float64) float64 { return plotL + x/xTop*(plotR-plotL) }
	yMapOf := func(ticks []float64) func(float64) float64 {
		top := ticks[len(ticks)-1]
		return func(v float64) float64 { return plotB - v/top*(plotB-plotT) }
	}

	// The grid follows the left axis, or the right one when only it has
	// lines.
	gridAxis := c.left
	if gridAxis.empty() {
		gridAxis = c.right
	}
	gTicks := gridAxis.ticks()
	gMap := yMapOf(gTicks)
	b.WriteString(`<g stroke="#e4e7eb" stroke-width="1">`)
	for _, t := range gTicks {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, plotL, gMap(t), plotR, gMap(t))
	}
	for _, t := range xTicks {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, xMap(t), plotT, xMap(t), plotB)
	}
	b.WriteString(`</g>`)
	fmt.Fprintf(&b, `<path d="M%.1f %.1f V%.1f H%.1f" fill="none" stroke="#9aa5b1" stroke-width="1"/>`, plotL, plotT, plotB, plotR)
	b.WriteString(`<g fill="#52606d" font-size="11">`)
	for _, t := range xTicks {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, xMap(t), plotB+16, formatTick(t))
	}
	b.WriteString(`</g>`)
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#323f4b">%s</text>`, (plotL+plotR)/2, svgH-10, esc(c.xLabel))

	for i, a := range []timeAxis{c.left, c.right} {
		if a.empty() {
			continue
		}
		ticks := a.ticks()
		yMap := yMapOf(ticks)
		x, anchor, labelX := plotL-6, "end", 16.0
		if i == 1 {
			x, anchor, labelX = plotR+6, "start", float64(svgW)-12
			fmt.Fprintf(&b, `<path d="M%.1f %.1f V%.1f" fill="none" stroke="#9aa5b1" stroke-width="1"/>`, plotR, plotT, plotB)
		}
		b.WriteString(`<g fill="#52606d" font-size="11">`)
		for _, t := range ticks {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="%s">%s</text>`, x, yMap(t)+4, anchor, formatTick(t))
		}
		b.WriteString(`</g>`)
		fmt.Fprintf(&b, `<text transform="translate(%.1f %.1f) rotate(-90)" text-anchor="middle" fill="#323f4b">%s</text>`, labelX, (plotT+plotB)/2, esc(a.label))
		for _, s := range a.series {
			if len(s.pts) == 0 {
				continue
			}
			var d strings.Builder
			for j, p := range s.pts {
				cmd := "L"
				if j == 0 {
					cmd = "M"
				}
				fmt.Fprintf(&d, "%s%.1f %.1f ", cmd, xMap(p.x), yMap(p.y))
			}
			dash := ""
			if s.dash {
				dash = ` stroke-dasharray="6 4"`
			}
			lo, hi, mean := lineStats(s.pts)
			fmt.Fprintf(&b, `<path class="usage-line" d="%s" fill="none" stroke="%s" stroke-width="2"%s><title>%s</title></path>`,
				strings.TrimSpace(d.String()), s.color, dash, esc(fmt.Sprintf("%s: min %s, mean %s, max %s", s.name, formatTick(lo), formatTick(mean), formatTick(hi))))
		}
	}
	b.WriteString(`</svg>`)
	return b.String()
}

func lineStats(pts []point) (lo, hi, mean float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, p := range pts {
		lo, hi = math.Min(lo, p.y), math.Max(hi, p.y)
		mean += p.y
	}
	return lo, hi, mean / float64(len(pts))
}

// keepSamples is what the sink keeps of a batch of samples.
func keepSamples(dst []results.Sample, rows []results.Sample) []results.Sample {
	for _, s := range rows {
		if s.CellID != "" && plotted(s) {
			dst = append(dst, s)
		}
	}
	return dst
}
