package report_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchrun/benchrun/internal/golden"
	"github.com/benchrun/benchrun/internal/results/resultstest"
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
