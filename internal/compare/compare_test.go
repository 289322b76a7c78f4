package compare

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/chart"
	"github.com/benchrun/benchrun/internal/regress"
	"github.com/benchrun/benchrun/internal/results"
)

// TestParetoFront: the front of hand-checked points: each point kept is
// beaten by none (at least the throughput and at most the latency, better
// in one), in order of throughput; points alike both stay; a point not
// finite is never on it.
func TestParetoFront(t *testing.T) {
	p := func(x, y float64) chart.Point { return chart.Point{X: x, Y: y, Tip: fmt.Sprintf("%g,%g", x, y)} }
	for _, tc := range []struct {
		name string
		pts  []chart.Point
		want string
	}{
		{"none", nil, ""},
		{"one", []chart.Point{p(1, 1)}, "1,1"},
		{"a staircase, given out of order", []chart.Point{p(400, 25), p(90, 9), p(200, 11), p(100, 10)}, "90,9 100,10 200,11 400,25"},
		{"beaten on both", []chart.Point{p(100, 20), p(200, 10)}, "200,10"},
		{"beaten on throughput alone (latency equal)", []chart.Point{p(100, 10), p(200, 10)}, "200,10"},
		{"beaten on latency alone (throughput equal)", []chart.Point{p(100, 10), p(100, 5)}, "100,5"},
		{"alike: both stay", []chart.Point{p(100, 10), p(100, 10), p(50, 20)}, "100,10 100,10"},
		{"not finite", []chart.Point{p(math.NaN(), 1), p(math.Inf(1), 1), p(10, math.NaN()), p(5, 5)}, "5,5"},
		// The compare page test's medians: TTFT p50 against output tok/s of
		// three variants at four load levels.
		{"three variants", []chart.Point{p(100, 10), p(190, 12), p(350, 16), p(600, 30), p(110, 11), p(200, 11), p(330, 20), p(500, 40), p(90, 9), p(180, 14), p(400, 25), p(700, 50)},
			"90,9 100,10 200,11 350,16 400,25 600,30 700,50"},
	} {
		var got []string
		for _, q := range paretoFront(tc.pts) {
			got = append(got, q.Tip)
		}
		if g := strings.Join(got, " "); g != tc.want {
			t.Errorf("%s: front %q, want %q", tc.name, g, tc.want)
		}
	}
}

// TestArgLabels: an argument's variant is named by its run
// directory (less "run=") or folder, or the folder its glob lies under.
func TestArgLabels(t *testing.T) {
	for _, tc := range []struct{ args, want []string }{
		{[]string{"runs/plan=x/date=2026-11-01/run=20261101T020000Z-abcdef", "nightly-b6600/"}, []string{"20261101T020000Z-abcdef", "nightly-b6600"}},
		{[]string{"base/*/*/*", "q8/plan=x/*/*", "b66*"}, []string{"base", "plan=x", "b66*"}},
		{[]string{"x/a", "y/a"}, []string{"x/a", "y/a"}},
		{[]string{"a", "a"}, []string{"a #1", "a #2"}},
	} {
		if got := argLabels(tc.args); !slices.Equal(got, tc.want) {
			t.Errorf("%q: labels %q, want %q", tc.args, got, tc.want)
		}
	}
}

