package main

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/regress"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/rundir"
	"github.com/benchrun/benchrun/sinks/parquet"
)

// writeSyntheticRun writes a run directory in the hive layout under root:
// a manifest with the status and the cells as a Parquet part file.
func writeSyntheticRun(t *testing.T, root, plan string, at time.Time, status string, cells []results.Cell) string {
	t.Helper()
	id := at.UTC().Format("20060102T150405Z") + "-abcdef"
	dir := filepath.Join(root, "plan="+plan, "date="+at.UTC().Format(time.DateOnly), "run="+id)
	if err := os.MkdirAll(filepath.Join(dir, results.TableCells), 0o755); err != nil {
		t.Fatal(err)
	}
	fin := at.Add(time.Minute)
	code := 0
	switch status {
	case rundir.RunOK:
	case failedInfra:
		status, code = rundir.RunFailed, 3
	default:
		code = 1 // failed its own checks
	}
	m := rundir.Manifest{RunID: id, Plan: plan, StartedAt: at, FinishedAt: &fin, Status: status, ExitCode: &code}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, rundir.ManifestFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	for i := range cells {
		cells[i].RunID, cells[i].Plan, cells[i].Attempt, cells[i].StartedAt = id, plan, 1, at
	}
	if err := parquet.WriteFile(filepath.Join(dir, results.TableCells, "part-001-00001.parquet"), cells); err != nil {
		t.Fatal(err)
	}
	return id
}

// failedInfra is a status for writeSyntheticRun: a run that failed
// without measuring (exit 3).
const failedInfra = "failed-infra"

func syntheticCell(id string, ttft, tput float64) results.Cell {
	return results.Cell{
		Stage: "sweep", CellID: id, Endpoint: "completions", Engine: "vllm", EngineVersion: "0.11.0",
		Hardware: "linux/amd64, 1× H200", Concurrency: 4, Requests: 64, Completed: 64, Status: results.StatusOK,
		TTFTP50Ms: results.Some(ttft), OutputTokS: results.Some(tput),
	}
}

