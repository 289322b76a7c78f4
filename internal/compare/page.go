package compare

import (
	"cmp"
	"fmt"
	"html"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/benchrun/benchrun/internal/chart"
	"github.com/benchrun/benchrun/internal/regress"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/rundir"
	"github.com/benchrun/benchrun/internal/stats"
)

// The page of `benchrun compare --html FILE`: the variants drawn against
// each other, shape by shape, with the verdicts beside the charts.
//
//   - A variant (side) is an argument's runs, or with --by the runs' cells
//     of one value of the key. The first is the baseline.
//   - A shape is one stage's isl:osl under one kind of load: closed loop
//     (x: concurrency) or open loop (x: request rate). Each gets four
//     charts: TTFT p50 and TPOT p50 against output tokens/s (one curve per
//     variant through its load levels in load order, the Pareto front over
//     every variant's points dashed and ringed), and TTFT and ITL p50
//     (solid) and p99 (dashed) against the load.
//   - A variant's value at a load level is the median of its rows there:
//     its runs' (repeats') values; a NULL is no value, never 0. Rows the
//     verdicts leave out (not ok, client-bound: regress.Exclusion) are not
//     drawn, nor are an SLO search's knee rows (copies of a probe) or a
//     benchmark program's rows (no load level).
//   - Beside the charts, the verdicts of the shape's cells, comparison by
//     comparison; a cell whose shape is not known (--ignore cell_id) is in
//     a last section. Each comparison's geometric means and notes close the
//     page.

// Page is what `compare --html` draws.
type Page struct {
	By      string
	Sides   []Side
	Comps   []Comparison
	Options regress.Options
}

// shape is a chart group: one stage's isl:osl under one kind of load.
type shape struct {
	Stage    string
	ISL, OSL int64
	Rate     bool // open loop: the load is the request rate
}

func (s shape) String() string {
	n := fmt.Sprintf("%s %d:%d", s.Stage, s.ISL, s.OSL)
	if s.Rate {
		n += " (open loop)"
	}
	return n
}

// plottedMetrics are the metrics the page draws.
var plottedMetrics = []string{results.ColOutputTokS, results.ColTTFTP50Ms, results.ColTTFTP99Ms, results.ColITLP50Ms, results.ColITLP99Ms, results.ColTPOTP50Ms}

// level is one variant's values at one load level of a shape: the
// median of each plotted metric over its rows (NaN when none measured it).
type level struct {
	Load  float64 // the concurrency, or the request rate
	Label string  // "c=4", "2 req/s"
	Rows  int
	Vals  map[string]float64
}

// curves is one shape's load levels, by variant, in load order.
type curves struct {
	Shape  shape
	Levels [][]level
}

// plotRow says whether the page draws a row: one the verdicts would
// read, at a load level.
func plotRow(c *results.Cell, r *regress.Run, o regress.Options) bool {
	return regress.Exclusion(c, r, o) == "" && c.Search != "knee" && c.Program == ""
}

func shapeOf(c *results.Cell) shape {
	return shape{Stage: c.Stage, ISL: c.ISL, OSL: c.OSL, Rate: c.Rate > 0}
}

