package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
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

// The compare tests' variants.
var (
	cmpA = cmpVariant{tput: []float64{100, 190, 350, 600}, ttft: []float64{10, 12, 16, 30}}
	cmpB = cmpVariant{tput: []float64{110, 200, 330, 500}, ttft: []float64{11, 11, 20, 40}}
)

// cmpRunFactors scale a variant's values in its three runs: the median
// run is the variant's own values.
var cmpRunFactors = []float64{0.98, 1, 1.03}

// cmpITL is the ITL p50 of a variant's load level (TPOT p50 alike): a
// tenth of its TTFT p50 and a millisecond.
func cmpITL(ttft float64) float64 { return 1 + ttft/10 }

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
// engine column, which labels the variants, and compares them although
// their engines and versions differ.
func TestCompareByEngine(t *testing.T) {
	root := t.TempDir()
	start := time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC)
	writeCmpRuns(t, root, start, cmpA, nil)
	writeCmpRuns(t, root, start.AddDate(0, 0, 10), cmpB, func(c *results.Cell) { c.Engine, c.EngineVersion = "sglang", "0.5.1" })
	var out, errb bytes.Buffer
	code := benchrunMain([]string{"compare", "--by", "engine", root, "--format", "markdown"}, &out, &errb)
	if code != 1 || !strings.Contains(out.String(), "## engine: vllm → sglang\n") || !strings.Contains(out.String(), "### sweep/128:128/c8\n\nsweep/128:128/c8 · plan p · completions\n") {
		t.Fatalf("exit %d (want 1: sglang's TTFT at c=8 regressed):\n%s%s", code, out.String(), errb.String())
	}
}

// TestCompareArgLabels: an argument's variant is named by its run
// directory (less "run=") or folder, or the folder its glob lies under.
func TestCompareArgLabels(t *testing.T) {
	for _, tc := range []struct{ args, want []string }{
		{[]string{"runs/plan=x/date=2026-11-01/run=20261101T020000Z-abcdef", "nightly-b6600/"}, []string{"20261101T020000Z-abcdef", "nightly-b6600"}},
		{[]string{"base/*/*/*", "q8/plan=x/*/*", "b66*"}, []string{"base", "plan=x", "b66*"}},
		{[]string{"x/a", "y/a"}, []string{"x/a", "y/a"}},
		{[]string{"a", "a"}, []string{"a #1", "a #2"}},
	} {
		if got := cmpArgLabels(tc.args); !slices.Equal(got, tc.want) {
			t.Errorf("%q: labels %q, want %q", tc.args, got, tc.want)
		}
	}
}
