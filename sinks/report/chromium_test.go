package report_test

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/benchrun/benchrun/sinks/report"
)

// chromium finds the browser, or skips (fails under CI) when it is missing.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is not installed (CI is set): apt-get install -y chromium")
	}
	t.Skip("chromium is not installed: apt-get install -y chromium (Debian) to render report.html")
	return ""
}

// headless runs one headless Chromium command on a file:// URL, offline,
// in its own process group, killed whole if it overruns.
func headless(t *testing.T, bin, url string, extra ...string) []byte {
	t.Helper()
	out, _ := headlessLog(t, bin, url, extra...)
	return out
}

// headlessLog is headless with the browser's log (stderr) too, where
// --enable-logging=stderr puts the page's console messages.
func headlessLog(t *testing.T, bin, url string, extra ...string) ([]byte, []byte) {
	t.Helper()
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), "--window-size=1200,2000"}, extra...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(args, url)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", extra, err, stderr.Bytes())
	}
	return stdout.Bytes(), stderr.Bytes()
}

// TestTelemetryRendersInChromium renders a report with telemetry: the
// page logs no console error, the DOM has the telemetry tables (the GPU
// stage's with every column, the CPU stage's with the process columns)
// and the five usage charts with their lines, and the charts' colours
// show in the screenshot.
func TestTelemetryRendersInChromium(t *testing.T) {
	bin := chromium(t)
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
	dom, log := headlessLog(t, bin, url, "--dump-dom", "--enable-logging=stderr", "--v=0")
	for _, l := range bytes.Split(log, []byte("\n")) {
		if bytes.Contains(l, []byte("CONSOLE")) || bytes.Contains(l, []byte("Uncaught")) || bytes.Contains(l, []byte("error on line")) {
			t.Errorf("console: %s", l)
		}
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

	shot := filepath.Join(dir, "shot.png")
	headless(t, bin, url, "--screenshot="+shot, "--window-size=1200,6000")
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	_, _, blue, orange := pixelStats(img)
	if blue < 500 || orange < 500 {
		t.Errorf("the usage lines' colours barely appear (%d blue, %d orange pixels): charts not drawn", blue, orange)
	}
}

// TestHTMLRendersInChromium renders report.html in headless Chromium: the
// DOM has the four charts with their lines and markers, and the screenshot
// is a page with charts on it, not a blank or an error page.
func TestHTMLRendersInChromium(t *testing.T) {
	bin := chromium(t)
	dir := t.TempDir()
	if err := report.Write(dir, fixture(), ""); err != nil {
		t.Fatal(err)
	}
	url := "file://" + filepath.Join(dir, "report.html")

	dom := headless(t, bin, url, "--dump-dom")
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

	shot := filepath.Join(dir, "shot.png")
	headless(t, bin, url, "--screenshot="+shot)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	colors, inked, blue, orange := pixelStats(img)
	b := img.Bounds()
	total := b.Dx() * b.Dy()
	t.Logf("screenshot %dx%d: %d colours, %.1f%% non-background, %d series-blue and %d series-orange pixels", b.Dx(), b.Dy(), colors, 100*float64(inked)/float64(total), blue, orange)
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

// pixelStats counts distinct colours, pixels that differ from the page
// backgrounds, and pixels of the first two series colours (#4e79a7,
// #f28e2b, within anti-aliasing tolerance).
func pixelStats(img image.Image) (colors, inked, blue, orange int) {
	seen := map[uint32]bool{}
	near := func(r, g, b uint32, R, G, B int) bool {
		d := func(a uint32, b int) int {
			x := int(a>>8) - b
			if x < 0 {
				return -x
			}
			return x
		}
		return d(r, R) < 24 && d(g, G) < 24 && d(b, B) < 24
	}
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			seen[(r>>8)<<16|(g>>8)<<8|b>>8] = true
			if !near(r, g, b, 0xf5, 0xf7, 0xfa) && !near(r, g, b, 0xff, 0xff, 0xff) {
				inked++
			}
			if near(r, g, b, 0x4e, 0x79, 0xa7) {
				blue++
			}
			if near(r, g, b, 0xf2, 0x8e, 0x2b) {
				orange++
			}
		}
	}
	return len(seen), inked, blue, orange
}