// TestHistoryCommand runs `benchrun history` over 40 synthetic nightly
// runs of two cells: TTFT p50 of one cell rises 20% from run 20 on; a run
// that failed without measuring and an error cell are left out and
// counted; the night it got slower failed its own checks (exit 1): it is
// shown, marked, and --hide-failed leaves it out.
func TestHistoryCommand(t *testing.T) {
	root := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	noisy := func(x float64) float64 { return x * math.Exp(0.02*rng.NormFloat64()) }
	start := time.Date(2026, 10, 1, 2, 0, 0, 0, time.UTC)
	var ids []string
	for i := range 40 {
		ttft := 40.0
		if i >= 20 {
			ttft = 48
		}
		cells := []results.Cell{syntheticCell("sweep/128:128/c4", noisy(ttft), noisy(450)), syntheticCell("sweep/2048:128/c4", noisy(90), noisy(300))}
		status := rundir.RunOK
		switch i {
		case 7:
			status = failedInfra
			cells[0].TTFTP50Ms = results.Some(999.0) // must not show
		case 20:
			status = rundir.RunFailed // the night it got slower: its checks failed
		case 11:
			cells[1].Status, cells[1].Reason = results.StatusError, "3 of 64 requests failed"
		case 13:
			cells[1].OutputTokS = nil // NULL: skipped, never 0
		}
		ids = append(ids, writeSyntheticRun(t, root, "nightly", start.AddDate(0, 0, i), status, cells))
	}
	// A run of another plan, which --plan leaves out.
	writeSyntheticRun(t, root, "other", start, rundir.RunOK, []results.Cell{syntheticCell("sweep/128:128/c4", 1, 1)})

	page := filepath.Join(t.TempDir(), "history.html")
	var out, errb bytes.Buffer
	code := benchrunMain([]string{"history", root, "--plan", "nightly", "--metric", "ttft_p50_ms,output_tok_s", "--html", page}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	text := out.String()
	for _, want := range []string{
		"39 runs under " + root + ", 1 of them failed their own checks (✗; a value their baseline check called regressed: !) (left out: 1 run failed)",
		ids[20] + " ✗",
		"sweep/128:128/c4 · plan nightly · vllm 0.11.0 · completions",
		"started               run                        ttft_p50_ms ↓  output_tok_s ↑",
		"◆ ttft_p50_ms changed at run " + ids[20] + " (2026-10-21T02:00:00Z): ",
		"left out: 1 cell error, 1 not measured",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("stdout lacks %q:\n%s", want, text)
		}
	}
	if !regexp.MustCompile(`ms \(\+(1[5-9]|2[0-5])\.[0-9]%, worse\), p=`).MatchString(text) {
		t.Errorf("the change point does not say +15..25%%, worse:\n%s", text)
	}
	if regexp.MustCompile(`\s999\s`).MatchString(text) {
		t.Error("the failed run's value is in the history")
	}
	// The change point is marked on run 20's row of the first cell, and
	// nowhere else: the other cell and the throughputs did not change.
	if n := strings.Count(text, "◆ "); n != 2 { // the legend's "(◆)" has no space after it
		t.Errorf("%d change-point marks, want 2 (the row and its line):\n%s", n, text)
	}
	if !regexp.MustCompile(`(?m)^  2026-10-21T02:00:00Z  ` + ids[20] + ` ✗  4[0-9.]+ ◆ `).MatchString(text) {
		t.Errorf("run 20's row is not marked:\n%s", text)
	}

	// --hide-failed: the night that failed its checks is left out.
	var hidden, herr bytes.Buffer
	if code := benchrunMain([]string{"history", root, "--plan", "nightly", "--metric", "ttft_p50_ms", "--hide-failed"}, &hidden, &herr); code != 0 {
		t.Fatalf("--hide-failed: exit %d: %s", code, herr.String())
	}
	if h := hidden.String(); strings.Contains(h, ids[20]) || !strings.Contains(h, "38 runs under "+root+" (left out: 2 run failed)") {
		t.Errorf("--hide-failed shows the failed night or counts wrong:\n%s", h)
	}

	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	html := string(b)
	if n := strings.Count(html, "<svg "); n != 2 {
		t.Errorf("%d charts, want one per metric (2)", n)
	}
	if !strings.Contains(html, `<circle class="mark"`) || !strings.Contains(html, "<h2>ttft_p50_ms</h2>") {
		t.Error("the page marks no change point or lacks the ttft_p50_ms chart")
	}
	for _, bad := range []string{"http", "<script", "src="} {
		if strings.Contains(html, bad) {
			t.Errorf("the page holds %q: not self-contained", bad)
		}
	}

	// CSV: one row per point, the change point flagged.
	out.Reset()
	if code := benchrunMain([]string{"history", filepath.Join(root, "plan=nightly"), "--metric", "ttft_p50_ms", "--format", "csv"}, &out, &errb); code != 0 {
		t.Fatalf("csv: exit %d: %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 1+39+38 { // header, cell 1 (39 runs), cell 2 (38: one error)
		t.Errorf("%d CSV lines, want 78", len(lines))
	}
	if !regexp.MustCompile(","+ids[20]+`,2026-10-21T02:00:00Z,[0-9.]+,true,[0-9.e-]+,[0-9.e-]+,true,false`).MatchString(out.String()) || strings.Count(out.String(), ",false,,,") != 76 { // every other row: no change point
		t.Errorf("CSV change point row:\n%s", out.String())
	}

	// Bad arguments exit 2.
	for _, args := range [][]string{
		{"history"},
		{"history", root, "--metric", "ttft_p95"},
		{"history", root, "--plan", "nope"},
		{"history", filepath.Join(root, "missing")},
		{"history", root, "--format", "xml"},
	} {
		errb.Reset()
		if code := benchrunMain(args, &out, &errb); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errb.String())
		}
	}
	if code := benchrunMain([]string{"history", root, "--plan", "nope"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "no runs of plan nope under") {
		t.Errorf("no runs: %s", errb.String())
	}
}

