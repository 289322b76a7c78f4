// Package runview is how the sinks show a run to people: the charts of its
// load levels and telemetry, and the labels of its cells. The report and
// SiYuan sinks draw the same charts and name cells alike from here.
package runview

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/benchrun/benchrun/internal/chart"
	"github.com/benchrun/benchrun/internal/results"
)

// load is the x axis a group of cells is plotted against.
type load struct {
	key    string // "concurrency" or "rate"
	label  string
	logX   bool
	x      func(results.Cell) float64
	pointL func(results.Cell) string
}

var loads = []load{
	{"concurrency", "concurrency (in-flight requests)", true,
		func(c results.Cell) float64 { return float64(c.Concurrency) },
		func(c results.Cell) string { return fmt.Sprintf("c=%d", c.Concurrency) }},
	{"rate", "request rate (req/s)", false,
		func(c results.Cell) float64 { return c.Rate },
		func(c results.Cell) string { return fmt.Sprintf("%g/s", c.Rate) }},
}

func (l load) has(c results.Cell) bool {
	if l.key == "rate" {
		return c.Rate > 0
	}
	return c.Rate == 0
}

// group is the ok cells of one shape (stage, isl:osl) under one load kind.
type group struct {
	name  string
	cells []results.Cell
}

func groups(cells []results.Cell, l load) []group {
	stages := map[string]bool{}
	for _, c := range cells {
		stages[c.Stage] = true
	}
	byName := map[string]*group{}
	var order []string
	for _, c := range cells {
		if c.Status != results.StatusOK || !l.has(c) || c.Search == "knee" || c.Program != "" {
			// A knee row repeats one of its search's probes; a program's
			// rows are ProgramCharts'.
			continue
		}
		name := fmt.Sprintf("%d:%d", c.ISL, c.OSL)
		if len(stages) > 1 {
			name = c.Stage + " " + name
		}
		g, ok := byName[name]
		if !ok {
			g = &group{name: name}
			byName[name] = g
			order = append(order, name)
		}
		g.cells = append(g.cells, c)
	}
	out := make([]group, 0, len(order))
	for _, n := range order {
		out = append(out, *byName[n])
	}
	return out
}

func hasPoints(c *chart.Line) bool {
	return slices.ContainsFunc(c.Series, func(s chart.Series) bool { return len(s.Points) > 0 })
}

// Charts draws a run: its load levels (LoadCharts), then what its
// benchmark programs reported (ProgramCharts).
func Charts(cells []results.Cell) []chart.Rendered {
	return append(LoadCharts(cells), ProgramCharts(cells)...)
}

