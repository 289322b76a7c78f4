package jsonsink_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchrun/benchrun/internal/golden"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/results/resultstest"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/pipeline/pipelinetest"
	"github.com/benchrun/benchrun/schema"
	"github.com/benchrun/benchrun/sinks/internal/resultdoc"
	"github.com/benchrun/benchrun/sinks/jsonsink"
)

func fixture() resultdoc.Result {
	var cells []resultdoc.CellResult
	var vs []results.Verdict
	for _, p := range resultstest.Points() {
		cells = append(cells, resultdoc.NewCellResult(p.Cell, results.AsRequests(p.Requests)))
		vs = append(vs, p.Verdicts...)
	}
	return resultdoc.Build(resultstest.Run(), cells, vs)
}

func TestResultGolden(t *testing.T) {
	got, err := resultdoc.Encode(fixture())
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "result.json", got)
}

// The keys users of vLLM's `bench serve --save-result` read, per cell, and
// the --metadata stamps as top-level keys as vLLM writes them.
func TestVLLMKeys(t *testing.T) {
	b, err := resultdoc.Encode(fixture())
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Quant string           `json:"quant"`
		Cells []map[string]any `json:"cells"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Quant != "Q4_K_M" {
		t.Errorf("top-level metadata key quant = %q, want Q4_K_M", doc.Quant)
	}
	keys := []string{"date", "backend", "model_id", "num_prompts", "request_rate", "max_concurrency", "duration", "completed",
		"total_input_tokens", "total_output_tokens", "request_throughput", "request_goodput", "output_throughput", "total_token_throughput",
		"mean_ttft_ms", "median_ttft_ms", "std_ttft_ms", "p90_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "median_tpot_ms", "std_tpot_ms", "p90_tpot_ms", "p99_tpot_ms",
		"mean_itl_ms", "median_itl_ms", "std_itl_ms", "p90_itl_ms", "p99_itl_ms", "mean_e2el_ms", "median_e2el_ms", "std_e2el_ms", "p90_e2el_ms", "p99_e2el_ms", "quant", "gpu"}
	for i, c := range doc.Cells {
		for _, k := range keys {
			if _, ok := c[k]; !ok {
				t.Errorf("cell %d lacks %q", i, k)
			}
		}
	}
	// Values: the fixture's 64:32 c=1 cell has 2 requests of 64+32 tokens,
	// TTFTs 20+2+3+{0,1} ms: mean 25.5, population std 0.5.
	c := doc.Cells[0]
	for k, want := range map[string]float64{"total_input_tokens": 128, "total_output_tokens": 64, "mean_ttft_ms": 25.5, "std_ttft_ms": 0.5, "max_concurrency": 1} {
		if got, _ := c[k].(float64); math.Abs(got-want) > 1e-9 {
			t.Errorf("cell 0 %s = %v, want %v", k, c[k], want)
		}
	}
	if c["request_rate"] != nil {
		t.Errorf("closed-loop request_rate = %v, want null", c["request_rate"])
	}
}

// result.json is whole and current after every cell, and final after Stop.
func TestOutputRewritesAfterEachCell(t *testing.T) {
	dir := t.TempDir()
	p := &schema.Plan{Name: "fixture", Metadata: map[string]string{"quant": "Q4_K_M"}}
	ri := &pipeline.RunInfo{ID: resultstest.RunID, Plan: p, Dir: dir, StartedAt: resultstest.T0}
	o := jsonsink.New()
	o.Prefix = filepath.Join(dir, "copy")
	if err := o.Start(pipelinetest.LiveEnv(ri)); err != nil {
		t.Fatal(err)
	}
	read := func(path string) resultdoc.Result {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var r resultdoc.Result
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return r
	}
	if r := read(filepath.Join(dir, jsonsink.FileName)); len(r.Cells) != 0 || r.Status != "running" {
		t.Fatalf("at start: %d cells, status %q", len(r.Cells), r.Status)
	}
	for i, pt := range resultstest.Points() {
		if err := o.Cell(pt.Cell, results.AsRequests(pt.Requests)); err != nil {
			t.Fatal(err)
		}
		if err := o.Verdicts(pt.Cell, pt.Verdicts); err != nil {
			t.Fatal(err)
		}
		if r := read(filepath.Join(dir, jsonsink.FileName)); len(r.Cells) != i+1 || r.Assertions.Checked != 2*(i+1) {
			t.Fatalf("after cell %d: %d cells, %d checks", i+1, len(r.Cells), r.Assertions.Checked)
		}
	}
	if err := o.Stop(&pipeline.Summary{Run: ri, ExitCode: pipeline.ExitAssertion}); err != nil {
		t.Fatal(err)
	}
	r := read(o.Prefix + ".json")
	if r.Status != "failed" || r.ExitCode == nil || *r.ExitCode != 1 || r.Assertions.Failed != 1 || r.SchemaVersion != results.SchemaVersion {
		t.Errorf("final: status %q exit %v failed %d schema %d", r.Status, r.ExitCode, r.Assertions.Failed, r.SchemaVersion)
	}
}

// A null (not measured) metric is null in result.json, never 0; a measured
// zero stays 0. The fixture's failed cell has no latency, no deviation
// (no ok request) and a measured 0 req/s; its verdict is an error.
func TestNullIsNull(t *testing.T) {
	bad := resultstest.Unmeasured()
	b, err := resultdoc.Encode(resultdoc.Build(resultstest.Run(), []resultdoc.CellResult{resultdoc.NewCellResult(bad.Cell, results.AsRequests(bad.Requests))}, bad.Verdicts))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Cells      []map[string]any `json:"cells"`
		Assertions struct {
			Failed   int `json:"failed"`
			Verdicts []struct {
				Outcome, Error string
				Values         map[string]string
			} `json:"verdicts"`
		} `json:"assertions"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	c := doc.Cells[0]
	for _, k := range []string{"mean_ttft_ms", "median_ttft_ms", "std_ttft_ms", "p90_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "std_tpot_ms",
		"p99_itl_ms", "std_itl_ms", "mean_e2el_ms", "p99_e2el_ms", "prefill_tok_s"} {
		if v, ok := c[k]; !ok || v != nil {
			t.Errorf("%s = %v (present %v), want null", k, v, ok)
		}
	}
	for k, want := range map[string]float64{"request_throughput": 0, "output_throughput": 0, "request_goodput": 0, "decode_tok_s": 0,
		"num_prompts": 8, "failed": 8, "completed": 0, "total_output_tokens": 0} {
		if v, ok := c[k].(float64); !ok || v != want {
			t.Errorf("%s = %v, want the measured %v", k, c[k], want)
		}
	}
	if len(doc.Assertions.Verdicts) != 1 || doc.Assertions.Failed != 1 || doc.Assertions.Verdicts[0].Outcome != "error" ||
		doc.Assertions.Verdicts[0].Values["ttft_p99_ms"] != "null" || !strings.Contains(doc.Assertions.Verdicts[0].Error, "ttft_p99_ms is null") {
		t.Errorf("assertions: %+v", doc.Assertions)
	}
	// NaN and ±Inf, which JSON cannot carry, are not measurements either.
	odd := resultstest.Points()[0].Cell
	odd.TTFTP99Ms, odd.ReqS = results.Some(math.NaN()), results.Some(math.Inf(1))
	r := resultdoc.NewCellResult(odd, nil)
	if r.P99TTFTMs != nil || r.RequestThroughput != nil {
		t.Errorf("NaN/Inf read as %v/%v, want null", *r.P99TTFTMs, *r.RequestThroughput)
	}
}

