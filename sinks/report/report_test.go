package report_test

import (
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
	"github.com/benchrun/benchrun/sinks/report"
)

func fixture() report.Data {
	d := report.Data{Run: resultstest.Run()}
	for _, p := range resultstest.Points() {
		d.Cells = append(d.Cells, p.Cell)
		d.Verdicts = append(d.Verdicts, p.Verdicts...)
	}
	return d
}

func TestMarkdownGolden(t *testing.T) {
	d := fixture()
	golden.Check(t, "report.md", report.Markdown(d, report.Charts(d), "charts/"))
}

func TestChartsGolden(t *testing.T) {
	for _, c := range report.Charts(fixture()) {
		golden.Check(t, c.Name+".svg", []byte(c.SVG+"\n"))
	}
}

func TestWriteSelfContained(t *testing.T) {
	dir := t.TempDir()
	if err := report.Write(dir, fixture(), filepath.Join(dir, "out", "x")); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(page)
	// Self-contained: no script, no fetch of anything at view time.
	for _, bad := range []string{"<script", "src=", "href=", "@import", "url(", "http://", "https://", "//www."} {
		if strings.Contains(s, bad) {
			t.Errorf("report.html contains %q; it must not reference anything outside itself", bad)
		}
	}
	if n := strings.Count(s, "<svg"); n != 4 {
		t.Errorf("report.html has %d inline charts, want 4", n)
	}
	for _, want := range []string{"Output tokens/s vs concurrency", "TTFT p50 and p99", "ITL p50 and p99", "Latency-throughput trade-off", "itl_p99_ms &lt; 2*itl_p50_ms", `class="badge fail"`} {
		if !strings.Contains(s, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	for _, f := range []string{"report.md", "charts/throughput.svg", "charts/ttft.svg", "charts/itl.svg", "charts/tradeoff.svg", "out/x.md", "out/x.html"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("missing %s: %v", f, err)
		}
	}
	md, _ := os.ReadFile(filepath.Join(dir, "out", "x.md"))
	if !strings.Contains(string(md), "](../charts/throughput.svg)") {
		t.Errorf("out/x.md does not link the charts relative to itself:\n%s", md)
	}
}

func TestEmptyRun(t *testing.T) {
	dir := t.TempDir()
	d := report.Data{Run: resultstest.Run()}
	if err := report.Write(dir, d, ""); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	if !strings.Contains(string(md), "No assertions were checked.") {
		t.Errorf("empty report:\n%s", md)
	}
}

// A null (not measured) metric reads "–" in both reports, with a line that
// says what the dash means; a measured zero reads 0.00. The charts leave
// the unmeasured cell out.
func TestNotMeasuredIsADash(t *testing.T) {
	d := fixture()
	bad := resultstest.Unmeasured()
	d.Cells = append(d.Cells, bad.Cell)
	d.Verdicts = append(d.Verdicts, bad.Verdicts...)
	md := string(report.Markdown(d, report.Charts(d), "charts/"))
	var row string
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "| sweep | 64:32 | c=8 |") {
			row = l
		}
	}
	// stage, isl:osl, load, status, requests, TTFT p50/p99, ITL p50/p99, TPOT, E2EL p99, req/s, tok/s, speedup, batch eff.
	if want := "| sweep | 64:32 | c=8 | error | 8 (8 failed) | – | – | – | – | – | – | 0.00 | 0.00 | – | – |"; row != want {
		t.Errorf("report.md row of the failed cell:\n got %s\nwant %s", row, want)
	}
	if !strings.Contains(md, "– not measured (null") || !strings.Contains(md, "ttft\\_p99\\_ms is null: not measured (every request failed)") {
		t.Errorf("report.md does not say what – means, or lacks the null verdict:\n%s", md)
	}
	// The fixture's rows have no telemetry (the telemetry section says
	// so); the cells table's legend is what must be absent.
	if strings.Contains(string(report.Markdown(fixture(), nil, "charts/")), "– not measured (null") {
		t.Error("report.md explains – when every value of the cells table was measured")
	}
	page, err := report.HTML(d, report.Charts(d))
	if err != nil {
		t.Fatal(err)
	}
	if s := string(page); !strings.Contains(s, "– not measured (null") || !strings.Contains(s, "ttft_p99_ms is null: not measured") {
		t.Errorf("report.html does not explain the null values")
	}
}