// collect gathers every variant's load levels, shape by shape in the
// order shapes first appear.
func collect(sides []Side, o regress.Options) []curves {
	type acc struct {
		label string
		rows  int
		vals  map[string][]float64
	}
	var shapes []shape
	byShape := map[shape][]map[float64]*acc{}
	metrics := make([]regress.Metric, len(plottedMetrics))
	for i, n := range plottedMetrics {
		metrics[i], _ = regress.LookupMetric(n)
	}
	for si, side := range sides {
		for _, r := range side.Runs {
			for i := range r.Cells {
				c := &r.Cells[i]
				if !plotRow(c, r, o) {
					continue
				}
				sh := shapeOf(c)
				if _, ok := byShape[sh]; !ok {
					shapes = append(shapes, sh)
					byShape[sh] = make([]map[float64]*acc, len(sides))
				}
				if byShape[sh][si] == nil {
					byShape[sh][si] = map[float64]*acc{}
				}
				load, label := results.LoadPoint(c)
				a := byShape[sh][si][load]
				if a == nil {
					a = &acc{label: label, vals: map[string][]float64{}}
					byShape[sh][si][load] = a
				}
				a.rows++
				for _, m := range metrics {
					if v := m.Value(c); v != nil && !math.IsNaN(*v) && !math.IsInf(*v, 0) {
						a.vals[m.Name] = append(a.vals[m.Name], *v)
					}
				}
			}
		}
	}
	out := make([]curves, 0, len(shapes))
	for _, sh := range shapes {
		cv := curves{Shape: sh, Levels: make([][]level, len(sides))}
		for si, levels := range byShape[sh] {
			for _, load := range slices.Sorted(maps.Keys(levels)) {
				a := levels[load]
				l := level{Load: load, Label: a.label, Rows: a.rows, Vals: map[string]float64{}}
				for _, n := range plottedMetrics {
					l.Vals[n] = stats.Percentile(a.vals[n], 50) // NaN for none
				}
				cv.Levels[si] = append(cv.Levels[si], l)
			}
		}
		out = append(out, cv)
	}
	return out
}

// paretoFront is the points no other point beats: none has at least its
// throughput (X) and at most its latency (Y) while better in one of them.
// They come in order of throughput (and so of latency); points alike are
// all on it, and a point not finite is not.
func paretoFront(pts []chart.Point) []chart.Point {
	ok := func(p chart.Point) bool {
		return !math.IsNaN(p.X) && !math.IsNaN(p.Y) && !math.IsInf(p.X, 0) && !math.IsInf(p.Y, 0)
	}
	var front []chart.Point
	for i, p := range pts {
		if !ok(p) {
			continue
		}
		beaten := slices.ContainsFunc(pts, func(q chart.Point) bool {
			return ok(q) && q.X >= p.X && q.Y <= p.Y && (q.X > p.X || q.Y < p.Y)
		})
		if !beaten {
			front = append(front, pts[i])
		}
	}
	slices.SortStableFunc(front, func(a, b chart.Point) int { return cmp.Or(cmp.Compare(a.X, b.X), cmp.Compare(a.Y, b.Y)) })
	return front
}

// medianNote says what a point's value is, for its tip.
func medianNote(rows int) string {
	if rows <= 1 {
		return ""
	}
	return fmt.Sprintf(" (median of %d rows)", rows)
}

const (
	chartW = 480
	chartH = 340
)

// tradeoffChart draws one latency against throughput: a curve per
// variant through its load levels, the Pareto front of all their points
// dashed and ringed.
func tradeoffChart(cv curves, sides []Side, metric, name string) *chart.Line {
	c := &chart.Line{Title: name + " vs throughput", XLabel: "output tokens/s, all requests (higher is better)",
		YLabel: name + ", ms (lower is better)", Note: "a point per load level · ringed, dashed: the Pareto front",
		Empty: "nothing measured", Width: chartW, Height: chartH}
	var all []chart.Point
	for si, levels := range cv.Levels {
		s := chart.Series{Name: sides[si].Label, Color: chart.Palette[si%len(chart.Palette)], Ordered: true}
		last := ""
		for _, l := range levels {
			x, y := l.Vals[results.ColOutputTokS], l.Vals[metric]
			if math.IsNaN(x) || math.IsNaN(y) {
				continue
			}
			s.Points = append(s.Points, chart.Point{X: x, Y: y,
				Tip: fmt.Sprintf("%s %s: %s output tok/s, %s %s ms%s", sides[si].Label, l.Label, fmtNum(x), name, fmtNum(y), medianNote(l.Rows))})
			last = l.Label
		}
		if n := len(s.Points); n > 0 {
			// The highest load's point is labelled, so a curve reads from
			// its start; every point's tip names its load.
			s.Points[n-1].Label = last
		}
		c.Series = append(c.Series, s)
		all = append(all, s.Points...)
	}
	front := paretoFront(all)
	if len(front) > 0 {
		line := chart.Series{Name: "Pareto front", Color: "#7b8794", Dash: true, Plain: true}
		for _, p := range front {
			line.Points = append(line.Points, chart.Point{X: p.X, Y: p.Y})
			c.Marks = append(c.Marks, chart.Mark{X: p.X, Y: p.Y, Shape: chart.MarkRing, Tip: "Pareto front: " + p.Tip})
		}
		c.Series = append(c.Series, line)
	}
	return c
}

