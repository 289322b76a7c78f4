// Package chart draws benchrun's charts as standalone SVG documents: no
// script, no external reference, so a chart displays anywhere (a browser
// from a file, a Markdown viewer, SiYuan). Every chart benchrun draws (the
// report's, the telemetry's, history's) is a Line or a TwoAxis, so they
// all look alike.
package chart

import (
	"fmt"
	"html"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Palette is Tableau 10: distinct, colour-blind-aware, readable on white.
var Palette = []string{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"}

// Point is one value of a series.
type Point struct {
	X, Y  float64
	Label string // shown beside the marker (e.g. "c=4"); "" for none
	Tip   string // the marker's tooltip
}

// Series is one line: a solid line with filled markers, or dashed with
// hollow ones.
type Series struct {
	Name   string
	Color  string
	Dash   bool
	Points []Point
	// Plain draws the line without a marker at each point (a curve of
	// many points); a point with a tip gets an invisible marker for it.
	Plain bool
	// Ordered draws the line through the points in the order given
	// rather than by x: a curve whose x can turn back (throughput across
	// load levels, which can fall past saturation).
	Ordered bool
}

// Line is a line chart rendered as a standalone SVG document: no script,
// no external reference, so it displays anywhere (a browser from a file,
// a Markdown viewer, a notebook, SiYuan). Every chart benchrun draws is a
// Line or a TwoAxis, so they all look alike.
type Line struct {
	Title  string
	XLabel string
	YLabel string
	LogX   bool   // log2 x axis (concurrency ladders)
	Note   string // one line under the title, e.g. "solid p50 · dashed p99"
	Series []Series
	// TimeX reads X as Unix seconds and labels the axis with dates.
	TimeX bool
	// FitY spans the y axis over the values (padded) instead of from 0:
	// for a metric over time, whose changes would be flat from zero.
	FitY bool
	// FitX does the same for a linear x axis: a distribution of
	// latencies that all sit near 20 ms.
	FitX bool
	// Marks are points called out over the series: each drawn as its
	// Shape says.
	Marks []Mark
	// Bands are shaded ranges drawn under the series (a baseline's
	// prediction interval at each load level).
	Bands []Band
	// Empty is what an empty chart says ("no ok cells to plot" if unset).
	Empty string
	// Width and Height in pixels; 600 × 360 if unset.
	Width, Height int
}

// Mark is a point called out on a chart.
type Mark struct {
	X, Y  float64
	Tip   string
	Shape MarkShape
}

// Band is a shaded range over x: Low to High at each point, joined.
type Band struct {
	Name, Color string
	Points      []BandPoint
}

// BandPoint is a band's range at one x.
type BandPoint struct {
	X, Low, High float64
	Tip          string
}

// MarkShape is how a mark is drawn; each has its own class, so a page's
// marks can be told apart and counted.
type MarkShape int

const (
	// MarkChange is a red ring with a dashed line down to the x axis
	// (class "mark"): a change point.
	MarkChange MarkShape = iota
	// MarkAlert is a red cross (class "mark alert"): a value a check
	// failed, such as a night whose baseline check called it regressed.
	MarkAlert
	// MarkRing is a dark ring (class "mark ring"): a point that belongs
	// to a set drawn across series, such as a Pareto front.
	MarkRing
)

// Rendered is a chart drawn: its file name stem (charts/<Name>.svg), its
// title and the SVG document.
type Rendered struct {
	Name  string
	Title string
	SVG   string
}

const (
	svgW    = 600
	svgH    = 360
	marginL = 64
	marginR = 20
	marginB = 48
)

func (c *Line) size() (w, h int) {
	w, h = c.Width, c.Height
	if w <= 0 {
		w = svgW
	}
	if h <= 0 {
		h = svgH
	}
	return w, h
}

// SVG renders the chart.
func (c *Line) SVG() string {
	c.dropUnplottable()
	W, H := c.size()
	var b strings.Builder
	y := header(&b, "", W, H, c.Title, c.Note)
	top := c.legend(&b, W, y)
	plotL, plotR, plotT, plotB := float64(marginL), float64(W-marginR), float64(top), float64(H-marginB)

	var xs, ys []float64
	for i := range c.Series {
		for _, p := range c.Series[i].Points {
			xs = append(xs, p.X)
			ys = append(ys, p.Y)
		}
	}
	for _, band := range c.Bands {
		for _, p := range band.Points {
			xs = append(xs, p.X)
			ys = append(ys, p.Low, p.High)
		}
	}
	if len(xs) == 0 {
		empty := c.Empty
		if empty == "" {
			empty = "no ok cells to plot"
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" fill="#7b8794">%s</text></svg>`, W/2, H/2, esc(empty))
		return b.String()
	}
	yLo, yTicks := 0.0, niceTicks(0, slices.Max(ys))
	if c.FitY {
		yLo, yTicks = fitTicks(slices.Min(ys), slices.Max(ys))
	}
	yMax := yTicks[len(yTicks)-1]
	xTicks, xMap, xLabel := c.xAxis(xs, plotL, plotR)
	yMap := func(v float64) float64 { return plotB - (v-yLo)/(yMax-yLo)*(plotB-plotT) }

	// Grid and axes.
	drawGrid(&b, yTicks, yMap, xTicks, xMap, plotL, plotR, plotT, plotB)
	b.WriteString(`<g fill="#52606d" font-size="11">`)
	for i, l := range tickLabels(yTicks) {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`, plotL-6, yMap(yTicks[i])+4, l)
	}
	for i, l := range xLabel(xTicks) {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, xMap(xTicks[i]), plotB+16, l)
	}
	b.WriteString(`</g>`)
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#323f4b">%s</text>`, (plotL+plotR)/2, H-10, esc(c.XLabel))
	fmt.Fprintf(&b, `<text transform="translate(16 %.1f) rotate(-90)" text-anchor="middle" fill="#323f4b">%s</text>`, (plotT+plotB)/2, esc(c.YLabel))

	for _, band := range c.Bands {
		drawBand(&b, band, xMap, yMap)
	}
	for _, s := range c.Series {
		if len(s.Points) > 0 {
			drawSeries(&b, s, xMap, yMap)
		}
	}
	for _, m := range c.Marks {
		if !finite(m.X) || !finite(m.Y) || (c.LogX && m.X <= 0) {
			continue
		}
		drawMark(&b, m, xMap(m.X), yMap(m.Y), plotT, plotB)
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// drawMark writes one mark at pixel (x, y), its tip as its title.
func drawMark(b *strings.Builder, m Mark, x, y, plotT, plotB float64) {
	switch m.Shape {
	case MarkAlert:
		fmt.Fprintf(b, `<path class="mark alert" d="M%.1f %.1f l10 10 M%.1f %.1f l-10 10" stroke="#c81e1e" stroke-width="2.6" stroke-linecap="round"><title>%s</title></path>`,
			x-5, y-5, x+5, y-5, esc(m.Tip))
	case MarkRing:
		fmt.Fprintf(b, `<circle class="mark ring" cx="%.1f" cy="%.1f" r="7.5" fill="none" stroke="#323f4b" stroke-width="1.6"><title>%s</title></circle>`, x, y, esc(m.Tip))
	default:
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e15759" stroke-dasharray="4 3"/>`, x, plotT, x, plotB)
		fmt.Fprintf(b, `<circle class="mark" cx="%.1f" cy="%.1f" r="7" fill="none" stroke="#c81e1e" stroke-width="2"><title>%s</title></circle>`, x, y, esc(m.Tip))
	}
}

// dropUnplottable leaves out of the series the points that cannot be drawn.
func (c *Line) dropUnplottable() {
	for i := range c.Series {
		// A point that could not be measured (NaN, ±Inf) is left out, and so
		// is x <= 0 on a log axis.
		c.Series[i].Points = slices.DeleteFunc(slices.Clone(c.Series[i].Points), func(p Point) bool {
			return !finite(p.X) || !finite(p.Y) || (c.LogX && p.X <= 0)
		})
	}
	for i := range c.Bands {
		c.Bands[i].Points = slices.DeleteFunc(slices.Clone(c.Bands[i].Points), func(p BandPoint) bool {
			return !finite(p.X) || !finite(p.Low) || !finite(p.High) || (c.LogX && p.X <= 0)
		})
	}
}

// drawBand shades a band: along its lows in x order, back along its highs,
// with each point's range tipped.
func drawBand(b *strings.Builder, band Band, xMap, yMap func(float64) float64) {
	if len(band.Points) == 0 {
		return
	}
	pts := slices.Clone(band.Points)
	slices.SortStableFunc(pts, func(a, b BandPoint) int { return cmpFloat(a.X, b.X) })
	var d strings.Builder
	for i, p := range pts {
		cmd := "L"
		if i == 0 {
			cmd = "M"
		}
		fmt.Fprintf(&d, "%s%.1f %.1f ", cmd, xMap(p.X), yMap(p.Low))
	}
	for i := len(pts) - 1; i >= 0; i-- {
		fmt.Fprintf(&d, "L%.1f %.1f ", xMap(pts[i].X), yMap(pts[i].High))
	}
	if len(pts) == 1 { // one x: a bar a few pixels wide
		x := xMap(pts[0].X)
		d.Reset()
		fmt.Fprintf(&d, "M%.1f %.1f L%.1f %.1f L%.1f %.1f L%.1f %.1f ", x-6, yMap(pts[0].Low), x+6, yMap(pts[0].Low), x+6, yMap(pts[0].High), x-6, yMap(pts[0].High))
	}
	fmt.Fprintf(b, `<path class="band" d="%sZ" fill="%s" fill-opacity="0.18" stroke="%s" stroke-opacity="0.5" stroke-width="1"/>`, d.String(), band.Color, band.Color)
	for _, p := range pts {
		if p.Tip != "" {
			fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="transparent" stroke-width="8"><title>%s</title></line>`, xMap(p.X), yMap(p.Low), xMap(p.X), yMap(p.High), esc(p.Tip))
		}
	}
}

// legend writes one entry per distinct series name, wrapped across lines,
// from the line at y on a chart w wide; it returns the top of the plot
// below it.
func (c *Line) legend(b *strings.Builder, w, y int) int {
	lx, ly := marginL-40, y
	for _, band := range c.Bands {
		if len(band.Points) == 0 {
			continue
		}
		fmt.Fprintf(b, `<rect x="%d" y="%d" width="16" height="9" fill="%s" fill-opacity="0.3"/>`, lx, ly-9, band.Color)
		fmt.Fprintf(b, `<text x="%d" y="%d" fill="#323f4b">%s</text>`, lx+20, ly, esc(band.Name))
		lx += 36 + 7*len(band.Name)
	}
	seen := map[string]bool{}
	for _, s := range c.Series {
		if seen[s.Name] || len(s.Points) == 0 {
			continue
		}
		seen[s.Name] = true
		sw := 26 + 7*len(s.Name)
		if lx+sw > w-marginR {
			lx, ly = marginL-40, ly+16
		}
		dash := "" // a name's first series sets its entry: solid, or dashed
		if s.Dash {
			dash = ` stroke-dasharray="5 3"`
		}
		fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3"%s/>`, lx, ly-4, lx+16, ly-4, s.Color, dash)
		fmt.Fprintf(b, `<text x="%d" y="%d" fill="#323f4b">%s</text>`, lx+20, ly, esc(s.Name))
		lx += sw + 10
	}
	return ly + 14
}

// xAxis is the x axis over the values xs, drawn from plotL to plotR: its
// ticks, where a value lies, and how a tick is labelled. A log axis and a
// time axis are padded around the values; a linear one starts at 0 unless
// FitX.
func (c *Line) xAxis(xs []float64, plotL, plotR float64) (xTicks []float64, xMap func(float64) float64, xLabel func([]float64) []string) {
	xLabel = tickLabels
	switch {
	case c.LogX:
		lo, hi := math.Log2(slices.Min(xs)), math.Log2(slices.Max(xs))
		pad := math.Max((hi-lo)*0.06, 0.25)
		lo, hi = lo-pad, hi+pad
		xMap = func(x float64) float64 { return plotL + (math.Log2(x)-lo)/(hi-lo)*(plotR-plotL) }
		xTicks = slices.Compact(slices.Sorted(slices.Values(xs)))
		if len(xTicks) > 10 {
			xTicks = nil
			for v := math.Exp2(math.Ceil(lo)); v <= math.Exp2(hi); v *= 2 {
				xTicks = append(xTicks, v)
			}
		}
	case c.TimeX:
		lo, hi := slices.Min(xs), slices.Max(xs)
		span := max(hi-lo, 1)
		pad := span * 0.03
		lo, hi = lo-pad, hi+pad
		xMap = func(x float64) float64 { return plotL + (x-lo)/(hi-lo)*(plotR-plotL) }
		for i := range 5 {
			xTicks = append(xTicks, lo+pad+float64(i)/4*span)
		}
		xLabel = func(ticks []float64) []string {
			out := make([]string, len(ticks))
			for i, v := range ticks {
				t := time.Unix(0, int64(v*1e9)).UTC()
				out[i] = t.Format("2006-01-02")
				if span < 2*86400 {
					out[i] = t.Format("01-02 15:04")
				}
			}
			return out
		}
	default:
		xLo := 0.0
		xTicks = niceTicks(0, slices.Max(xs))
		if c.FitX {
			xLo, xTicks = fitTicks(slices.Min(xs), slices.Max(xs))
		}
		xMax := xTicks[len(xTicks)-1]
		xMap = func(x float64) float64 { return plotL + (x-xLo)/(xMax-xLo)*(plotR-plotL) }
	}
	return xTicks, xMap, xLabel
}

// drawSeries writes one series: a line through its points in x order
// (in their order when Ordered), then its markers.
func drawSeries(b *strings.Builder, s Series, xMap, yMap func(float64) float64) {
	pts := slices.Clone(s.Points)
	if !s.Ordered {
		slices.SortStableFunc(pts, func(a, b Point) int { return cmpFloat(a.X, b.X) })
	}
	var d strings.Builder
	for i, p := range pts {
		cmd := "L"
		if i == 0 {
			cmd = "M"
		}
		fmt.Fprintf(&d, "%s%.1f %.1f ", cmd, xMap(p.X), yMap(p.Y))
	}
	dash := ""
	if s.Dash {
		dash = ` stroke-dasharray="6 4"`
	}
	fmt.Fprintf(b, `<path class="series" d="%s" fill="none" stroke="%s" stroke-width="2.2"%s/>`, strings.TrimSpace(d.String()), s.Color, dash)
	for _, p := range pts {
		if s.Plain {
			if p.Tip == "" {
				continue
			}
			fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="3" fill="transparent"><title>%s</title></circle>`, xMap(p.X), yMap(p.Y), esc(p.Tip))
			continue
		}
		fill := s.Color
		if s.Dash {
			fill = "#ffffff"
		}
		fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="3.8" fill="%s" stroke="%s" stroke-width="1.6"><title>%s</title></circle>`,
			xMap(p.X), yMap(p.Y), fill, s.Color, esc(p.Tip))
		if p.Label != "" {
			fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="10" fill="%s">%s</text>`, xMap(p.X)+6, yMap(p.Y)-6, s.Color, esc(p.Label))
		}
	}
}

// fitTicks are round ticks spanning lo..hi with a margin, for an axis that
// does not start at 0: its first tick is the axis' bottom. The margin never
// takes the axis below 0 when no value is below it: a latency or a rate
// near 0 would otherwise get an axis of negative milliseconds.
func fitTicks(lo, hi float64) (float64, []float64) {
	nonNegative := lo >= 0
	if hi == lo {
		lo, hi = lo*0.95, hi*1.05+1e-9
	}
	pad := (hi - lo) * 0.08
	lo, hi = lo-pad, hi+pad
	if nonNegative {
		lo = max(lo, 0)
	}
	step := niceStep((hi - lo) / 5)
	start := math.Floor(lo/step) * step
	return start, ticksFrom(start, hi, step)
}

// niceStep is the round step (1, 2, 2.5 or 5 × 10^k) at or above raw.
func niceStep(raw float64) float64 {
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5} {
		if raw <= m*mag {
			return m * mag
		}
	}
	return mag * 10
}

// ticksFrom are the ticks from start, step apart, until one reaches hi.
func ticksFrom(start, hi, step float64) []float64 {
	var out []float64
	for v := start; ; v += step {
		v = math.Round(v/step) * step
		out = append(out, v)
		if v >= hi || len(out) > 50 {
			break
		}
	}
	return out
}

// drawGrid draws the grid lines at the ticks and the axes' corner.
func drawGrid(b *strings.Builder, yTicks []float64, yMap func(float64) float64, xTicks []float64, xMap func(float64) float64, plotL, plotR, plotT, plotB float64) {
	b.WriteString(`<g stroke="#e4e7eb" stroke-width="1">`)
	for _, t := range yTicks {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, plotL, yMap(t), plotR, yMap(t))
	}
	for _, t := range xTicks {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, xMap(t), plotT, xMap(t), plotB)
	}
	b.WriteString(`</g>`)
	fmt.Fprintf(b, `<path d="M%.1f %.1f V%.1f H%.1f" fill="none" stroke="#9aa5b1" stroke-width="1"/>`, plotL, plotT, plotB, plotR)
}

// header opens a chart's SVG document (class "" for none) and writes its
// title and note; it returns the y of the first line below them: 40, or
// 56 with a note.
func header(b *strings.Builder, class string, w, h int, title, note string) int {
	if class != "" {
		class = ` class="` + class + `"`
	}
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg"%s viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s" font-family="system-ui,-apple-system,Segoe UI,Roboto,sans-serif" font-size="12">`,
		class, w, h, w, h, esc(title))
	fmt.Fprintf(b, `<title>%s</title>`, esc(title))
	b.WriteString(`<rect width="100%" height="100%" fill="#ffffff"/>`)
	fmt.Fprintf(b, `<text x="%d" y="22" font-size="15" font-weight="600" fill="#1f2933">%s</text>`, marginL-40, esc(title))
	y := 40
	if note != "" {
		fmt.Fprintf(b, `<text x="%d" y="%d" fill="#52606d">%s</text>`, marginL-40, y, esc(note))
		y += 16
	}
	return y
}

// namespace is the attribute a standalone chart file needs and an inline
// one does not.
const namespace = ` xmlns="http://www.w3.org/2000/svg"`

// Inline is a chart for embedding in an HTML page: inline SVG needs no
// namespace declaration, and without it the page holds no http:// string,
// so "no network reference" can be checked with grep.
func Inline(svg string) string { return strings.Replace(svg, namespace, "", 1) }

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// niceTicks returns evenly spaced round ticks from lo covering hi: steps of
// 1, 2, 2.5 or 5 × 10^k, about five of them.
func niceTicks(lo, hi float64) []float64 {
	if !(hi > lo) || math.IsInf(hi, 0) || math.IsNaN(hi) {
		return []float64{lo, lo + 1}
	}
	return ticksFrom(lo, hi, niceStep((hi-lo)/5))
}

// tickLabels labels an axis' ticks with as many decimals as their spacing
// needs, and more where two neighbours would still read alike: a fixed
// precision by magnitude labelled ticks 174.8, 175, 175.2 "175, 175, 175",
// and ticks 0.001 apart all "0". Trailing zeros are dropped (2.5, 5, 7.5),
// and from 10000 up a label is in thousands (12.5k), as formatTick writes
// a lone value.
func tickLabels(ticks []float64) []string {
	gap := math.Inf(1)
	for i := 1; i < len(ticks); i++ {
		if d := math.Abs(ticks[i] - ticks[i-1]); d > 0 {
			gap = min(gap, d)
		}
	}
	// The decimals that write the spacing exactly (a nice step of 1, 2,
	// 2.5 or 5 × 10^k needs at most one more than its magnitude's).
	d := 0
	if finite(gap) {
		for d < 12 {
			s := gap * math.Pow10(d)
			if math.Abs(s-math.Round(s)) <= 1e-6*s {
				break
			}
			d++
		}
	}
	for ; ; d++ {
		out := make([]string, len(ticks))
		same := false
		for i, v := range ticks {
			out[i] = tickLabel(v, d)
			same = same || i > 0 && out[i] == out[i-1] && ticks[i] != ticks[i-1]
		}
		if !same || d >= 12 {
			return out
		}
	}
}

// tickLabel writes v with d decimals (d+3 in thousands), trailing zeros
// dropped.
func tickLabel(v float64, d int) string {
	suffix := ""
	if math.Abs(v) >= 10000 {
		v, d, suffix = v/1000, d+3, "k"
	}
	s := strconv.FormatFloat(v, 'f', d, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s + suffix
}

// formatTick prints a lone value compactly: 0, 2.5, 40, 1200, 15k. An
// axis' ticks are labelled together, by tickLabels.
func formatTick(v float64) string {
	switch a := math.Abs(v); {
	case a >= 10000:
		return strconv.FormatFloat(v/1000, 'f', -1, 64) + "k"
	case a >= 100:
		return strconv.FormatFloat(math.Round(v), 'f', -1, 64)
	default:
		return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
	}
}

func esc(s string) string { return html.EscapeString(s) }