// TestNoMatchHint: when no cell matches, the hint names every part in
// which the nearest cells differ in one --ignore (after what was already
// ignored), and none when the nearest cells are other cells.
func TestNoMatchHint(t *testing.T) {
	k := regress.Key{Plan: "p", CellID: "c"}
	un := func(fields ...string) regress.Unmatched {
		u := regress.Unmatched{Key: k, Nearest: &k}
		for _, f := range fields {
			u.Diffs = append(u.Diffs, regress.FieldDiff{Field: f, A: "a", B: "b"})
		}
		return u
	}
	for _, tc := range []struct {
		name  string
		only  []regress.Unmatched
		given []string
		want  string
	}{
		{"engines' runs", []regress.Unmatched{un("plan", "engine", "engine_version", "metadata.engine")}, nil,
			" (--ignore plan,engine,engine_version,metadata.engine compares them anyway)"},
		{"a metadata key goes bare", []regress.Unmatched{un("metadata.quant")}, nil, " (--ignore quant compares them anyway)"},
		{"already ignored parts stay", []regress.Unmatched{un("engine", "metadata.quant")}, []string{"engine_version"},
			" (--ignore engine_version,engine,quant compares them anyway)"},
		{"the nearest pair", []regress.Unmatched{un("plan", "engine", "hardware"), un("engine")}, nil, " (--ignore engine compares them anyway)"},
		{"another cell is no hint", []regress.Unmatched{un("cell_id", "engine")}, nil, ""},
		{"the same cell elsewhere is nearer than another cell", []regress.Unmatched{un("cell_id"), un("plan", "stage")}, nil,
			" (--ignore plan,stage compares them anyway)"},
		{"nothing to go by", []regress.Unmatched{{Key: k}}, nil, ""},
	} {
		if got := NoMatchHint(&regress.Report{OnlyNew: tc.only}, tc.given); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestEngineIgnores: --by engine lets metadata.engine differ always,
// and the plan's name only where each engine's runs are of one plan of
// its own.
func TestEngineIgnores(t *testing.T) {
	runs := func(plans ...string) []*regress.Run {
		var rs []*regress.Run
		for _, p := range plans {
			rs = append(rs, &regress.Run{ID: p, Cells: []results.Cell{{Plan: p, CellID: "c"}}})
		}
		return rs
	}
	for _, tc := range []struct {
		name     string
		old, new []*regress.Run
		want     []string
	}{
		{"one plan", runs("x"), runs("x"), []string{"metadata.engine"}},
		{"a plan per engine", runs("llama-q4", "llama-q4"), runs("vllm"), []string{"metadata.engine", "plan"}},
		{"plans shared", runs("x", "y"), runs("x", "y"), []string{"metadata.engine"}},
		{"more plans on one side", runs("x", "y"), runs("z"), []string{"metadata.engine"}},
	} {
		var errb bytes.Buffer
		got := engineIgnores(Comparison{Old: tc.old, New: tc.new, Baseline: "a", Variant: "b"}, &errb)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
		if said := strings.Contains(errb.String(), "compared across the two plans"); said != slices.Contains(got, "plan") {
			t.Errorf("%s: stderr %q", tc.name, errb.String())
		}
	}
}

// TestCSVTextIsNotAFormula: compare's and history's CSV keep server text
// (an engine version "=HYPERLINK(…)", a plan or metadata value) from
// reading as a spreadsheet formula, as the csv sink does; numbers keep
// their sign.
func TestCSVTextIsNotAFormula(t *testing.T) {
	key := regress.Key{CellID: "sweep/16:8/c1", Plan: "p", Engine: "+sim", EngineVersion: `=HYPERLINK("http://x","y")`, Hardware: "@cpu", Metadata: `{"gpu":"-h100"}`}
	ms, err := regress.SelectMetrics([]string{"ttft_p50_ms"})
	if err != nil {
		t.Fatal(err)
	}
	h := History{Series: []regress.Series{{Key: key, CellID: key.CellID, Metric: ms[0],
		Points: []regress.Point{{RunID: "-run", At: time.Unix(0, 0), Value: -1.5}}}}}
	var b strings.Builder
	if err := WriteHistoryCSV(&b, h); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(strings.NewReader(b.String())).ReadAll()
	if err != nil || len(rows) != 2 {
		t.Fatalf("rows %v, %v", rows, err)
	}
	for i, f := range rows[1] {
		if f != "" && strings.ContainsRune("=+@", rune(f[0])) || strings.HasPrefix(f, "-") && f != "-1.5" {
			t.Errorf("column %s: %q reads as a formula", rows[0][i], f)
		}
	}
	if !slices.Contains(rows[1], `'=HYPERLINK("http://x","y")`) || !slices.Contains(rows[1], "-1.5") {
		t.Errorf("row %q: want the version neutralised and the value's sign kept", rows[1])
	}
}
