// Package chromiumtest loads benchrun's HTML pages in a real browser for
// tests: headless Chromium (Debian's package), offline, in a process group
// of its own that is killed whole if it overruns.
package chromiumtest

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// Find returns the browser, or skips the test (fails it under CI) when
// none is installed; what names the page, for the message.
func Find(t testing.TB, what string) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is not installed (CI is set): apt-get install -y chromium")
	}
	t.Skip("chromium is not installed: apt-get install -y chromium (Debian) to render " + what)
	return ""
}

// Run runs one headless Chromium command on a file:// URL (a 1200 × 2000
// window unless extra sets another) and returns its stdout and its log,
// where --enable-logging=stderr puts the page's console messages.
func Run(t testing.TB, bin, url string, extra ...string) (stdout, log []byte) {
	t.Helper()
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), "--window-size=1200,2000"}, extra...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(args, url)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", extra, err, errOut.Bytes())
	}
	return out.Bytes(), errOut.Bytes()
}

// DOM is the page as the browser rendered it (--dump-dom), and the lines
// of its log that are console messages or script errors: a page that
// logs none has none.
func DOM(t testing.TB, bin, url string, extra ...string) (dom []byte, consoleErrors []string) {
	t.Helper()
	dom, log := Run(t, bin, url, append([]string{"--dump-dom", "--enable-logging=stderr", "--v=0"}, extra...)...)
	for _, l := range bytes.Split(log, []byte("\n")) {
		if bytes.Contains(l, []byte("CONSOLE")) || bytes.Contains(l, []byte("Uncaught")) || bytes.Contains(l, []byte("error on line")) {
			consoleErrors = append(consoleErrors, string(l))
		}
	}
	return dom, consoleErrors
}

// Screenshot renders the page and decodes the PNG.
func Screenshot(t testing.TB, bin, url string, extra ...string) image.Image {
	t.Helper()
	shot := filepath.Join(t.TempDir(), "shot.png")
	Run(t, bin, url, append([]string{"--screenshot=" + shot}, extra...)...)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// Pixels is what a screenshot shows.
type Pixels struct {
	// Colours counts the distinct colours; Inked the pixels that differ
	// from the page backgrounds (white, #f5f7fa).
	Colours, Inked, Total int
	// Near counts, per colour asked for, the pixels within anti-aliasing
	// tolerance of it.
	Near []int
}

// Count reads a screenshot's pixels, counting those near each of colours
// (RGB, 0-255).
func Count(img image.Image, colours ...[3]int) Pixels {
	near := func(r, g, b uint32, c [3]int) bool {
		d := func(a uint32, b int) bool { x := int(a>>8) - b; return x > -24 && x < 24 }
		return d(r, c[0]) && d(g, c[1]) && d(b, c[2])
	}
	seen := map[uint32]bool{}
	px := Pixels{Near: make([]int, len(colours))}
	bounds := img.Bounds()
	px.Total = bounds.Dx() * bounds.Dy()
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			seen[(r>>8)<<16|(g>>8)<<8|b>>8] = true
			if !near(r, g, b, [3]int{0xf5, 0xf7, 0xfa}) && !near(r, g, b, [3]int{0xff, 0xff, 0xff}) {
				px.Inked++
			}
			for i, c := range colours {
				if near(r, g, b, c) {
					px.Near[i]++
				}
			}
		}
	}
	px.Colours = len(seen)
	return px
}

// The first series colours of internal/chart's palette.
var (
	Blue   = [3]int{0x4e, 0x79, 0xa7}
	Orange = [3]int{0xf2, 0x8e, 0x2b}
	Red    = [3]int{0xe1, 0x57, 0x59}
)
