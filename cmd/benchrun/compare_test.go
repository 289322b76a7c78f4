package main

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/rundir"
)

// cmpLoads are the load levels of the compare tests' runs.
var cmpLoads = []int64{1, 2, 4, 8}

// cmpVariant is a variant's medians at cmpLoads: output tok/s and TTFT
// p50; the other latencies follow from them.
type cmpVariant struct {
	tput, ttft []float64
}

// The compare page test's variants (TestParetoFront's "three variants").
var (
	cmpA = cmpVariant{tput: []float64{100, 190, 350, 600}, ttft: []float64{10, 12, 16, 30}}
	cmpB = cmpVariant{tput: []float64{110, 200, 330, 500}, ttft: []float64{11, 11, 20, 40}}
	cmpC = cmpVariant{tput: []float64{90, 180, 400, 700}, ttft: []float64{9, 14, 25, 50}}
)

// cmpRunFactors scale a variant's values in its three runs: the median
// run is the variant's own values.
var cmpRunFactors = []float64{0.98, 1, 1.03}

// cmpITL is the ITL p50 of a variant's load level (TPOT p50 alike): a
// tenth of its TTFT p50 and a millisecond.
func cmpITL(ttft float64) float64 { return 1 + ttft/10 }

// cmpNum writes a value as the page's tips do (internal/compare: four
// significant digits).
func cmpNum(x float64) string { return strconv.FormatFloat(x, 'g', 4, 64) }

// writeCmpRuns writes a variant's three runs (one a day from start) under
// root, through the Parquet sink's writer: one ok sweep cell per load
// level, the values scaled by cmpRunFactors; set edits each cell.
func writeCmpRuns(t *testing.T, root string, start time.Time, v cmpVariant, set func(*results.Cell)) {
	t.Helper()
	for ri, f := range cmpRunFactors {
		var cells []results.Cell
		for li, c := range cmpLoads {
			ttft, itl := f*v.ttft[li], f*cmpITL(v.ttft[li])
			cell := results.Cell{
				Stage: "sweep", CellID: fmt.Sprintf("sweep/128:128/c%d", c), Endpoint: "completions", Engine: "vllm", EngineVersion: "0.11.0",
				Hardware: "linux/amd64, 1× H200", ISL: 128, OSL: 128, Concurrency: c, Requests: 64, Completed: 64, Status: results.StatusOK,
				TTFTP50Ms: results.Some(ttft), TTFTP99Ms: results.Some(2 * ttft), ITLP50Ms: results.Some(itl), ITLP99Ms: results.Some(3 * itl),
				TPOTP50Ms: results.Some(itl), E2ELP50Ms: results.Some(ttft + 127*itl), OutputTokS: results.Some(f * v.tput[li]), ReqS: results.Some(f * v.tput[li] / 128),
			}
			if set != nil {
				set(&cell)
			}
			cells = append(cells, cell)
		}
		writeSyntheticRun(t, root, "p", start.Add(time.Duration(ri)*24*time.Hour), rundir.RunOK, cells)
	}
}

// cmpSVG is a chart of the page read back: its title, legend, data
// markers (tip → centre), rings and the names of its series.
type cmpSVG struct {
	title   string
	legend  []string
	markers map[string][2]float64
	rings   map[string][2]float64
	lines   int
}

type xmlNode struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Text    string     `xml:",chardata"`
	Nodes   []xmlNode  `xml:",any"`
}

func (n xmlNode) attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

func (n xmlNode) title() string {
	for _, c := range n.Nodes {
		if c.XMLName.Local == "title" {
			return c.Text
		}
	}
	return ""
}