// levelChart draws a latency's p50 (solid) and p99 (dashed) against the
// load, a colour per variant.
func levelChart(cv curves, sides []Side, p50, p99, name, what string) *chart.Line {
	xLabel := "concurrency (in-flight requests)"
	if cv.Shape.Rate {
		xLabel = "request rate (req/s)"
	}
	c := &chart.Line{Title: name + " p50 and p99 vs load", XLabel: xLabel, YLabel: what + ", ms (lower is better)",
		LogX: !cv.Shape.Rate, Note: "solid: p50 · dashed: p99", Empty: "nothing measured", Width: chartW, Height: chartH}
	for si, levels := range cv.Levels {
		color := chart.Palette[si%len(chart.Palette)]
		for _, q := range []struct {
			metric, pct string
			dash        bool
		}{{p50, "p50", false}, {p99, "p99", true}} {
			s := chart.Series{Name: sides[si].Label, Color: color, Dash: q.dash}
			for _, l := range levels {
				if y := l.Vals[q.metric]; !math.IsNaN(y) {
					s.Points = append(s.Points, chart.Point{X: l.Load, Y: y,
						Tip: fmt.Sprintf("%s %s: %s %s %s ms%s", sides[si].Label, l.Label, name, q.pct, fmtNum(y), medianNote(l.Rows))})
				}
			}
			c.Series = append(c.Series, s)
		}
	}
	return c
}

// pageCSS lays a shape's charts out beside its verdicts (below them on
// a narrow window) and wraps a table's long values within its width.
const pageCSS = ` .shape{display:flex;flex-wrap:wrap;gap:1.5em;align-items:flex-start;border-top:1px solid #cbd2d9;margin-top:1.5em}
.charts{display:grid;gap:.5em;flex:0 1 500px;min-width:0}.charts svg{width:100%;height:auto}
.verdicts{flex:1 1 560px;min-width:0}.verdicts h4{margin:.8em 0 .2em}
table.v{table-layout:fixed;width:100%;font-size:13px}table.v th,table.v td{white-space:normal;overflow-wrap:anywhere;word-break:break-word;padding:4px 5px}
table.v th,table.v td.n{overflow-wrap:normal;word-break:normal}
ul.sides li span.swatch{display:inline-block;width:1.6em;height:.35em;vertical-align:middle;margin-right:.4em}`

// verdictCols are the widths of a verdict table's columns.
const verdictCols = `<colgroup><col style="width:15%"><col style="width:10%"><col style="width:10%"><col style="width:11%"><col style="width:14%"><col style="width:9%"><col style="width:6%"><col style="width:25%"></colgroup>`

// WritePageFile writes the page to path.
func WritePageFile(path string, p Page) error {
	if err := rundir.WriteFileAtomic(path, []byte(pageHTML(p))); err != nil {
		return fmt.Errorf("--html: %w", err)
	}
	return nil
}

