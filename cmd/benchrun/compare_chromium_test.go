package main

import (
	"bytes"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/chromiumtest"
)

// TestComparePageInChromium loads the page of `benchrun compare A B C
// --html` in headless Chromium: it logs no console error, the rendered DOM
// has the four charts with every variant's lines, the front's rings and
// the verdict tables, and the screenshot is a page with the variants'
// colours on it, not a blank or an error page.
func TestComparePageInChromium(t *testing.T) {
	bin := chromiumtest.Find(t, "the compare page")
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
	dom, console := chromiumtest.DOM(t, bin, url, "--window-size=1600,1800")
	for _, l := range console {
		t.Errorf("console: %s", l)
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

	px := chromiumtest.Count(chromiumtest.Screenshot(t, bin, url, "--window-size=1600,1800"), chromiumtest.Blue, chromiumtest.Orange, chromiumtest.Red)
	inked, per := px.Inked, px.Near
	t.Logf("screenshot: %.1f%% non-background; variant colour pixels %v", 100*float64(inked)/float64(px.Total), per)
	if frac := float64(inked) / float64(px.Total); frac < 0.02 {
		t.Errorf("only %.1f%% of the screenshot differs from the background: blank", 100*frac)
	}
	for i, n := range per {
		if n < 300 {
			t.Errorf("variant %d's colour barely appears (%d pixels): its curves are not drawn", i, n)
		}
	}
}
