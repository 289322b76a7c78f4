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
	return stdout.Bytes()
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
