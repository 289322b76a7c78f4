package main

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
)

// cmpChromium finds the browser, or skips (fails under CI) when it is
// missing. (sinks/report's test has the same helpers; a test file is not
// importable, so the few lines are copied.)
func cmpChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is not installed (CI is set): apt-get install -y chromium")
	}
	t.Skip("chromium is not installed: apt-get install -y chromium (Debian) to render the compare page")
	return ""
}

// cmpHeadless runs one headless Chromium command on a file:// URL,
// offline, in its own process group, killed whole if it overruns; it
// returns stdout and the browser's log (stderr), where
// --enable-logging=stderr puts the page's console messages.
func cmpHeadless(t *testing.T, bin, url string, extra ...string) ([]byte, []byte) {
	t.Helper()
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), "--window-size=1600,1800"}, extra...)
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

// TestComparePageInChromium loads the page of `benchrun compare A B C
// --html` in headless Chromium: it logs no console error, the rendered DOM
// has the four charts with every variant's lines, the front's rings and
// the verdict tables, and the screenshot is a page with the variants'
// colours on it, not a blank or an error page.
func TestComparePageInChromium(t *testing.T) {
	bin := cmpChromium(t)
	root := t.TempDir()
	start := time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC)
	var dirs []string
	for i, v := range []cmpVariant{cmpA, cmpB, cmpC} {
		d := filepath.Join(root, []string{"vllm", "sglang", "llama.cpp"}[i])
		writeCmpRuns(t, d, start.AddDate(0, 0, 10*i), v, nil)
		dirs = append(dirs, d)
	}
	page := filepath.Join(t.TempDir(), "compare.html")
	var out, errb bytes.Buffer
	if code := benchrunMain(append(append([]string{"compare"}, dirs...), "--html", page), &out, &errb); code != 1 {
		t.Fatalf("exit %d, want 1: %s", code, errb.String())
	}
	url := "file://" + page
	dom, log := cmpHeadless(t, bin, url, "--dump-dom", "--enable-logging=stderr", "--v=0")
	for _, l := range bytes.Split(log, []byte("\n")) {
		if bytes.Contains(l, []byte("CONSOLE")) || bytes.Contains(l, []byte("Uncaught")) || bytes.Contains(l, []byte("error on line")) {
			t.Errorf("console: %s", l)
		}
	}
	count := func(re string) int { return len(regexp.MustCompile(re).FindAll(dom, -1)) }
	if n := count(`<svg[ >]`); n != 4 {
		t.Errorf("rendered DOM has %d charts, want 4", n)
	}
	// Two trade-off charts of 3 curves and the front, two per-load charts
	// of 3 × (p50, p99); the front's 7 points ringed on both trade-offs.
	if n := count(`<path class="series"`); n != 2*4+2*6 {
		t.Errorf("rendered DOM has %d lines, want 20", n)
	}
	if n := count(`<circle class="mark ring"`); n != 14 {
		t.Errorf("rendered DOM has %d front rings, want 14", n)
	}
	if n := count(`<table class="v">`); n != 2*len(cmpLoads) {
		t.Errorf("rendered DOM has %d verdict tables, want one a cell and comparison (8)", n)
	}

	shot := filepath.Join(t.TempDir(), "shot.png")
	cmpHeadless(t, bin, url, "--screenshot="+shot)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	inked, per := cmpPixelStats(img)
	b := img.Bounds()
	t.Logf("screenshot %dx%d: %.1f%% non-background; variant colour pixels %v", b.Dx(), b.Dy(), 100*float64(inked)/float64(b.Dx()*b.Dy()), per)
	if frac := float64(inked) / float64(b.Dx()*b.Dy()); frac < 0.02 {
		t.Errorf("only %.1f%% of the screenshot differs from the background: blank", 100*frac)
	}
	for i, n := range per {
		if n < 300 {
			t.Errorf("variant %d's colour barely appears (%d pixels): its curves are not drawn", i, n)
		}
	}
}

// cmpPixelStats counts the pixels that differ from white and those of
// the first three series colours (#4e79a7, #f28e2b, #e15759, within
// anti-aliasing tolerance).
func cmpPixelStats(img image.Image) (inked int, per [3]int) {
	colours := [3][3]int{{0x4e, 0x79, 0xa7}, {0xf2, 0x8e, 0x2b}, {0xe1, 0x57, 0x59}}
	near := func(a uint32, b int) bool { d := int(a>>8) - b; return d > -24 && d < 24 }
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			if !near(r, 0xff) || !near(g, 0xff) || !near(b, 0xff) {
				inked++
			}
			for i, c := range colours {
				if near(r, c[0]) && near(g, c[1]) && near(b, c[2]) {
					per[i]++
				}
			}
		}
	}
	return inked, per
}
