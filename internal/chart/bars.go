package chart

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Bar is one value of a bar chart, with its spread (Err, ± around Value;
// 0 for none).
type Bar struct {
	Label string
	Value float64
	Err   float64
	Color string
	Tip   string
	// Segments, when set, stack the bar from parts laid end to end (a
	// request's time split into queue, thinking and answering): Value is
	// then their sum, and each part is drawn in its own colour with its
	// own tip.
	Segments []Segment
}

// Segment is one part of a stacked bar.
type Segment struct {
	Value float64
	Color string
	Tip   string
}

// stacked returns the bar with Value the sum of its segments (a bar
// without segments as it is); ok is false when a segment is not a finite
// value at least 0.
func (b Bar) stacked() (Bar, bool) {
	if len(b.Segments) == 0 {
		return b, true
	}
	b.Value = 0
	for _, s := range b.Segments {
		if !finite(s.Value) || s.Value < 0 {
			return b, false
		}
		b.Value += s.Value
	}
	return b, true
}

// Bars is a horizontal bar chart: one bar a row, labelled on the left,
// the value axis from 0 along the bottom; rendered as a standalone SVG
// document like Line.
type Bars struct {
	Title, Note, XLabel string
	Bars                []Bar
	Empty               string // what an empty chart says ("nothing to plot" if unset)
}

const (
	barH      = 22
	barLabelW = 190
)

// SVG renders the chart.
func (c *Bars) SVG() string {
	var bars []Bar
	for _, b := range c.Bars {
		if b, ok := b.stacked(); ok && finite(b.Value) && finite(b.Err) {
			bars = append(bars, b)
		}
	}
	W := svgW
	top := 40
	if c.Note != "" {
		top += 16
	}
	H := top + max(len(bars), 1)*barH + marginB
	var b strings.Builder
	header(&b, "bars", W, H, c.Title, c.Note)
	plotL, plotR, plotT := float64(marginL-40+barLabelW), float64(W-marginR-60), float64(top)
	if len(bars) == 0 {
		empty := c.Empty
		if empty == "" {
			empty = "nothing to plot"
		}
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="middle" fill="#7b8794">%s</text></svg>`, W/2, plotT+barH, esc(empty))
		return b.String()
	}
	hi := 0.0
	for _, bar := range bars {
		hi = max(hi, bar.Value+bar.Err, bar.Value)
	}
	ticks := niceTicks(0, hi)
	top2 := ticks[len(ticks)-1]
	xMap := func(v float64) float64 { return plotL + max(v, 0)/top2*(plotR-plotL) }
	plotB := plotT + float64(len(bars)*barH)
	b.WriteString(`<g stroke="#e4e7eb" stroke-width="1">`)
	for _, t := range ticks {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, xMap(t), plotT, xMap(t), plotB)
	}
	b.WriteString(`</g>`)
	fmt.Fprintf(&b, `<path d="M%.1f %.1f V%.1f H%.1f" fill="none" stroke="#9aa5b1" stroke-width="1"/>`, plotL, plotT, plotB, plotR)
	b.WriteString(`<g fill="#52606d" font-size="11">`)
	for i, l := range tickLabels(ticks) {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, xMap(ticks[i]), plotB+16, l)
	}
	b.WriteString(`</g>`)
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#323f4b">%s</text>`, (plotL+plotR)/2, H-10, esc(c.XLabel))
	for i, bar := range bars {
		y := plotT + float64(i*barH)
		color := bar.Color
		if color == "" {
			color = Palette[0]
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end" fill="#323f4b">%s</text>`, plotL-8, y+barH/2+4, esc(bar.Label))
		if len(bar.Segments) == 0 {
			fmt.Fprintf(&b, `<rect class="bar" x="%.1f" y="%.1f" width="%.1f" height="%d" fill="%s"><title>%s</title></rect>`,
				plotL, y+4, xMap(bar.Value)-plotL, barH-8, color, esc(bar.Tip))
		}
		at := 0.0
		for _, seg := range bar.Segments {
			fmt.Fprintf(&b, `<rect class="segment" x="%.1f" y="%.1f" width="%.1f" height="%d" fill="%s"><title>%s</title></rect>`,
				xMap(at), y+4, xMap(at+seg.Value)-xMap(at), barH-8, seg.Color, esc(seg.Tip))
			at += seg.Value
		}
		if bar.Err > 0 {
			lo, hi := xMap(bar.Value-bar.Err), xMap(bar.Value+bar.Err)
			mid := y + barH/2
			fmt.Fprintf(&b, `<path class="err" d="M%.1f %.1f H%.1f M%.1f %.1f V%.1f M%.1f %.1f V%.1f" stroke="#1f2933" stroke-width="1.2" fill="none"/>`,
				lo, mid, hi, lo, mid-4, mid+4, hi, mid-4, mid+4)
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="11" fill="#323f4b">%s</text>`, xMap(bar.Value+bar.Err)+6, y+barH/2+4, formatValue(bar.Value))
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// formatValue prints a bar's value with three or more significant digits:
// 27195, 403.2, 35.50.
func formatValue(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}