// readCmpCharts parses every inline SVG of a page.
func readCmpCharts(t *testing.T, page string) []cmpSVG {
	t.Helper()
	var out []cmpSVG
	for _, src := range regexp.MustCompile(`(?s)<svg .*?</svg>`).FindAllString(page, -1) {
		var root xmlNode
		if err := xml.Unmarshal([]byte(src), &root); err != nil {
			t.Fatalf("chart is not well-formed: %v\n%s", err, src)
		}
		c := cmpSVG{title: root.title(), markers: map[string][2]float64{}, rings: map[string][2]float64{}}
		num := func(s string) float64 {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				t.Fatalf("%s: coordinate %q", c.title, s)
			}
			return v
		}
		for i, n := range root.Nodes {
			switch {
			case n.XMLName.Local == "line" && n.attr("stroke-width") == "3" && i+1 < len(root.Nodes):
				// A legend entry: its swatch, then its name.
				c.legend = append(c.legend, root.Nodes[i+1].Text)
			case n.XMLName.Local == "path" && n.attr("class") == "series":
				c.lines++
			case n.XMLName.Local == "circle" && n.attr("class") == "" && n.title() != "":
				c.markers[n.title()] = [2]float64{num(n.attr("cx")), num(n.attr("cy"))}
			case n.XMLName.Local == "circle" && n.attr("class") == "mark ring":
				c.rings[n.title()] = [2]float64{num(n.attr("cx")), num(n.attr("cy"))}
			}
		}
		out = append(out, c)
	}
	return out
}