// pageHTML is the page: the variants and their runs, then each shape's
// charts with its verdicts, then each comparison's summary.
func pageHTML(p Page) string {
	var b strings.Builder
	e := html.EscapeString
	title := "benchrun compare"
	if p.By != "" {
		title += " by " + p.By
	}
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + e(title) + "</title><style>" + compareCSS + pageCSS + "</style></head><body>\n")
	fmt.Fprintf(&b, "<h1>%s</h1>\n<ul class=\"sides\">\n", e(title))
	for i, s := range p.Sides {
		var ids []string
		for _, r := range s.Runs {
			ids = append(ids, r.ID)
		}
		role := ""
		if i == 0 && len(p.Sides) > 1 {
			role = " (baseline)"
		}
		fmt.Fprintf(&b, "<li><span class=\"swatch\" style=\"background:%s\"></span><strong>%s</strong>%s: %s</li>\n",
			chart.Palette[i%len(chart.Palette)], e(s.Label), role, e(runList(ids)))
	}
	b.WriteString("</ul>\n")
	for _, c := range p.Comps {
		fmt.Fprintf(&b, "<p><strong>%s</strong>: %s</p>\n", e(compTitle(c, p.Sides)), e(totals(c.Report)))
	}
	if len(p.Comps) > 0 {
		fmt.Fprintf(&b, "<p class=\"method\">%s. A point is the median of a variant's rows at a load level.</p>\n", e(methodLine(p.Comps[0].Report)))
	}
	shapes := collect(p.Sides, p.Options)
	placed := cellShapes(p.Sides)
	if len(shapes) == 0 {
		b.WriteString("<p>No ok cells to plot.</p>\n")
	}
	for _, cv := range shapes {
		fmt.Fprintf(&b, "<section class=\"shape\">\n<div class=\"charts\">\n<h2 style=\"grid-column:1/-1\">%s</h2>\n", e(cv.Shape.String()))
		for _, c := range []*chart.Line{
			tradeoffChart(cv, p.Sides, results.ColTTFTP50Ms, "TTFT p50"),
			tradeoffChart(cv, p.Sides, results.ColTPOTP50Ms, "TPOT p50"),
			levelChart(cv, p.Sides, results.ColTTFTP50Ms, results.ColTTFTP99Ms, "TTFT", "time to first token"),
			levelChart(cv, p.Sides, results.ColITLP50Ms, results.ColITLP99Ms, "ITL", "inter-token latency"),
		} {
			b.WriteString(chart.Inline(c.SVG()))
			b.WriteString("\n")
		}
		b.WriteString("</div>\n<div class=\"verdicts\">\n")
		htmlShapeVerdicts(&b, p, func(k regress.Key) bool { s, ok := placed[k.CellID]; return ok && s == cv.Shape })
		b.WriteString("</div>\n</section>\n")
	}
	plotted := map[shape]bool{}
	for _, cv := range shapes {
		plotted[cv.Shape] = true
	}
	var rest strings.Builder
	htmlShapeVerdicts(&rest, p, func(k regress.Key) bool { s, ok := placed[k.CellID]; return !ok || !plotted[s] })
	if rest.Len() > 0 {
		fmt.Fprintf(&b, "<section class=\"shape\"><div class=\"verdicts\">\n<h2>other cells</h2>\n%s</div></section>\n", rest.String())
	}
	for _, c := range p.Comps {
		fmt.Fprintf(&b, "<h2>%s</h2>\n", e(compTitle(c, p.Sides)))
		htmlNotes(&b, c.Report, "h3")
	}
	b.WriteString("</body></html>\n")
	return b.String()
}

// compTitle names a comparison: its title, or old → new by the sides'
// labels.
func compTitle(c Comparison, sides []Side) string {
	if c.Title != "" {
		return c.Title
	}
	if len(sides) == 2 {
		return sides[0].Label + " → " + sides[1].Label
	}
	return "old → new"
}

// cellShapes maps each cell id (less its repeat) of the sides' rows
// to its shape.
func cellShapes(sides []Side) map[string]shape {
	m := map[string]shape{}
	for _, s := range sides {
		for _, r := range s.Runs {
			for i := range r.Cells {
				c := &r.Cells[i]
				if _, ok := m[regress.PointID(*c)]; !ok {
					m[regress.PointID(*c)] = shapeOf(c)
				}
			}
		}
	}
	return m
}

// htmlShapeVerdicts writes the verdict tables of the cells that keep
// chooses, comparison by comparison; nothing when it chooses none.
func htmlShapeVerdicts(b *strings.Builder, p Page, keep func(regress.Key) bool) {
	e := html.EscapeString
	for _, c := range p.Comps {
		keys, cells := byCell(c.Report)
		keys = slices.DeleteFunc(keys, func(k regress.Key) bool { return !keep(k) })
		if len(keys) == 0 {
			continue
		}
		fmt.Fprintf(b, "<h3>%s</h3>\n", e(compTitle(c, p.Sides)))
		for _, k := range keys {
			fmt.Fprintf(b, "<h4>%s</h4>\n<div class=\"key\">%s</div>\n<table class=\"v\">%s", e(k.CellID), e(k.String()), verdictCols)
			htmlVerdictRows(b, cells[k])
		}
	}
}