// TestReMeasuredCellsToldApart: a cell measured twice reads as such in
// the report: its current row says measurement 2, a check that failed on
// the first measurement stays listed as measurement 1's (the Cell call of
// the second keeps it), and an inconclusive check counts apart from the
// failures, with its reason in numbers.
func TestReMeasuredCellsToldApart(t *testing.T) {
	o := report.New()
	dir := t.TempDir()
	ri := &pipeline.RunInfo{ID: resultstest.RunID, Plan: &schema.Plan{Name: "fixture"}, Dir: dir, StartedAt: resultstest.T0, Attempt: 1}
	if err := o.Start(pipelinetest.LiveEnv(ri)); err != nil {
		t.Fatal(err)
	}
	p := resultstest.Points()[0]
	m1, m2 := p.Cell, p.Cell
	m1.Measurement, m2.Measurement = 1, 2
	verdict := func(c results.Cell, assertion, outcome, why string) results.Verdict {
		return results.Verdict{Stage: c.Stage, CellID: c.CellID, Attempt: c.Attempt, Cell: "sweep 128:128 c=1", Assertion: assertion,
			Outcome: outcome, Passed: outcome == results.OutcomePass, Measurement: c.Measurement, Explained: why}
	}
	o.Cell(m1, nil)
	o.Verdicts(m1, []results.Verdict{verdict(m1, "ttft_ms < 40", results.OutcomeFail, ""), verdict(m1, "itl_p99_ms < 4*itl_p50_ms", results.OutcomeInconclusive, "the check failed by 1.5; the machine ran ...")})
	o.Cell(m2, nil)
	o.Verdicts(m2, []results.Verdict{verdict(m2, "ttft_ms < 40", results.OutcomePass, ""), verdict(m2, "itl_p99_ms < 4*itl_p50_ms", results.OutcomeInconclusive, "the check failed by 1.2; the machine ran ...")})
	if err := o.Stop(nil); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	md := string(b)
	for _, want := range []string{
		"3 assertion checks, 1 failed, 1 inconclusive (the machine's own lateness could explain them)",
		"| ✗ **fail** | sweep 128:128 c=1, measurement 1 | `ttft_ms < 40` |",
		"| ? **inconclusive** | sweep 128:128 c=1, measurement 2 | `itl_p99_ms < 4*itl_p50_ms` | the check failed by 1.2; the machine ran ... |",
		"| ✓ pass | sweep 128:128 c=1, measurement 2 | `ttft_ms < 40` |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
}

// The report lists what each check read for people, as the SiYuan
// document does: the compared value beside its limit, not the raw
// "key=value" text, in the Markdown and the HTML alike.
func TestVerdictValuesReadable(t *testing.T) {
	dir := t.TempDir()
	d := fixture()
	if err := report.Write(dir, d, filepath.Join(dir, "x")); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	md := string(report.Markdown(d, nil, "charts/"))
	for name, s := range map[string]string{"report.md": md, "report.html": string(page)} {
		want := `itl_p50_ms = 13.2, itl_p99_ms = 40.0 (limit 26.5)`
		if name == "report.md" {
			want = strings.ReplaceAll(want, "_", `\_`)
		}
		if !strings.Contains(s, want) {
			t.Errorf("%s lacks %q", name, want)
		}
		if strings.Contains(s, "itl_p99_ms=") || strings.Contains(s, `itl\_p99\_ms=`) {
			t.Errorf("%s lists a check's values as raw key=value text", name)
		}
	}
}

// TestReasoningAndValidityColumns: a run whose rows measured a thinking
// model's time to first answer, its reasoning and answered share, or the
// answers' validity under tools or a response_format shows those columns
// beside the TTFT and the throughput, with the rows' values; a run that
// measured none keeps its table as it was.
func TestReasoningAndValidityColumns(t *testing.T) {
	heads := []string{"TTFO p99 ms", "reasoning tok", "answered %", "tool args valid %", "JSON valid %"}
	plain := string(report.Markdown(fixture(), nil, "charts/"))
	for _, h := range heads {
		if strings.Contains(plain, h) {
			t.Errorf("report.md of a run that measured no %s has its column", h)
		}
	}
	d := fixture()
	for i := range d.Cells {
		d.Cells[i].TTFOP99Ms = results.Some(812.5)
		d.Cells[i].ReasoningTokensAvg = results.Some(200.0)
		d.Cells[i].AnsweredPct = results.Some(87.5)
		d.Cells[i].ToolArgsValidPct = results.Some(90.0)
		d.Cells[i].StructuredValidPct = results.Some(100.0)
	}
	md := string(report.Markdown(d, nil, "charts/"))
	var head, row string
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "| stage | isl:osl |") && head == "" {
			head = l
		}
		if strings.HasPrefix(l, "| sweep |") && row == "" {
			row = l
		}
	}
	wantHead := "TTFT p99 ms | TTFO p99 ms | reasoning tok | answered % | ITL p50 ms"
	if !strings.Contains(head, wantHead) || !strings.Contains(head, "tok/s | tool args valid % | JSON valid % |") {
		t.Errorf("cells table head:\n%s\nwant it to hold %q and the validity columns after tok/s", head, wantHead)
	}
	if !strings.Contains(row, "| 812.5 | 200.0 | 87.50 |") || !strings.Contains(row, "| 90.00 | 100.0 |") {
		t.Errorf("cells table row does not carry the values: %s", row)
	}
}
