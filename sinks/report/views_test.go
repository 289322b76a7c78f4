package report_test

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/benchrun/benchrun/internal/chromiumtest"
	"github.com/benchrun/benchrun/internal/golden"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/results/resultstest"
	"github.com/benchrun/benchrun/sinks/report"
)

// viewsFixture is the fixture with what its request rows give the charts
// (distributions, time slices, timelines), an open-loop stage over the
// 64:32 points, and a baseline check of itl_p99_ms on the sweep's 64:32,
// regressed at c=16.
func viewsFixture() report.Data {
	d := fixture()
	for _, p := range resultstest.Points() {
		d.Views.Keep(p.Cell, results.AsRequests(p.Requests))
	}
	for _, p := range resultstest.Points()[:3] {
		c := p.Cell
		c.Stage, c.CellID = "rates", strings.Replace(c.CellID, "sweep", "rates", 1)
		c.Rate, c.Concurrency = 5*float64(c.Concurrency), 0
		c.SentReqS = results.Some(0.98 * c.Rate)
		reqs := append([]results.Request(nil), p.Requests...)
		for i := range reqs {
			reqs[i].Stage, reqs[i].CellID = c.Stage, c.CellID
		}
		d.Cells = append(d.Cells, c)
		d.Views.Keep(c, results.AsRequests(reqs))
	}
	band := func(cell, outcome, old, cur, lo, hi string) results.Verdict {
		return results.Verdict{RunID: resultstest.RunID, Stage: "sweep", CellID: cell, Assertion: "regression of itl_p99_ms", Name: "itl_p99_ms",
			Level: "regression", Severity: "fail", Outcome: outcome, Passed: outcome != "regressed",
			Values: map[string]string{"old": old, "new": cur, "low": lo, "high": hi, "runs": "r1,r2,r3", "method": "prediction interval"}}
	}
	d.Verdicts = append(d.Verdicts,
		band("sweep/64:32/c1", "same", "2.1", "2.2", "1.8", "2.5"),
		band("sweep/64:32/c4", "same", "2.6", "2.7", "2.2", "3.1"),
		band("sweep/64:32/c16", "regressed", "3.0", "4.4", "2.6", "3.5"))
	return d
}

// viewChart says whether a chart is one the request rows or the baseline
// give (the ones this file checks).
func viewChart(name string) bool {
	for _, p := range []string{"rate-", "baseline-", "slices-", "timeline-"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

func TestViewChartsGolden(t *testing.T) {
	var names []string
	for _, c := range report.Charts(viewsFixture()) {
		if viewChart(c.Name) {
			names = append(names, c.Name)
			golden.Check(t, c.Name+".svg", []byte(c.SVG+"\n"))
		}
	}
	want := "rate-rates-64-32 baseline-itl-p99-ms-sweep-64-32 slices-tput-sweep-64-32 slices-latency-sweep-64-32 slices-tput-sweep-256-32 " +
		"slices-latency-sweep-256-32 slices-tput-rates-64-32 slices-latency-rates-64-32 timeline-sweep-64-32 timeline-sweep-256-32 timeline-rates-64-32"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("charts %q\nwant %q", got, want)
	}
}

// TestViewChartsRenderInChromium loads a report with every chart the
// request rows and the baseline give in headless Chromium: no console
// error, each chart in the DOM with its parts (a timeline's requests, the
// band, the ringed regression), and a screenshot with the charts' colours.
func TestViewChartsRenderInChromium(t *testing.T) {
	bin := chromiumtest.Find(t, "report.html")
	dir := t.TempDir()
	if err := report.Write(dir, viewsFixture(), ""); err != nil {
		t.Fatal(err)
	}
	url := "file://" + filepath.Join(dir, "report.html")
	dom, console := chromiumtest.DOM(t, bin, url)
	for _, l := range console {
		t.Errorf("console: %s", l)
	}
	count := func(re string) int { return len(regexp.MustCompile(re).FindAll(dom, -1)) }
	// A timeline per shape, of its most loaded cell: c=16's 32 requests (the
	// rates stage's 80 req/s point is a copy of it).
	if n := count(`<svg class="timeline"`); n != 3 {
		t.Errorf("%d timelines, want one per shape (3)", n)
	}
	if n := count(`<g class="request">`); n != 3*32 {
		t.Errorf("%d timeline requests, want 96 (32 in each shape's most loaded cell)", n)
	}
	if n := count(`<path class="band"`); n != 1 {
		t.Errorf("%d baseline bands, want 1", n)
	}
	// A regression verdict's values are long: they wrap in their cell
	// rather than run off the table's edge.
	if n := count(`<td class="wrap">[^<]*low = 2\.6`); n != 1 {
		t.Errorf("%d wrapping value cells hold the regressed check's interval, want 1", n)
	}
	if n := count(`<circle class="mark"`); n != 1 {
		t.Errorf("%d regressed marks, want 1", n)
	}
	for _, label := range []string{"Output tokens/s over the pass · sweep 64:32", "ITL p99 over the pass · sweep 256:32",
		"Offered vs achieved rate · rates 64:32", "itl_p99_ms against its history · sweep 64:32", "Request timeline · sweep 256:32 c=16"} {
		if !bytes.Contains(dom, []byte(label)) {
			t.Errorf("rendered DOM lacks %q", label)
		}
	}
	px := chromiumtest.Count(chromiumtest.Screenshot(t, bin, url, "--window-size=1200,12000"), chromiumtest.Blue, chromiumtest.Orange)
	colors, blue, orange := px.Colours, px.Near[0], px.Near[1]
	if colors < 100 || blue < 2000 || orange < 2000 {
		t.Errorf("screenshot: %d colours, %d blue and %d orange pixels: charts not drawn", colors, blue, orange)
	}
}