// TestComparePageThreeVariants runs `benchrun compare A B C --html`: three
// variants of three runs each. The page has the shape's four charts with
// a curve per variant; each marker's tip holds the median of the
// variant's runs at its load level (read back and checked against the
// values written), a marker per load level; the Pareto front's rings sit
// on the hand-checked front's markers; the verdicts of both comparisons
// are beside the charts, in tables that wrap; the page is self-contained.
// Stdout is the text report of A → B and A → C, and the exit code says C
// and B regressed.
func TestComparePageThreeVariants(t *testing.T) {
	root := t.TempDir()
	start := time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC)
	dirs := map[string]string{}
	for i, v := range []struct {
		name string
		v    cmpVariant
	}{{"engine-a", cmpA}, {"engine-b", cmpB}, {"engine-c", cmpC}} {
		dirs[v.name] = filepath.Join(root, v.name)
		writeCmpRuns(t, dirs[v.name], start.AddDate(0, 0, 10*i), v.v, nil)
	}
	page := filepath.Join(t.TempDir(), "compare.html")
	var out, errb bytes.Buffer
	code := benchrunMain([]string{"compare", dirs["engine-a"], dirs["engine-b"], dirs["engine-c"], "--html", page}, &out, &errb)
	if code != 1 {
		t.Fatalf("exit %d, want 1 (B and C regressed against A): %s\n%s", code, errb.String(), out.String())
	}
	text := out.String()
	for _, want := range []string{"engine-a → engine-b\nold: 3 runs (", "engine-a → engine-c\nold: 3 runs (", "\nsweep/128:128/c8 · plan p · vllm 0.11.0 · completions\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("stdout lacks %q:\n%s", want, text)
		}
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	html := string(b)
	checkCmpPage(t, html, []string{"engine-a", "engine-b", "engine-c"}, []cmpVariant{cmpA, cmpB, cmpC},
		[]string{"engine-c c=1", "engine-a c=1", "engine-b c=2", "engine-a c=4", "engine-c c=4", "engine-a c=8", "engine-c c=8"})
	for _, want := range []string{"<h3>engine-a → engine-b</h3>", "<h3>engine-a → engine-c</h3>", `<table class="v"><colgroup>`, "table-layout:fixed", "overflow-wrap:anywhere",
		"<strong>engine-a</strong> (baseline): 3 runs (", `<tr class="regressed"><td>ttft_p50_ms</td>`} {
		if !strings.Contains(html, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	// The verdicts sit in the shape's section, beside its charts.
	if sec := html[strings.Index(html, `<section class="shape">`):]; !strings.Contains(sec[:strings.Index(sec, "</section>")], "<h4>sweep/128:128/c8</h4>") {
		t.Error("the shape's section has no verdict table of its cell c=8")
	}
	for _, bad := range []string{"http", "<script", "src="} {
		if strings.Contains(html, bad) {
			t.Errorf("the page holds %q: not self-contained", bad)
		}
	}
}

// checkCmpPage reads a compare page's charts back: four for the one
// shape, every variant a series of one marker per load level whose tip
// holds its medians, the rings on the front's markers.
func checkCmpPage(t *testing.T, page string, labels []string, vs []cmpVariant, front []string) {
	t.Helper()
	charts := readCmpCharts(t, page)
	var titles []string
	for _, c := range charts {
		titles = append(titles, c.title)
	}
	if want := []string{"TTFT p50 vs throughput", "TPOT p50 vs throughput", "TTFT p50 and p99 vs load", "ITL p50 and p99 vs load"}; !slices.Equal(titles, want) {
		t.Fatalf("charts %q, want %q", titles, want)
	}
	wantLegend := append(slices.Clone(labels), "Pareto front")
	for ci, c := range charts {
		if ci >= 2 {
			wantLegend = labels
		}
		if !slices.Equal(c.legend, wantLegend) {
			t.Errorf("%s: legend %q, want %q", c.title, c.legend, wantLegend)
		}
	}
	// The markers' tips are the medians of the runs written.
	for vi, v := range vs {
		for li, load := range cmpLoads {
			at := fmt.Sprintf("%s c=%d: ", labels[vi], load)
			ttft, itl := v.ttft[li], cmpITL(v.ttft[li])
			for ci, tip := range []string{
				fmt.Sprintf("%s%s output tok/s, TTFT p50 %s ms (median of 3 rows)", at, cmpNum(v.tput[li]), cmpNum(ttft)),
				fmt.Sprintf("%s%s output tok/s, TPOT p50 %s ms (median of 3 rows)", at, cmpNum(v.tput[li]), cmpNum(itl)),
				fmt.Sprintf("%sTTFT p50 %s ms (median of 3 rows)", at, cmpNum(ttft)),
				fmt.Sprintf("%sTTFT p99 %s ms (median of 3 rows)", at, cmpNum(2*ttft)),
				fmt.Sprintf("%sITL p50 %s ms (median of 3 rows)", at, cmpNum(itl)),
				fmt.Sprintf("%sITL p99 %s ms (median of 3 rows)", at, cmpNum(3*itl)),
			} {
				c := charts[[]int{0, 1, 2, 2, 3, 3}[ci]]
				if _, ok := c.markers[tip]; !ok {
					t.Errorf("%s: no marker %q", c.title, tip)
				}
			}
		}
	}
	for _, c := range charts {
		perLabel := map[string]int{}
		for tip := range c.markers {
			perLabel[strings.Fields(tip)[0]]++
		}
		want := len(cmpLoads)
		if strings.Contains(c.title, "p99") {
			want *= 2 // p50 and p99
		}
		for _, l := range labels {
			if perLabel[l] != want {
				t.Errorf("%s: %d markers of %s, want %d", c.title, perLabel[l], l, want)
			}
		}
		if len(perLabel) != len(labels) {
			t.Errorf("%s: markers of %v, want only the variants %v", c.title, perLabel, labels)
		}
	}
	// The front's rings: on the markers of the hand-checked front, and
	// only there.
	tt := charts[0]
	var ringed []string
	for tip, at := range tt.rings {
		marker := strings.TrimPrefix(tip, "Pareto front: ")
		if m, ok := tt.markers[marker]; !ok || m != at {
			t.Errorf("ring %q at %v is not on its marker (%v)", tip, at, m)
		}
		ringed = append(ringed, strings.TrimSuffix(strings.Join(strings.Fields(marker)[:2], " "), ":"))
	}
	slices.Sort(ringed)
	front = slices.Sorted(slices.Values(front))
	if !slices.Equal(ringed, front) {
		t.Errorf("Pareto front rings %q, want %q", ringed, front)
	}
	if tt.lines != len(labels)+1 {
		t.Errorf("%s: %d lines, want a curve per variant and the front", tt.title, tt.lines)
	}
}

// TestCompareVariantsExitCodes: with three or more arguments each is a
// variant judged against the first; the exit code is compare's: 1 when
// any variant regressed, 0 when none did, 2 on bad arguments or when no
// cell of any variant matches. Labels alike are told apart.
func TestCompareVariantsExitCodes(t *testing.T) {
	root := t.TempDir()
	start := time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC)
	dir := func(name string, v cmpVariant, day int, set func(*results.Cell)) string {
		d := filepath.Join(root, name)
		writeCmpRuns(t, d, start.AddDate(0, 0, day), v, set)
		return d
	}
	a, a2, a3 := dir("a", cmpA, 0, nil), dir("a2", cmpA, 10, nil), dir("a3", cmpA, 20, nil)
	slow := dir("slow", cmpVariant{tput: cmpA.tput, ttft: []float64{20, 24, 32, 60}}, 30, nil)
	q8 := dir("q8", cmpA, 40, func(c *results.Cell) { c.Metadata = map[string]string{"quant": "Q8"} })
	f16 := dir("f16", cmpA, 50, func(c *results.Cell) { c.Metadata = map[string]string{"quant": "F16"} })
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"three alike", []string{a, a2, a3}, 0, "a → a3\n"},
		{"one of three slower", []string{a, a2, slow}, 1, "a → slow\n"},
		{"the slower one the baseline", []string{slow, a, a2}, 0, "slow → a2\n"},
		{"one argument twice", []string{a, a2, a}, 0, root + "/a #1 → " + root + "/a #3\n"},
		{"no variant matches", []string{a, q8, f16}, 2, ""},
		{"one variant matches", []string{a, q8, a2}, 0, "only in old: sweep/128:128/c1"},
		{"a variant is no run", []string{a, a2, filepath.Join(root, "nowhere")}, 2, ""},
		{"bad metric", []string{a, a2, a3, "--metric", "ttft_p95"}, 2, ""},
		{"one argument", []string{a}, 2, ""},
		{"the page cannot be written", []string{a, a2, a3, "--html", filepath.Join(root, "nowhere", "page.html")}, 3, "a → a3\n"},
	} {
		var out, errb bytes.Buffer
		code := benchrunMain(append([]string{"compare"}, tc.args...), &out, &errb)
		if code != tc.code || !strings.Contains(out.String(), tc.want) {
			t.Errorf("%s: exit %d (want %d), stdout lacks %q?\n%s%s", tc.name, code, tc.code, tc.want, out.String(), errb.String())
		}
	}
	// JSON names each comparison's baseline and variant.
	var out, errb bytes.Buffer
	if code := benchrunMain([]string{"compare", a, a2, slow, "--format", "json"}, &out, &errb); code != 1 ||
		!strings.Contains(out.String(), `"comparisons": [`) || !strings.Contains(out.String(), `"baseline": "a",`) || !strings.Contains(out.String(), `"variant": "slow",`) {
		t.Errorf("json: exit %d:\n%s", code, out.String())
	}
}

