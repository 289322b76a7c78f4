package report

import (
	"fmt"
	"html"
	"math"
	"slices"
	"strconv"
	"strings"
)

// palette is Tableau 10: distinct, colour-blind-aware, readable on white.
var palette = []string{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"}

type point struct {
	x, y  float64
	label string // shown beside the marker (e.g. "c=4"); "" for none
	tip   string // the marker's tooltip
}

type series struct {
	name  string
	color string
	dash  bool
	pts   []point
}

// chart is a line chart rendered as a standalone SVG document: no script,
// no external reference, so it displays anywhere (a browser from a file, a
// Markdown viewer, a notebook).
type chart struct {
	name   string // file name without extension
	title  string
	xLabel string
	yLabel string
	logX   bool   // log2 x axis (concurrency ladders)
	note   string // one line under the title, e.g. "solid p50 · dashed p99"
	series []series
}

const (
	svgW    = 600
	svgH    = 360
	marginL = 64
	marginR = 20
	marginB = 48
)

func (c *chart) empty() bool {
	for _, s := range c.series {
		if len(s.pts) > 0 {
			return false
		}
	}
	return true
}

// svg renders the chart.
func (c *chart) svg() string {
	for i := range c.series {
		// A point that could not be measured (NaN, ±Inf) is left out, and so
		// is x <= 0 on a log axis.
		c.series[i].pts = slices.DeleteFunc(slices.Clone(c.series[i].pts), func(p point) bool {
			return !finite(p.x) || !finite(p.y) || (c.logX && p.x <= 0)
		})
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s" font-family="system-ui,-apple-system,Segoe UI,Roboto,sans-serif" font-size="12">`,
		svgW, svgH, svgW, svgH, esc(c.title))
	fmt.Fprintf(&b, `<title>%s</title>`, esc(c.title))
	b.WriteString(`<rect width="100%" height="100%" fill="#ffffff"/>`)
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="15" font-weight="600" fill="#1f2933">%s</text>`, marginL-40, esc(c.title))
	y := 40
	if c.note != "" {
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#52606d">%s</text>`, marginL-40, y, esc(c.note))
		y += 16
	}
	// Legend: one entry per distinct series name, wrapped across lines.
	lx, ly := marginL-40, y
	seen := map[string]bool{}
	for _, s := range c.series {
		if seen[s.name] || len(s.pts) == 0 {
			continue
		}
		seen[s.name] = true
		w := 26 + 7*len(s.name)
		if lx+w > svgW-marginR {
			lx, ly = marginL-40, ly+16
		}
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3"/>`, lx, ly-4, lx+16, ly-4, s.color)
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#323f4b">%s</text>`, lx+20, ly, esc(s.name))
		lx += w + 10
	}
	top := ly + 14
	plotL, plotR, plotT, plotB := float64(marginL), float64(svgW-marginR), float64(top), float64(svgH-marginB)

	if c.empty() {
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" fill="#7b8794">no ok cells to plot</text></svg>`, svgW/2, svgH/2)
		return b.String()
	}

	var xs, ys []float64
	for i := range c.series {
		for _, p := range c.series[i].pts {
			xs = append(xs, p.x)
			ys = append(ys, p.y)
		}
	}
	if len(xs) == 0 {
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" fill="#7b8794">no ok cells to plot</text></svg>`, svgW/2, svgH/2)
		return b.String()
	}
	yTicks := niceTicks(0, slices.Max(ys))
	yMax := yTicks[len(yTicks)-1]
	var xTicks []float64
	var xMap func(float64) float64
	if c.logX {
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
	} else {
		xTicks = niceTicks(0, slices.Max(xs))
		xMax := xTicks[len(xTicks)-1]
		xMap = func(x float64) float64 { return plotL + x/xMax*(plotR-plotL) }
	}
	yMap := func(v float64) float64 { return plotB - v/yMax*(plotB-plotT) }

	// Grid and axes.
	b.WriteString(`<g stroke="#e4e7eb" stroke-width="1">`)
	for _, t := range yTicks {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, plotL, yMap(t), plotR, yMap(t))
	}
	for _, t := range xTicks {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, xMap(t), plotT, xMap(t), plotB)
	}
	b.WriteString(`</g>`)
	fmt.Fprintf(&b, `<path d="M%.1f %.1f V%.1f H%.1f" fill="none" stroke="#9aa5b1" stroke-width="1"/>`, plotL, plotT, plotB, plotR)
	b.WriteString(`<g fill="#52606d" font-size="11">`)
	for _, t := range yTicks {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`, plotL-6, yMap(t)+4, formatTick(t))
	}
	for _, t := range xTicks {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, xMap(t), plotB+16, formatTick(t))
	}
	b.WriteString(`</g>`)
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#323f4b">%s</text>`, (plotL+plotR)/2, svgH-10, esc(c.xLabel))
	fmt.Fprintf(&b, `<text transform="translate(16 %.1f) rotate(-90)" text-anchor="middle" fill="#323f4b">%s</text>`, (plotT+plotB)/2, esc(c.yLabel))

	// Series: a line through the points in x order, then the markers.
	for _, s := range c.series {
		if len(s.pts) == 0 {
			continue
		}
		pts := slices.Clone(s.pts)
		slices.SortStableFunc(pts, func(a, b point) int { return cmpFloat(a.x, b.x) })
		var d strings.Builder
		for i, p := range pts {
			cmd := "L"
			if i == 0 {
				cmd = "M"
			}
			fmt.Fprintf(&d, "%s%.1f %.1f ", cmd, xMap(p.x), yMap(p.y))
		}
		dash := ""
		if s.dash {
			dash = ` stroke-dasharray="6 4"`
		}
		fmt.Fprintf(&b, `<path class="series" d="%s" fill="none" stroke="%s" stroke-width="2.2"%s/>`, strings.TrimSpace(d.String()), s.color, dash)
		for _, p := range pts {
			fill := s.color
			if s.dash {
				fill = "#ffffff"
			}
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3.8" fill="%s" stroke="%s" stroke-width="1.6"><title>%s</title></circle>`,
				xMap(p.x), yMap(p.y), fill, s.color, esc(p.tip))
			if p.label != "" {
				fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" fill="%s">%s</text>`, xMap(p.x)+6, yMap(p.y)-6, s.color, esc(p.label))
			}
		}
	}
	b.WriteString(`</svg>`)
	return b.String()
}

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
	raw := (hi - lo) / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag * 10
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if raw <= m*mag {
			step = m * mag
			break
		}
	}
	var out []float64
	for v := lo; ; v += step {
		v = math.Round(v/step) * step
		out = append(out, v)
		if v >= hi || len(out) > 50 {
			break
		}
	}
	return out
}

// formatTick prints an axis value compactly: 0, 2.5, 40, 1200, 15k.
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
