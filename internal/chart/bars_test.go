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