// LoadCharts draws a run's load levels: output tokens/s, TTFT and ITL (p50
// and p99) against concurrency or rate, and the latency-throughput
// trade-off, for the ok cells of each shape; a chart nothing was measured
// for is left out.
func LoadCharts(cells []results.Cell) []chart.Rendered {
	var out []chart.Rendered
	for _, l := range loads {
		gs := groups(cells, l)
		if len(gs) == 0 {
			continue
		}
		suffix := ""
		if l.key == "rate" {
			suffix = "-rate"
		}
		tput := &chart.Line{Title: "Output tokens/s vs " + l.key, XLabel: l.label, YLabel: "output tokens/s (higher is better)", LogX: l.logX}
		ttft := &chart.Line{Title: "TTFT p50 and p99 vs " + l.key, XLabel: l.label, YLabel: "time to first token, ms (lower is better)", LogX: l.logX, Note: "solid: p50 · dashed: p99"}
		itl := &chart.Line{Title: "ITL p50 and p99 vs " + l.key, XLabel: l.label, YLabel: "inter-token latency, ms (lower is better)", LogX: l.logX, Note: "solid: p50 · dashed: p99"}
		trade := &chart.Line{Title: "Latency-throughput trade-off", XLabel: "output tokens/s per request (1000 / TPOT; interactivity)", YLabel: "output tokens/s, all requests", Note: "each point is a load level; up and to the right is better"}
		for i, g := range gs {
			color := chart.Palette[i%len(chart.Palette)]
			var pt, p50, p99, i50, i99, tr []chart.Point
			for _, c := range g.cells {
				x := l.x(c)
				lbl := l.pointL(c)
				// A metric that was not measured (null) is no point.
				add := func(pts *[]chart.Point, y *float64, format string) {
					if y != nil {
						*pts = append(*pts, chart.Point{X: x, Y: *y, Tip: fmt.Sprintf("%s %s: "+format, g.name, lbl, *y)})
					}
				}
				add(&pt, c.OutputTokS, "%.1f output tok/s")
				add(&p50, c.TTFTP50Ms, "TTFT p50 %.2f ms")
				add(&p99, c.TTFTP99Ms, "TTFT p99 %.2f ms")
				add(&i50, c.ITLP50Ms, "ITL p50 %.2f ms")
				add(&i99, c.ITLP99Ms, "ITL p99 %.2f ms")
				if tpot, out := results.ValueOr(c.TPOTMs, 0), c.OutputTokS; tpot > 0 && out != nil {
					per := 1000 / tpot
					p99 := "–"
					if c.TTFTP99Ms != nil {
						p99 = fmt.Sprintf("%.1f", *c.TTFTP99Ms)
					}
					tr = append(tr, chart.Point{X: per, Y: *out, Label: lbl,
						Tip: fmt.Sprintf("%s %s: %.1f tok/s per request, %.1f tok/s total, TTFT p99 %s ms", g.name, lbl, per, *out, p99)})
				}
			}
			tput.Series = append(tput.Series, chart.Series{Name: g.name, Color: color, Points: pt})
			ttft.Series = append(ttft.Series, chart.Series{Name: g.name, Color: color, Points: p50}, chart.Series{Name: g.name, Color: color, Dash: true, Points: p99})
			itl.Series = append(itl.Series, chart.Series{Name: g.name, Color: color, Points: i50}, chart.Series{Name: g.name, Color: color, Dash: true, Points: i99})
			trade.Series = append(trade.Series, chart.Series{Name: g.name, Color: color, Points: tr})
		}
		for i, c := range []*chart.Line{tput, ttft, itl, trade} {
			if !hasPoints(c) {
				continue // nothing of it was measured: no chart saying so
			}
			out = append(out, chart.Rendered{Name: []string{"throughput", "ttft", "itl", "tradeoff"}[i] + suffix, Title: c.Title, SVG: c.SVG()})
		}
	}
	return out
}

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

