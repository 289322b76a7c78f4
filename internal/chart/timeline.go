package chart

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Timeline draws requests as bars over time, one row a request in send
// order: where each waited to be sent, waited for its first token and
// streamed, so queueing and stalls show as shapes. Times are seconds from
// the pass's start.
type Timeline struct {
	Title, Note string
	XLabel      string
	Rows        []TimelineRow
	// Width and Height in pixels; 760 × 420 if unset.
	Width, Height int
}

// TimelineRow is one request. FirstToken and Done are NaN when the request
// failed before them.
type TimelineRow struct {
	Scheduled, Sent, FirstToken, Done float64
	Failed                            bool
	Tip                               string
}

// The timeline's phases, in the legend's order.
var timelinePhases = []struct{ name, color string }{
	{"waiting to be sent", "#bab0ac"},
	{"waiting for the first token", "#f28e2b"},
	{"streaming", "#4e79a7"},
	{"failed", "#c81e1e"},
}

// SVG renders the timeline.
func (c *Timeline) SVG() string {
	W, H := c.Width, c.Height
	if W <= 0 {
		W = 760
	}
	if H <= 0 {
		H = 420
	}
	var b strings.Builder
	y := header(&b, "timeline", W, H, c.Title, c.Note)
	lx := marginL - 40
	for _, p := range timelinePhases {
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="14" height="8" fill="%s"/><text x="%d" y="%d" fill="#323f4b">%s</text>`, lx, y-9, p.color, lx+18, y, esc(p.name))
		lx += 30 + 7*len(p.name)
	}
	plotL, plotR, plotT, plotB := float64(marginL), float64(W-marginR), float64(y+14), float64(H-marginB)
	var xs []float64
	for _, r := range c.Rows {
		for _, v := range []float64{r.Scheduled, r.Sent, r.FirstToken, r.Done} {
			if finite(v) {
				xs = append(xs, v)
			}
		}
	}
	if len(xs) == 0 {
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" fill="#7b8794">no requests to draw</text></svg>`, W/2, H/2)
		return b.String()
	}
	xLo := math.Min(0, slices.Min(xs))
	xTicks := niceTicks(xLo, slices.Max(xs))
	xMax := xTicks[len(xTicks)-1]
	xMap := func(x float64) float64 { return plotL + (x-xLo)/(xMax-xLo)*(plotR-plotL) }
	rowH := (plotB - plotT) / float64(len(c.Rows))
	yMap := func(i float64) float64 { return plotT + i*rowH }
	drawGrid(&b, nil, yMap, xTicks, xMap, plotL, plotR, plotT, plotB)
	b.WriteString(`<g fill="#52606d" font-size="11">`)
	for i, l := range tickLabels(xTicks) {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, xMap(xTicks[i]), plotB+16, l)
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">1</text><text x="%.1f" y="%.1f" text-anchor="end">%d</text>`, plotL-6, plotT+10, plotL-6, plotB, len(c.Rows))
	b.WriteString(`</g>`)
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#323f4b">%s</text>`, (plotL+plotR)/2, H-10, esc(c.XLabel))
	fmt.Fprintf(&b, `<text transform="translate(16 %.1f) rotate(-90)" text-anchor="middle" fill="#323f4b">requests in send order</text>`, (plotT+plotB)/2)
	barH := math.Max(rowH*0.8, 0.6)
	for i, r := range c.Rows {
		top := yMap(float64(i)) + (rowH-barH)/2
		fmt.Fprintf(&b, `<g class="request"><title>%s</title>`, esc(r.Tip))
		bar := func(from, to float64, color string) {
			if !finite(from) || !finite(to) {
				return
			}
			w := math.Max(xMap(to)-xMap(from), 0.8)
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.2f" width="%.1f" height="%.2f" fill="%s"/>`, xMap(from), top, w, barH, color)
		}
		if r.Sent > r.Scheduled {
			bar(r.Scheduled, r.Sent, timelinePhases[0].color)
		}
		switch {
		case r.Failed:
			end := r.Done
			if !finite(end) {
				end = r.Sent
			}
			bar(r.Sent, end, timelinePhases[3].color)
			fmt.Fprintf(&b, `<path d="M%.1f %.1f l6 6 m0 -6 l-6 6" stroke="%s" stroke-width="1.5"/>`, xMap(end)-3, top+barH/2-3, timelinePhases[3].color)
		default:
			bar(r.Sent, r.FirstToken, timelinePhases[1].color)
			bar(r.FirstToken, r.Done, timelinePhases[2].color)
		}
		b.WriteString(`</g>`)
	}
	b.WriteString(`</svg>`)
	return b.String()
}
