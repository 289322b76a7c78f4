package report_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/benchrun/benchrun/internal/chromiumtest"
	"github.com/benchrun/benchrun/sinks/report"
)

// TestTelemetryRendersInChromium renders a report with telemetry: the
// page logs no console error, the DOM has the telemetry tables (the GPU
// stage's with every column, the CPU stage's with the process columns)
// and the five usage charts with their lines, and the charts' colours
// show in the screenshot.
func TestTelemetryRendersInChromium(t *testing.T) {
	bin := chromiumtest.Find(t, "report.html")
	dir := t.TempDir()
	// Without the load charts, so that the series colours in the
	// screenshot are the usage charts' own.
	page, err := report.HTML(telemetryFixture(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "report.html"), page, 0o644); err != nil {
		t.Fatal(err)
	}
	url := "file://" + filepath.Join(dir, "report.html")
	dom, console := chromiumtest.DOM(t, bin, url)
	for _, l := range console {
		t.Errorf("console: %s", l)
	}
	count := func(re string) int { return len(regexp.MustCompile(re).FindAll(dom, -1)) }
	if n := count(`<table class="telemetry" id="telemetry-(gpu|cpu)"`); n != 2 {
		t.Errorf("rendered DOM has %d telemetry tables, want 2 (gpu, cpu; the bare stage collapses)", n)
	}
	if n := count(`<table class="telemetry" id="telemetry-gpu">\s*<thead><tr>(<th[^>]*>[^<]*</th>){22}</tr>`); n != 1 {
		t.Error("the gpu stage's telemetry table does not have its 22 columns")
	}
	if n := count(`<svg class="usage"`); n != 5 {
		t.Errorf("rendered DOM has %d usage charts, want 5", n)
	}
	// Four GPU cells × (2 util + 2 power lines), one CPU cell × 1 line.
	if n := count(`<path class="usage-line"`); n != 17 {
		t.Errorf("rendered DOM has %d usage lines, want 17", n)
	}
	for _, label := range []string{"Memory, utilisation and energy", "GPU utilisation, %", "power, W", "server CPU, cores", "seconds since the cell's first sample", "benchrun client CPU: not measured"} {
		if !bytes.Contains(dom, []byte(label)) {
			t.Errorf("rendered DOM lacks %q", label)
		}
	}

	px := chromiumtest.Count(chromiumtest.Screenshot(t, bin, url, "--window-size=1200,6000"), chromiumtest.Blue, chromiumtest.Orange)
	blue, orange := px.Near[0], px.Near[1]
	if blue < 500 || orange < 500 {
		t.Errorf("the usage lines' colours barely appear (%d blue, %d orange pixels): charts not drawn", blue, orange)
	}
}

// TestHTMLRendersInChromium renders report.html in headless Chromium: the
// DOM has the four charts with their lines and markers, and the screenshot
// is a page with charts on it, not a blank or an error page.
func TestHTMLRendersInChromium(t *testing.T) {
	bin := chromiumtest.Find(t, "report.html")
	dir := t.TempDir()
	if err := report.Write(dir, fixture(), ""); err != nil {
		t.Fatal(err)
	}
	url := "file://" + filepath.Join(dir, "report.html")

	dom, _ := chromiumtest.Run(t, bin, url, "--dump-dom")
	count := func(re string) int { return len(regexp.MustCompile(re).FindAll(dom, -1)) }
	if n := count(`<svg[ >]`); n != 4 {
		t.Errorf("rendered DOM has %d <svg> charts, want 4", n)
	}
	// 2 cells: 2 lines in the throughput and trade-off charts, 4 (p50, p99)
	// in the TTFT and ITL charts; a marker per point.
	if n := count(`<path class="series"`); n != 12 {
		t.Errorf("rendered DOM has %d series lines, want 12", n)
	}
	if want := 6 + 12 + 12 + 6; count(`<circle `) != want {
		t.Errorf("rendered DOM has %d markers, want %d", count(`<circle `), want)
	}
	// Labelled: each chart has its title, a legend naming both cells, and
	// both axes named with their units and which way is better.
	for _, label := range []string{"Output tokens/s vs concurrency", "TTFT p50 and p99 vs concurrency", "ITL p50 and p99 vs concurrency",
		"Latency-throughput trade-off", "concurrency (in-flight requests)", "output tokens/s (higher is better)",
		"time to first token, ms (lower is better)", "inter-token latency, ms (lower is better)", "1000 / TPOT"} {
		if !bytes.Contains(dom, []byte(label)) {
			t.Errorf("rendered DOM lacks the chart label %q", label)
		}
	}
	if n := count(`>64:32</text>`); n != 4 {
		t.Errorf("the legend names cell 64:32 in %d charts, want 4", n)
	}
	if n := count(`<tr`); n < 6+12+2 {
		t.Errorf("rendered DOM has %d table rows, want the cells, verdicts and stages", n)
	}

	px := chromiumtest.Count(chromiumtest.Screenshot(t, bin, url), chromiumtest.Blue, chromiumtest.Orange)
	colors, inked, total, blue, orange := px.Colours, px.Inked, px.Total, px.Near[0], px.Near[1]
	t.Logf("screenshot: %d colours, %.1f%% non-background, %d series-blue and %d series-orange pixels", colors, 100*float64(inked)/float64(total), blue, orange)
	if colors < 100 {
		t.Errorf("screenshot has %d distinct colours: blank or unstyled", colors)
	}
	if frac := float64(inked) / float64(total); frac < 0.02 {
		t.Errorf("only %.1f%% of the screenshot differs from the background: blank", 100*frac)
	}
	if blue < 500 || orange < 500 {
		t.Errorf("the chart series colours barely appear (%d blue, %d orange pixels): charts not drawn", blue, orange)
	}
}