// Plotted says whether the chart uses a sample: the sink keeps only these,
// since a long run at 100 ms has many more of every other metric.
func Plotted(s results.Sample) bool {
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
		if s.CellID != c.CellID || results.AttemptOf(s.Attempt) != results.AttemptOf(c.Attempt) || !Plotted(s) || math.IsNaN(s.Value) || math.IsInf(s.Value, 0) {
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
func UsageChart(c results.Cell, samples []results.Sample) (chart.Rendered, bool) {
	ss := samplesOf(c, samples)
	if c.CellID == "" || len(ss) == 0 {
		return chart.Rendered{}, false
	}
	t0 := ss[0].At
	// One line per (metric, device), in device order.
	type key struct{ metric, device string }
	lines := map[key][]chart.Point{}
	var devices []string
	for _, s := range ss {
		k := key{s.Metric, s.Device}
		if _, ok := lines[k]; !ok && !slices.Contains(devices, s.Device) {
			devices = append(devices, s.Device)
		}
		lines[k] = append(lines[k], chart.Point{X: s.At.Sub(t0).Seconds(), Y: s.Value})
	}
	slices.Sort(devices)
	gpu := slices.ContainsFunc(ss, func(s results.Sample) bool { return s.Metric == metricGPUUtil })
	tc := &chart.TwoAxis{Title: "Utilisation and power · " + CellLabel(c), XLabel: "seconds since the cell's first sample"}
	var leftMetrics []string
	if gpu {
		tc.Left = chart.Axis{Label: "GPU utilisation, %", Max: 100}
		leftMetrics = []string{metricGPUUtil}
	} else {
		tc.Left = chart.Axis{Label: "server CPU, cores"}
		leftMetrics = serverCPUMetrics
	}
	tc.Right = chart.Axis{Label: "power, W"}
	i := 0
	for _, m := range leftMetrics {
		for _, d := range devices {
			if pts := lines[key{m, d}]; len(pts) > 0 {
				what := "GPU util"
				if !gpu {
					what = "server CPU"
				}
				tc.Left.Series = append(tc.Left.Series, chart.Series{Name: strings.TrimSpace(d + " " + what), Color: chart.Palette[i%len(chart.Palette)], Points: binned(pts)})
				i++
			}
		}
	}
	for _, d := range devices {
		if pts := lines[key{metricPower, d}]; len(pts) > 0 {
			tc.Right.Series = append(tc.Right.Series, chart.Series{Name: strings.TrimSpace(d + " power"), Color: chart.Palette[i%len(chart.Palette)], Dash: true, Points: binned(pts)})
			i++
		}
	}
	if len(tc.Left.Series) == 0 && len(tc.Right.Series) == 0 {
		return chart.Rendered{}, false
	}
	var notes []string
	if len(tc.Left.Series) > 0 {
		notes = append(notes, "solid: "+tc.Left.Label+" (left axis)")
	}
	if len(tc.Right.Series) > 0 {
		notes = append(notes, "dashed: "+tc.Right.Label+" (right axis)")
	}
	tc.Note = strings.Join(notes, " · ")
	return chart.Rendered{Name: "usage-" + ChartSlug(c.CellID), Title: tc.Title, SVG: tc.SVG()}, true
}

// binned averages a line's points over maxTimePoints equal time bins when
// it has more.
func binned(pts []chart.Point) []chart.Point {
	if len(pts) <= maxTimePoints {
		return pts
	}
	end := pts[len(pts)-1].X
	width := end / maxTimePoints
	if width <= 0 {
		return pts[:maxTimePoints]
	}
	var out []chart.Point
	for lo := 0; lo < len(pts); {
		bin := min(int(pts[lo].X/width), maxTimePoints-1)
		hi := lo
		var sx, sy float64
		for hi < len(pts) && min(int(pts[hi].X/width), maxTimePoints-1) == bin {
			sx += pts[hi].X
			sy += pts[hi].Y
			hi++
		}
		n := float64(hi - lo)
		out = append(out, chart.Point{X: sx / n, Y: sy / n})
		lo = hi
	}
	return out
}

// ChartSlug makes a cell id a file and element id: "sweep/64:32/c4" →
// "sweep-64-32-c4".
func ChartSlug(id string) string {
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

// CellLabel names a cell row for people: "sweep 128:128 c=4", with its
// measurement when the row is a re-measurement.
func CellLabel(c results.Cell) string {
	label := fmt.Sprintf("%s %d:%d c=%d", c.Stage, c.ISL, c.OSL, c.Concurrency)
	if c.Rate > 0 {
		label = fmt.Sprintf("%s %d:%d rate=%g", c.Stage, c.ISL, c.OSL, c.Rate)
	}
	if c.Measurement > 1 {
		label += fmt.Sprintf(" (measurement %d)", c.Measurement)
	}
	return label
}

// LoadLabel is a cell's load: the ladder point, and its repeat.
func LoadLabel(c results.Cell) string {
	_, l := results.LoadPoint(&c)
	if c.Search == "knee" {
		// An SLO search's knee: a copy of the probe it names.
		l = "knee: " + l
	}
	if c.Repeat > 0 {
		l += fmt.Sprintf(" rep %d", c.Repeat)
	}
	return l
}

// ProgramCharts draws the rows benchmark programs reported (an exec
// stage's llama-bench, mlx-lm or generic program), one bar chart a stage:
// each ok row's throughput, with its spread when the program gave one.
func ProgramCharts(cells []results.Cell) []chart.Rendered {
	var stages []string
	byStage := map[string][]results.Cell{}
	for _, c := range cells {
		if c.Program == "" || c.Status != results.StatusOK {
			continue
		}
		if _, ok := byStage[c.Stage]; !ok {
			stages = append(stages, c.Stage)
		}
		byStage[c.Stage] = append(byStage[c.Stage], c)
	}
	var out []chart.Rendered
	for _, st := range stages {
		rows := byStage[st]
		bc := &chart.Bars{Title: fmt.Sprintf("%s: %s tokens/s", st, rows[0].Program), XLabel: "tokens/s (higher is better)"}
		kinds := map[string]int{}
		for _, c := range rows {
			v, err, what := programRate(c)
			if v == nil {
				continue
			}
			k, ok := kinds[what]
			if !ok {
				k = len(kinds)
				kinds[what] = k
			}
			label := ProgramLabel(c)
			tip := fmt.Sprintf("%s: %s %s tok/s", label, what, strconv.FormatFloat(*v, 'f', 2, 64))
			if err > 0 {
				tip += fmt.Sprintf(" ± %s", strconv.FormatFloat(err, 'f', 2, 64))
			}
			bc.Bars = append(bc.Bars, chart.Bar{Label: label, Value: *v, Err: err, Color: chart.Palette[k%len(chart.Palette)], Tip: tip})
		}
		if len(bc.Bars) == 0 {
			continue
		}
		var legend []string
		for what, k := range kinds {
			legend = append(legend, fmt.Sprintf("%s (%s)", what, []string{"blue", "orange", "red", "teal", "green"}[k%5]))
		}
		slices.Sort(legend)
		bc.Note = strings.Join(legend, " · ")
		if slices.ContainsFunc(bc.Bars, func(b chart.Bar) bool { return b.Err > 0 }) {
			bc.Note += " · whiskers: ± the program's standard deviation"
		}
		out = append(out, chart.Rendered{Name: "program-" + ChartSlug(st), Title: bc.Title, SVG: bc.SVG()})
	}
	return out
}

// programRate is the throughput a program's row is drawn by: llama-bench's
// avg_ts (± stddev_ts), else the decode, output or prefill rate it mapped.
func programRate(c results.Cell) (v *float64, err float64, what string) {
	switch {
	case c.AvgTS != nil:
		return c.AvgTS, results.ValueOr(c.StddevTS, 0), results.ColAvgTS
	case c.DecodeTokS != nil:
		return c.DecodeTokS, 0, "decode"
	case c.OutputTokS != nil:
		return c.OutputTokS, 0, "output"
	case c.PrefillTokS != nil:
		return c.PrefillTokS, 0, "prefill"
	}
	return nil, 0, ""
}

// ProgramLabel names a program's row for people: its test ("pp512",
// "tg128@d4096"), else its lengths.
func ProgramLabel(c results.Cell) string {
	l := c.BenchTest
	if l == "" {
		l = fmt.Sprintf("%d:%d", c.ISL, c.OSL)
	}
	if c.Repeat > 0 {
		l += fmt.Sprintf(" rep %d", c.Repeat)
	}
	return l
}

// ServedModel is the model file as served: its name and quantization
// ("stories260K.gguf, F32"), "" when the plan names no file there was.
func ServedModel(r results.Run) string {
	if r.ModelFile == "" {
		return ""
	}
	if r.ModelQuant != "" {
		return r.ModelFile + ", " + r.ModelQuant
	}
	return r.ModelFile
}
