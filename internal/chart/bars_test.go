package chart

import (
	"math"
	"strings"
	"testing"
)

// Each bar's length is its value on the axis' scale, its whisker spans
// value ± err, and every label and tip is the bar's.
func TestBarsAreTheData(t *testing.T) {
	bars := []Bar{{Label: "pp512", Value: 400, Err: 20, Tip: "a"}, {Label: "tg128", Value: 50, Tip: "b"}, {Label: "tg128@d4096", Value: 35.5, Err: 1, Tip: "c"}}
	c := &Bars{Title: "llama-bench", XLabel: "tokens/s", Bars: bars}
	root := parse(t, c.SVG())
	var widths []float64
	var tips, labels []string
	whiskers := 0
	root.walk(func(n svgNode) {
		switch {
		case n.XMLName.Local == "rect" && n.attr("class") == "bar":
			widths = append(widths, num(t, n.attr("width")))
			tips = append(tips, n.Nodes[0].Text)
		case n.XMLName.Local == "path" && n.attr("class") == "err":
			whiskers++
		case n.XMLName.Local == "text" && n.attr("text-anchor") == "end" && strings.Contains(n.Text, "tg") || strings.Contains(n.Text, "pp"):
			labels = append(labels, n.Text)
		}
	})
	if len(widths) != 3 || whiskers != 2 || strings.Join(tips, "") != "abc" {
		t.Fatalf("%d bars, %d whiskers, tips %v", len(widths), whiskers, tips)
	}
	for i := range bars {
		if got, want := widths[i]/widths[0], bars[i].Value/bars[0].Value; math.Abs(got-want) > 0.01 {
			t.Errorf("bar %d is %.3f of the first, want %.3f", i, got, want)
		}
	}
	if strings.Join(labels, ",") != "pp512,tg128,tg128@d4096" {
		t.Errorf("labels %v", labels)
	}
	if empty := (&Bars{Title: "t", Bars: []Bar{{Label: "x", Value: math.NaN()}}}).SVG(); !strings.Contains(empty, ">nothing to plot<") {
		t.Errorf("a bar that is not a number was drawn: %s", empty)
	}
}

// A stacked bar is its segments laid end to end: each segment's width is
// its value on the axis' scale, the next starts where the last ended, the
// bar's length and value label are their sum, and a bar with a segment
// that is not a value at least 0 is left out.
func TestStackedBarsAreTheData(t *testing.T) {
	c := &Bars{Title: "time per request", XLabel: "ms", Bars: []Bar{
		{Label: "c=1", Segments: []Segment{{Value: 20, Tip: "q1"}, {Value: 1000, Tip: "t1"}, {Value: 115, Tip: "a1"}}},
		{Label: "c=16", Segments: []Segment{{Value: 80, Tip: "q16"}, {Value: 1000, Tip: "t16"}, {Value: 460, Tip: "a16"}}},
		{Label: "bad", Segments: []Segment{{Value: 10}, {Value: -1}}},
	}}
	root := parse(t, c.SVG())
	var xs, widths []float64
	var tips []string
	plain := 0
	root.walk(func(n svgNode) {
		if n.XMLName.Local != "rect" {
			return
		}
		switch n.attr("class") {
		case "segment":
			xs = append(xs, num(t, n.attr("x")))
			widths = append(widths, num(t, n.attr("width")))
			tips = append(tips, n.Nodes[0].Text)
		case "bar":
			plain++
		}
	})
	if len(widths) != 6 || plain != 0 || strings.Join(tips, ",") != "q1,t1,a1,q16,t16,a16" {
		t.Fatalf("%d segments (tips %v), %d plain bars; want 6 segments of the two good bars, none plain", len(widths), tips, plain)
	}
	values := []float64{20, 1000, 115, 80, 1000, 460}
	scale := widths[1] / 1000
	for i, v := range values {
		if math.Abs(widths[i]-v*scale) > 0.15 {
			t.Errorf("segment %d is %.2f wide, want %.2f", i, widths[i], v*scale)
		}
		if i%3 > 0 && math.Abs(xs[i]-(xs[i-1]+widths[i-1])) > 0.15 {
			t.Errorf("segment %d starts at %.2f, not where segment %d ended (%.2f)", i, xs[i], i-1, xs[i-1]+widths[i-1])
		}
	}
	svg := c.SVG()
	if !strings.Contains(svg, ">1135<") || !strings.Contains(svg, ">1540<") || strings.Contains(svg, ">bad<") {
		t.Errorf("the value labels are not the sums (1135, 1540), or the bad bar was drawn")
	}
}