// Thousands of cells (an exec program's records) cost result.json a
// bounded share of the run, not a rewrite of everything so far after
// every cell: the writes thin out once one takes over 5 ms, and the
// final file holds every cell.
func TestManyCellsAreNotQuadratic(t *testing.T) {
	dir := t.TempDir()
	ri := &pipeline.RunInfo{ID: resultstest.RunID, Plan: &schema.Plan{Name: "many"}, Dir: dir, StartedAt: resultstest.T0}
	o := jsonsink.New()
	if err := o.Start(pipelinetest.LiveEnv(ri)); err != nil {
		t.Fatal(err)
	}
	base := resultstest.Points()[0]
	const n = 3000
	for i := range n {
		c := base.Cell
		c.CellID = fmt.Sprintf("bench/test%d", i)
		if err := o.Cell(c, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := o.Stop(&pipeline.Summary{Run: ri}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, jsonsink.FileName))
	if err != nil {
		t.Fatal(err)
	}
	var r resultdoc.Result
	if err := json.Unmarshal(b, &r); err != nil || len(r.Cells) != n {
		t.Fatalf("%d cells in result.json (%v), want %d", len(r.Cells), err, n)
	}
	w := jsonsink.Writes(o)
	t.Logf("%d cells: result.json written %d times", n, w)
	if w > n/3 {
		t.Errorf("result.json written %d times for %d cells: every cell rewrote the whole file", w, n)
	}
}