// TestHistoryMarksRegressedNights: on the page's chart, a night whose
// baseline check called a value regressed is crossed where its value is
// drawn, with a tip that names it; a change point keeps its ring, and a
// night that failed without calling that metric regressed is not crossed.
func TestHistoryMarksRegressedNights(t *testing.T) {
	root := t.TempDir()
	start := time.Date(2026, 10, 1, 2, 0, 0, 0, time.UTC)
	var ids []string
	for i := range 12 {
		ttft := 40.0 + float64(i%3)
		if i >= 6 {
			ttft = 60 + float64(i%3)
		}
		status := rundir.RunOK
		if i == 6 || i == 9 {
			status = rundir.RunFailed // checks failed: night 6 on ttft_p50_ms, night 9 on output_tok_s
		}
		at := start.AddDate(0, 0, i)
		id := writeSyntheticRun(t, root, "nightly", at, status, []results.Cell{syntheticCell("sweep/128:128/c4", ttft, 450)})
		ids = append(ids, id)
		if status == rundir.RunFailed {
			metric := map[int]string{6: "ttft_p50_ms", 9: "output_tok_s"}[i]
			dir := filepath.Join(root, "plan=nightly", "date="+at.Format(time.DateOnly), "run="+id)
			vs := []results.Verdict{{RunID: id, Plan: "nightly", Stage: "sweep", CellID: "sweep/128:128/c4", Attempt: 1, JudgedAt: at.Add(time.Minute),
				Level: regress.LevelRegression, Name: metric, Outcome: string(regress.Regressed)}}
			if err := os.MkdirAll(filepath.Join(dir, results.TableAssertions), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := parquet.WriteFile(filepath.Join(dir, results.TableAssertions, "part-001-00001.parquet"), vs); err != nil {
				t.Fatal(err)
			}
		}
	}
	page := filepath.Join(t.TempDir(), "history.html")
	var out, errb bytes.Buffer
	if code := benchrunMain([]string{"history", root, "--metric", "ttft_p50_ms", "--window", "12", "--html", page}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !regexp.MustCompile(`(?m)^  2026-10-07T02:00:00Z  ` + ids[6] + ` ✗  6[0-9.]+ ! ◆$`).MatchString(out.String()) {
		t.Errorf("night 6's row is not marked regressed and a change point:\n%s", out.String())
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	html := string(b)
	crosses := regexp.MustCompile(`<path class="mark alert" d="M([0-9.]+) ([0-9.]+) l10 10 M[0-9.]+ [0-9.]+ l-10 10"[^>]*><title>([^<]*)</title>`).FindAllStringSubmatch(html, -1)
	if len(crosses) != 1 {
		t.Fatalf("%d crossed nights, want 1 (night 6's ttft_p50_ms):\n%s", len(crosses), html)
	}
	if want := "sweep/128:128/c4 ttft_p50_ms regressed at run " + ids[6] + " (2026-10-07T02:00:00Z): "; !strings.HasPrefix(crosses[0][3], want) {
		t.Errorf("cross tip %q, want it to start %q", crosses[0][3], want)
	}
	// The cross is centred on night 6's marker.
	marker := regexp.MustCompile(`<circle cx="([0-9.]+)" cy="([0-9.]+)"[^>]*><title>sweep/128:128/c4 ` + ids[6] + `: `).FindStringSubmatch(html)
	if marker == nil {
		t.Fatal("no marker for night 6")
	}
	f := func(s string) float64 { v, _ := strconv.ParseFloat(s, 64); return v }
	if math.Abs(f(crosses[0][1])+5-f(marker[1])) > 0.11 || math.Abs(f(crosses[0][2])+5-f(marker[2])) > 0.11 {
		t.Errorf("cross at (%s+5, %s+5), night 6's marker at (%s, %s)", crosses[0][1], crosses[0][2], marker[1], marker[2])
	}
	if n := strings.Count(html, `<circle class="mark"`); n != 1 {
		t.Errorf("%d change-point rings, want 1", n)
	}
}
