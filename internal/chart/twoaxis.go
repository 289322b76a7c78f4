package chart

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Axis is one y axis of a time chart and the lines read against it.
type Axis struct {
	Label  string
	Max    float64 // a fixed top (100 for percent); 0: from the data
	Series []Series
}

func (a Axis) empty() bool {
	return !slices.ContainsFunc(a.Series, func(s Series) bool { return len(s.Points) > 0 })
}

func (a Axis) ticks() []float64 {
	hi := a.Max
	for _, s := range a.Series {
		for _, p := range s.Points {
			hi = math.Max(hi, p.Y)
		}
	}
	return niceTicks(0, hi)
}

// TwoAxis is a line chart over time with two y axes, rendered as a
// standalone SVG document like Line (no script, no reference).
type TwoAxis struct {
	Title, Note, XLabel string
	Left, Right         Axis
}

const marginRTime = 64

// SVG renders the chart.
func (c *TwoAxis) SVG() string {
	var b strings.Builder
	y := header(&b, "usage", svgW, svgH, c.Title, c.Note)
	lx, ly := marginL-40, y
	all := append(slices.Clone(c.Left.Series), c.Right.Series...)
	for _, s := range all {
		w := 26 + 7*len(s.Name)
		if lx+w > svgW-marginR {
			lx, ly = marginL-40, ly+16
		}
		dash := ""
		if s.Dash {
			dash = ` stroke-dasharray="6 4"`
		}
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3"%s/>`, lx, ly-4, lx+16, ly-4, s.Color, dash)
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#323f4b">%s</text>`, lx+20, ly, esc(s.Name))
		lx += w + 10
	}
	plotL, plotR, plotT, plotB := float64(marginL), float64(svgW-marginRTime), float64(ly+14), float64(svgH-marginB)

	xMax := 0.0
	for _, s := range all {
		for _, p := range s.Points {
			xMax = math.Max(xMax, p.X)
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
	gridAxis := c.Left
	if gridAxis.empty() {
		gridAxis = c.Right
	}
	gTicks := gridAxis.ticks()
	gMap := yMapOf(gTicks)
	drawGrid(&b, gTicks, gMap, xTicks, xMap, plotL, plotR, plotT, plotB)
	b.WriteString(`<g fill="#52606d" font-size="11">`)
	for i, l := range tickLabels(xTicks) {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, xMap(xTicks[i]), plotB+16, l)
	}
	b.WriteString(`</g>`)
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#323f4b">%s</text>`, (plotL+plotR)/2, svgH-10, esc(c.XLabel))

	for i, a := range []Axis{c.Left, c.Right} {
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
		for j, l := range tickLabels(ticks) {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="%s">%s</text>`, x, yMap(ticks[j])+4, anchor, l)
		}
		b.WriteString(`</g>`)
		fmt.Fprintf(&b, `<text transform="translate(%.1f %.1f) rotate(-90)" text-anchor="middle" fill="#323f4b">%s</text>`, labelX, (plotT+plotB)/2, esc(a.Label))
		for _, s := range a.Series {
			if len(s.Points) == 0 {
				continue
			}
			var d strings.Builder
			for j, p := range s.Points {
				cmd := "L"
				if j == 0 {
					cmd = "M"
				}
				fmt.Fprintf(&d, "%s%.1f %.1f ", cmd, xMap(p.X), yMap(p.Y))
			}
			dash := ""
			if s.Dash {
				dash = ` stroke-dasharray="6 4"`
			}
			lo, hi, mean := lineStats(s.Points)
			fmt.Fprintf(&b, `<path class="usage-line" d="%s" fill="none" stroke="%s" stroke-width="2"%s><title>%s</title></path>`,
				strings.TrimSpace(d.String()), s.Color, dash, esc(fmt.Sprintf("%s: min %s, mean %s, max %s", s.Name, formatTick(lo), formatTick(mean), formatTick(hi))))
		}
	}
	b.WriteString(`</svg>`)
	return b.String()
}

func lineStats(pts []Point) (lo, hi, mean float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, p := range pts {
		lo, hi = math.Min(lo, p.Y), math.Max(hi, p.Y)
		mean += p.Y
	}
	return lo, hi, mean / float64(len(pts))
}