// TestCompareByEngine: --by engine splits the runs given by their
// engine column, which labels the variants (text and page), and compares
// them although their engines and versions differ.
func TestCompareByEngine(t *testing.T) {
	root := t.TempDir()
	start := time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC)
	writeCmpRuns(t, root, start, cmpA, nil)
	writeCmpRuns(t, root, start.AddDate(0, 0, 10), cmpB, func(c *results.Cell) { c.Engine, c.EngineVersion = "sglang", "0.5.1" })
	page := filepath.Join(t.TempDir(), "compare.html")
	var out, errb bytes.Buffer
	code := benchrunMain([]string{"compare", "--by", "engine", root, "--html", page, "--format", "markdown"}, &out, &errb)
	if code != 1 || !strings.Contains(out.String(), "## engine: vllm → sglang\n") || !strings.Contains(out.String(), "### sweep/128:128/c8\n\nsweep/128:128/c8 · plan p · completions\n") {
		t.Fatalf("exit %d (want 1: sglang's TTFT at c=8 regressed):\n%s%s", code, out.String(), errb.String())
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	html := string(b)
	checkCmpPage(t, html, []string{"vllm", "sglang"}, []cmpVariant{cmpA, cmpB},
		[]string{"vllm c=1", "sglang c=2", "vllm c=4", "vllm c=8"})
	if !strings.Contains(html, "<title>benchrun compare by engine</title>") || !strings.Contains(html, "<strong>vllm</strong> (baseline): 3 runs (") {
		t.Error("the page does not name the key or its baseline")
	}
}
