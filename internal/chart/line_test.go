package chart

import (
	"encoding/xml"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

// svgNode is an SVG document read back: every element with its
// attributes and text, in document order.
type svgNode struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Text    string     `xml:",chardata"`
	Nodes   []svgNode  `xml:",any"`
}

func (n svgNode) attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

func (n svgNode) walk(f func(svgNode)) {
	f(n)
	for _, c := range n.Nodes {
		c.walk(f)
	}
}

func parse(t *testing.T, svg string) svgNode {
	t.Helper()
	var root svgNode
	if err := xml.Unmarshal([]byte(svg), &root); err != nil {
		t.Fatalf("not well-formed SVG: %v\n%s", err, svg)
	}
	if root.XMLName.Local != "svg" {
		t.Fatalf("root %q", root.XMLName.Local)
	}
	return root
}

func num(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("coordinate %q: %v", s, err)
	}
	return v
}

// The markers are the data: read back from the SVG, their positions are
// an affine map of the points (one scale per axis), in the order given,
// and their tooltips are the points'.
func TestLineMarkersAreTheData(t *testing.T) {
	pts := []Point{{X: 1, Y: 10, Tip: "a"}, {X: 2, Y: 30, Tip: "b"}, {X: 4, Y: 20, Tip: "c"}, {X: 8, Y: 40, Tip: "d"}}
	for _, logX := range []bool{false, true} {
		c := &Line{Title: "t", LogX: logX, Series: []Series{{Name: "s", Color: Palette[0], Points: pts}}}
		var cx, cy []float64
		var tips []string
		parse(t, c.SVG()).walk(func(n svgNode) {
			if n.XMLName.Local == "circle" {
				cx, cy = append(cx, num(t, n.attr("cx"))), append(cy, num(t, n.attr("cy")))
				tips = append(tips, strings.TrimSpace(n.Nodes[0].Text))
			}
		})
		if len(cx) != len(pts) || strings.Join(tips, "") != "abcd" {
			t.Fatalf("logX %v: %d markers, tips %v", logX, len(cx), tips)
		}
		fx := func(v float64) float64 { return v }
		if logX {
			fx = math.Log2
		}
		// y: pixel = a + b·value, b < 0 (up is more); x likewise with b > 0.
		by := (cy[1] - cy[0]) / (pts[1].Y - pts[0].Y)
		bx := (cx[1] - cx[0]) / (fx(pts[1].X) - fx(pts[0].X))
		for i, p := range pts {
			if math.Abs(cy[i]-(cy[0]+by*(p.Y-pts[0].Y))) > 0.15 || math.Abs(cx[i]-(cx[0]+bx*(fx(p.X)-fx(pts[0].X)))) > 0.15 {
				t.Errorf("logX %v: point %d (%v, %v) drawn at (%v, %v), off the axes' scale", logX, i, p.X, p.Y, cx[i], cy[i])
			}
		}
		if by >= 0 || bx <= 0 {
			t.Errorf("logX %v: y scale %v, x scale %v: y must grow upwards, x rightwards", logX, by, bx)
		}
	}
}

// A value that was not measured is no point, and a chart with none says
// what it is missing.
func TestLineLeavesOutWhatIsNotANumber(t *testing.T) {
	c := &Line{Title: "t", LogX: true, Series: []Series{{Name: "s", Points: []Point{{X: 0, Y: 1}, {X: 2, Y: math.NaN()}, {X: 4, Y: math.Inf(1)}, {X: 8, Y: 3}}}}}
	svg := c.SVG()
	if n := strings.Count(svg, "<circle"); n != 1 || strings.Contains(svg, "NaN") || strings.Contains(svg, "Inf") {
		t.Errorf("%d markers (want the one finite point on the log axis):\n%s", n, svg)
	}
	empty := (&Line{Title: "t", Empty: "no values"}).SVG()
	parse(t, empty)
	if !strings.Contains(empty, ">no values</text>") {
		t.Errorf("empty chart: %s", empty)
	}
}

// A chart over time labels its axis with dates, fits its y axis to the
// values, and rings its marks.
func TestLineOverTime(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC)
	var pts []Point
	for i := range 10 {
		pts = append(pts, Point{X: float64(t0.AddDate(0, 0, i).Unix()), Y: 100 + float64(i%3)})
	}
	c := &Line{Title: "ttft", TimeX: true, FitY: true, Series: []Series{{Name: "cell", Color: Palette[1], Points: pts}},
		Marks: []Mark{{X: pts[5].X, Y: pts[5].Y, Tip: "change <here>"}}}
	svg := c.SVG()
	root := parse(t, svg)
	var labels []string
	ringed := 0
	var lowest float64
	root.walk(func(n svgNode) {
		switch {
		case n.XMLName.Local == "text":
			labels = append(labels, n.Text)
		case n.XMLName.Local == "circle" && n.attr("class") == "mark":
			ringed++
			if tip := n.Nodes[0].Text; tip != "change <here>" {
				t.Errorf("mark tip %q", tip)
			}
		}
	})
	all := strings.Join(labels, "|")
	if !strings.Contains(all, "|2026-11-01|") || !strings.Contains(all, "|2026-11-10|") || ringed != 1 {
		t.Errorf("labels %q, %d ringed", all, ringed)
	}
	// FitY: the axis does not start at 0 (its lowest tick is near the values).
	for _, l := range labels {
		if v, err := strconv.ParseFloat(l, 64); err == nil && (lowest == 0 || v < lowest) {
			lowest = v
		}
	}
	if lowest < 90 || lowest > 100 {
		t.Errorf("lowest y tick %v for values 100..102", lowest)
	}
}

// Each mark shape has its own class and keeps its tip; a mark that cannot
// be placed is left out.
func TestLineMarkShapes(t *testing.T) {
	pts := []Point{{X: 1, Y: 10}, {X: 2, Y: 30}, {X: 4, Y: 20}}
	c := &Line{Title: "t", LogX: true, Series: []Series{{Name: "s", Color: Palette[0], Points: pts}},
		Marks: []Mark{{X: 1, Y: 10, Tip: "change"}, {X: 2, Y: 30, Tip: "night", Shape: MarkAlert}, {X: 4, Y: 20, Tip: "front", Shape: MarkRing}, {X: 0, Y: 5, Tip: "off the log axis", Shape: MarkRing}}}
	got := map[string]string{}
	parse(t, c.SVG()).walk(func(n svgNode) {
		if cl := n.attr("class"); strings.HasPrefix(cl, "mark") {
			got[n.XMLName.Local+"."+cl] += n.Nodes[0].Text
		}
	})
	want := map[string]string{"circle.mark": "change", "path.mark alert": "night", "circle.mark ring": "front"}
	if len(got) != len(want) {
		t.Errorf("marks %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("mark %s: tip %q, want %q", k, got[k], v)
		}
	}
}

// An ordered series' line goes through its points as given; any other
// through them by x.
func TestLineOrderedSeries(t *testing.T) {
	pts := []Point{{X: 1, Y: 10}, {X: 3, Y: 20}, {X: 2, Y: 30}}
	for _, ordered := range []bool{false, true} {
		c := &Line{Title: "t", Series: []Series{{Name: "s", Color: Palette[0], Points: pts, Ordered: ordered}}}
		var d string
		var cx []float64
		parse(t, c.SVG()).walk(func(n svgNode) {
			switch {
			case n.XMLName.Local == "path" && n.attr("class") == "series":
				d = n.attr("d")
			case n.XMLName.Local == "circle":
				cx = append(cx, num(t, n.attr("cx")))
			}
		})
		var xs []float64
		for _, f := range strings.Fields(d) {
			if f[0] == 'M' || f[0] == 'L' {
				xs = append(xs, num(t, f[1:]))
			}
		}
		if len(xs) != 3 || len(cx) != 3 {
			t.Fatalf("ordered %v: path %q, %d markers", ordered, d, len(cx))
		}
		back := xs[2] < xs[1] // the path turns back from x=3 to x=2
		if back != ordered {
			t.Errorf("ordered %v: path %q", ordered, d)
		}
	}
}

func TestInline(t *testing.T) {
	svg := (&Line{Title: "t"}).SVG()
	if in := Inline(svg); strings.Contains(in, "http") || !strings.HasPrefix(in, "<svg viewBox=") {
		t.Errorf("inline %q", in[:60])
	}
}

// An axis' tick labels are told apart by their spacing: each tick reads
// as itself, neighbours never alike, no float noise.
func TestTickLabels(t *testing.T) {
	for _, c := range []struct {
		name  string
		ticks []float64
		want  string
	}{
		{"whole numbers", []float64{0, 20, 40, 60}, "0 20 40 60"},
		{"quarter steps", []float64{0, 2.5, 5, 7.5, 10}, "0 2.5 5 7.5 10"},
		{"tenths near 175", []float64{174.8, 174.9, 175, 175.1, 175.2}, "174.8 174.9 175 175.1 175.2"},
		{"thousandths", []float64{0, 0.001, 0.002, 0.003}, "0 0.001 0.002 0.003"},
		{"float noise", []float64{0, 0.1, 0.2, 0.30000000000000004}, "0 0.1 0.2 0.3"},
		{"thousands", []float64{0, 5000, 10000, 15000}, "0 5000 10k 15k"},
		{"fractions of thousands", []float64{10000, 12500, 15000}, "10k 12.5k 15k"},
		{"hundreds of thousands a tenth apart", []float64{100000, 100100, 100200}, "100k 100.1k 100.2k"},
		{"log axis of rates", []float64{0.001, 0.002, 0.004}, "0.001 0.002 0.004"},
		{"negative", []float64{-5, 0, 5}, "-5 0 5"},
	} {
		if got := strings.Join(tickLabels(c.ticks), " "); got != c.want {
			t.Errorf("%s: %v labelled %q, want %q", c.name, c.ticks, got, c.want)
		}
	}
}

// axisLabels are a chart's tick labels along one axis, read back from the
// SVG: the y axis's are anchored at its end, the x axis's in the middle.
func axisLabels(t *testing.T, svg, anchor string) []string {
	t.Helper()
	var out []string
	parse(t, svg).walk(func(n svgNode) {
		if n.XMLName.Local == "text" && n.attr("text-anchor") == anchor && n.attr("font-size") == "" && n.attr("transform") == "" {
			if _, err := strconv.ParseFloat(strings.TrimSuffix(n.Text, "k"), 64); err == nil {
				out = append(out, n.Text)
			}
		}
	})
	return out
}

// A fitted axis spans the values, never below 0 when no value is (a
// latency distribution of values near 0 got an axis of negative ms), and
// labels its ticks apart (values around 175 read "175 175 175").
func TestFittedAxes(t *testing.T) {
	for _, c := range []struct {
		name    string
		chart   *Line
		anchor  string
		lowest  float64 // the lowest tick at or above it
		highest float64 // the highest tick at or below it
	}{
		{"latency near 0, x fitted", &Line{Title: "ttft", FitX: true, Series: []Series{{Name: "s", Points: []Point{{X: 0.4, Y: 0}, {X: 3, Y: 50}, {X: 20, Y: 100}}}}}, "middle", 0, 25},
		{"latency near 0, y fitted", &Line{Title: "itl", FitY: true, Series: []Series{{Name: "s", Points: []Point{{X: 1, Y: 0.2}, {X: 2, Y: 9}}}}}, "end", 0, 12},
		{"a band below 0 keeps its axis", &Line{Title: "change", FitY: true, Bands: []Band{{Name: "b", Points: []BandPoint{{X: 1, Low: -4, High: 4}}}}}, "end", -10, 10},
		{"values around 175", &Line{Title: "tpot", FitY: true, Series: []Series{{Name: "s", Points: []Point{{X: 1, Y: 174.9}, {X: 2, Y: 175.2}}}}}, "end", 174, 176},
	} {
		labels := axisLabels(t, c.chart.SVG(), c.anchor)
		if len(labels) < 3 {
			t.Fatalf("%s: labels %q", c.name, labels)
		}
		for i, l := range labels {
			if i > 0 && l == labels[i-1] {
				t.Errorf("%s: labels %q repeat %q", c.name, labels, l)
			}
		}
		lo, _ := strconv.ParseFloat(labels[0], 64)
		hi, _ := strconv.ParseFloat(labels[len(labels)-1], 64)
		if lo < c.lowest || hi > c.highest {
			t.Errorf("%s: axis %v..%v (labels %q), want within %v..%v", c.name, lo, hi, labels, c.lowest, c.highest)
		}
	}
}
