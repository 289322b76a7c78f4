// Package e2e drives the real benchrun binary over real HTTP against its
// own simulator, started by the plan's launch stage, and reads back what
// it wrote. The simulator runs in fixed mode, so its latencies are the
// ground truth the measurements are checked against.
package e2e

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/machine"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/results/resultstest"
	"github.com/benchrun/benchrun/internal/testbin"
)

var binary string

func TestMain(m *testing.M) { testbin.Main(m, &binary) }

type runResult struct {
	code   int
	stdout string
	stderr string
	out    string // --out directory
}

// run executes benchrun with args plus --out in a fresh directory.
func run(t *testing.T, ctx context.Context, args ...string) runResult {
	t.Helper()
	out := t.TempDir()
	cmd := exec.CommandContext(ctx, binary, append(args, "--out", out)...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running benchrun: %v", err)
	}
	return runResult{code: code, stdout: so.String(), stderr: se.String(), out: out}
}

// uniqueModel names the simulator's model uniquely, so the test can find
// its process (or prove it is gone) by command line.
func uniqueModel() string { return fmt.Sprintf("sim-e2e-%08x", rand.Uint32()) }

// processesWith returns the pids whose command line contains s.
func processesWith(s string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if strings.Contains(string(b), s) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func waitGone(t *testing.T, marker string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if len(processesWith(marker)) == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	pids := processesWith(marker)
	for _, p := range pids {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	t.Fatalf("processes outlived benchrun: %v", pids)
}

func parseCSV(t *testing.T, s string) []map[string]string {
	t.Helper()
	recs, err := csv.NewReader(strings.NewReader(s)).ReadAll()
	if err != nil {
		t.Fatalf("stdout is not CSV: %v\n%s", err, s)
	}
	if len(recs) < 1 {
		t.Fatalf("no CSV header on stdout")
	}
	var rows []map[string]string
	for _, r := range recs[1:] {
		m := map[string]string{}
		for i, h := range recs[0] {
			m[h] = r[i]
		}
		rows = append(rows, m)
	}
	return rows
}

// currentRows keeps each cell's current row: its last measurement. A cell
// that a latency check left inconclusive on a busy machine is measured
// once more (baseline confirm), and stdout shows both rows; the checks
// judge the second.
func currentRows(t *testing.T, rows []map[string]string) []map[string]string {
	t.Helper()
	var out []map[string]string
	at := map[string]int{}
	for _, r := range rows {
		k := r["isl"] + ":" + r["osl"] + "/" + r["concurrency"]
		i, seen := at[k]
		if !seen {
			at[k] = len(out)
			out = append(out, r)
			continue
		}
		if r["measurement"] <= out[i]["measurement"] || !strings.Contains(r["notes"], "measured once more") {
			t.Errorf("a second row of %s that is no confirmation: %v", k, r)
		}
		out[i] = r
	}
	return out
}

func num(t *testing.T, row map[string]string, col string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(row[col], 64)
	if err != nil {
		t.Fatalf("column %s = %q: %v", col, row[col], err)
	}
	return v
}

func runDir(t *testing.T, out string) string {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(out, "plan=e2e", "date=*", "run=*"))
	if len(dirs) != 1 {
		t.Fatalf("want one run directory under %s, got %v", out, dirs)
	}
	return dirs[0]
}

// TestQuickstartShape runs the quickstart's shape end to end and checks the
// numbers against the simulator's configured latencies (20 ms to the first
// token, 5 ms between tokens), then reads the Parquet files back.
func TestEndToEnd(t *testing.T) {
	model := uniqueModel()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	r := run(t, ctx, "testdata/e2e.cue", "-t", "model="+model)
	if r.code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", r.code, r.stderr)
	}
	waitGone(t, model)

	rows := currentRows(t, parseCSV(t, r.stdout))
	if len(rows) != 4 {
		t.Fatalf("want 4 cells (2 shapes × 2 concurrency levels), got %d:\n%s", len(rows), r.stdout)
	}
	for _, col := range []string{"isl", "osl", "concurrency", "first_call_ms", "ttft_ms", "prefill_tok_s", "itl_p50_ms", "itl_p99_ms", "decode_tok_s", "speedup_vs_c1", "batching_efficiency", "status", "reason", "notes"} {
		if _, ok := rows[0][col]; !ok {
			t.Errorf("CSV lacks column %s", col)
		}
	}
	// The rows as stored: each carries how late the machine ran during
	// it (machine_late_p99_ms), and every timing bound below widens by
	// what that lateness could do to its metric (machine.Allowance), as
	// the verdicts do: a check the machine could explain is not failed.
	stored := map[string]results.Cell{}
	{
		parts, _ := filepath.Glob(filepath.Join(runDir(t, r.out), "cells", "*.parquet"))
		for _, p := range parts {
			cs, err := resultstest.ReadFile[results.Cell](p)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range cs {
				stored[fmt.Sprintf("%d/%d", c.ISL, c.Concurrency)] = c
			}
		}
	}
	allow := func(row map[string]string, metric string) machine.Bound {
		c, ok := stored[row["isl"]+"/"+row["concurrency"]]
		if !ok {
			t.Fatalf("no stored row for %s/%s", row["isl"], row["concurrency"])
		}
		return machine.Allowance(metric, &c, machine.Late(&c))
	}
	wantOrder := [][2]string{{"64", "1"}, {"64", "4"}, {"256", "1"}, {"256", "4"}}
	for i, row := range rows {
		if row["isl"] != wantOrder[i][0] || row["concurrency"] != wantOrder[i][1] || row["osl"] != "32" {
			t.Errorf("row %d is %s:%s c=%s, want %s:32 c=%s", i, row["isl"], row["osl"], row["concurrency"], wantOrder[i][0], wantOrder[i][1])
		}
		if row["status"] != "ok" {
			t.Errorf("row %d status %q reason %q", i, row["status"], row["reason"])
		}
		// Ground truth: ttft 20 ms, gap 5 ms. The client adds loopback and
		// scheduling delay, never removes time: allow 0 below, a few ms above.
		if v, b := num(t, row, "ttft_ms"), allow(row, "ttft_ms"); v < 20-b.Up || v > 26+b.Down {
			t.Errorf("row %d ttft_ms = %.3f, want within [20, 26] and the machine's allowance %+v (simulator: 20)", i, v, b)
		}
		// A late write shortens the gap after it, so on a busy machine the
		// median gap can sit below 5 ms; tpot (checked from Parquet below)
		// spans a whole request and is the tight check.
		if v, b := num(t, row, "itl_p50_ms"), allow(row, "itl_p50_ms"); v < 3-b.Up || v > 7+b.Down {
			t.Errorf("row %d itl_p50_ms = %.3f, want within [3, 7] and the machine's allowance %+v (simulator: 5)", i, v, b)
		}
		// 32 tokens: e2el = 20 + 31*5 = 175 ms; decode rate per session = 32/0.175.
		perSession := 32 / 0.175
		c := num(t, row, "concurrency")
		if v, b := num(t, row, "decode_tok_s"), allow(row, "decode_tok_s"); v < 0.75*perSession*c-b.Up || v > 1.02*perSession*c+b.Down {
			t.Errorf("row %d decode_tok_s = %.1f, want about %.1f (the machine's allowance %+v)", i, v, perSession*c, b)
		}
		if c == 4 {
			// speedup = decode_tok_s at c=4 over c=1: each may read low by
			// its allowance, so the true ratio lies within
			// [d4/(d1+a1), (d4+a4)/d1]; that range must meet [3, 4.2].
			c1 := map[string]string{"isl": row["isl"], "concurrency": "1"}
			d4, d1 := num(t, row, "decode_tok_s"), results.ValueOr(stored[row["isl"]+"/1"].DecodeTokS, 0)
			a4, a1 := allow(row, "decode_tok_s").Up, allow(c1, "decode_tok_s").Up
			lo, hi := 0.0, math.Inf(1)
			if d1 > 0 {
				lo, hi = d4/(d1+a1), (d4+a4)/d1
			}
			if v := num(t, row, "speedup_vs_c1"); hi < 3 || lo > 4.2 {
				t.Errorf("row %d speedup_vs_c1 = %.2f, want about 4: what the machine allowed puts it within [%.2f, %.2f], not [3, 4.2] (fixed-mode sim does not slow down with load)", i, v, lo, hi)
			}
		}
	}

	// The run directory: resolved plan, manifest, one Parquet part per cell.
	dir := runDir(t, r.out)
	for _, f := range []string{"plan.cue", "plan.json", "manifest.json", "cells.csv", "server.log"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("run directory lacks %s: %v", f, err)
		}
	}
	var man struct {
		Status   string `json:"status"`
		ExitCode *int   `json:"exit_code"`
		Engines  []struct {
			Stage, Engine, Version string
		} `json:"engines"`
	}
	b, _ := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err := json.Unmarshal(b, &man); err != nil || man.Status != "ok" || man.ExitCode == nil || *man.ExitCode != 0 {
		t.Errorf("manifest status %q exit %v (%v)", man.Status, man.ExitCode, err)
	}
	// The engine and the version the server reported, in the manifest.
	if len(man.Engines) != 1 || man.Engines[0].Engine != "sim" || man.Engines[0].Version != "benchrun-sim" {
		t.Errorf("manifest engines %+v, want the simulator and its /version", man.Engines)
	}
	parts, _ := filepath.Glob(filepath.Join(dir, "cells", "*.parquet"))
	if len(parts) != 4 {
		t.Fatalf("want 4 cell part files, got %v", parts)
	}
	byKey := map[string]results.Cell{}
	for _, p := range parts {
		cells, err := resultstest.ReadFile[results.Cell](p)
		if err != nil {
			t.Fatal(err)
		}
		if len(cells) != 1 {
			t.Fatalf("%s holds %d rows, want 1", p, len(cells))
		}
		c := cells[0]
		byKey[fmt.Sprintf("%d/%d", c.ISL, c.Concurrency)] = c
		if c.Plan != "e2e" || c.Model != model || c.Metadata["suite"] != "e2e" || c.RunID == "" {
			t.Errorf("identity columns: plan %q model %q metadata %v run %q", c.Plan, c.Model, c.Metadata, c.RunID)
		}
	}
	for i, row := range rows {
		c, ok := byKey[row["isl"]+"/"+row["concurrency"]]
		if !ok {
			t.Fatalf("row %d has no Parquet counterpart", i)
		}
		if got := strconv.FormatFloat(results.ValueOr(c.TTFTMs, -1), 'g', 8, 64); got != row["ttft_ms"] {
			t.Errorf("row %d: Parquet ttft_ms %s, CSV %s", i, got, row["ttft_ms"])
		}
		if got := strconv.FormatFloat(results.ValueOr(c.ITLP99Ms, -1), 'g', 8, 64); got != row["itl_p99_ms"] {
			t.Errorf("row %d: Parquet itl_p99_ms %s, CSV %s", i, got, row["itl_p99_ms"])
		}
		// tpot = (e2el - ttft)/(N_out - 1): 31 gaps of 5 ms, whatever the jitter between.
		if tpot, b := results.ValueOr(c.TPOTMs, -1), machine.Allowance("tpot_ms", &c, machine.Late(&c)); tpot < 4.9-b.Up || tpot > 5.6+b.Down {
			t.Errorf("row %d: tpot_ms %.3f, want within [4.9, 5.6] and the machine's allowance %+v (simulator: 5)", i, tpot, b)
		}
		if c.Completed != 8 || c.Failed != 0 {
			t.Errorf("row %d: completed %d failed %d, want 8 and 0", i, c.Completed, c.Failed)
		}
	}
	reqParts, _ := filepath.Glob(filepath.Join(dir, "requests", "*.parquet"))
	var nreq int
	for _, p := range reqParts {
		reqs, err := resultstest.ReadFile[results.Request](p)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range reqs {
			if q.OutputTokens != 32 || q.InputTokens != int64(q.InputTokens) || len(q.ChunkGapsMs) != 31 {
				t.Errorf("request row %+v: want 32 output tokens and 31 gaps", q)
				break
			}
		}
		nreq += len(reqs)
	}
	if nreq != 32 {
		t.Errorf("want 32 request rows (4 points × 8), got %d", nreq)
	}
}

// TestAssertionFailureExits1: an assertion that cannot hold fails the run
// with exit 1, naming the assertion, the cell and the values.
func TestAssertionFailureExits1(t *testing.T) {
	model := uniqueModel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r := run(t, ctx, "testdata/e2e.cue", "-t", "model="+model, "-t", "requests=4", "-t", "assert=ttft_ms < 1")
	waitGone(t, model)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s", r.code, r.stderr)
	}
	for _, want := range []string{`"ttft_ms < 1"`, "sweep 64:32 c=1", "ttft_ms="} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if rows := currentRows(t, parseCSV(t, r.stdout)); len(rows) != 4 {
		t.Errorf("a failing assertion must not stop the sweep: got %d cells", len(rows))
	}
}

// TestBrokenPlanExits2: a plan error prints file:line:col and exits 2.
func TestBrokenPlanExits2(t *testing.T) {
	dir := t.TempDir()
	plan := filepath.Join(dir, "broken.cue")
	src := "name: \"broken\"\nstages: {\n\tsweep: {\n\t\tkind: \"sweep\"\n\t\ttarget: \"http://127.0.0.1:1\"\n\t\tconcurrency: [0]\n\t}\n}\n"
	if err := os.WriteFile(plan, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := run(t, ctx, plan)
	if r.code != 2 {
		t.Fatalf("exit %d, want 2\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, plan+":6:") {
		t.Errorf("stderr does not point at %s:6: (concurrency: [0])\n%s", plan, r.stderr)
	}
	if r.stdout != "" {
		t.Errorf("stdout must stay empty on a plan error, got %q", r.stdout)
	}
	// vet says the same without running.
	v := exec.CommandContext(ctx, binary, "vet", plan)
	out, err := v.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), plan+":6:") {
		t.Errorf("vet: %v\n%s", err, out)
	}
}

// TestInterruptStopsSimulator: SIGINT mid-sweep stops the run with exit
// 130, keeps the finished cells, and leaves no simulator behind.
func TestInterruptStopsSimulator(t *testing.T) {
	model := uniqueModel()
	out := t.TempDir()
	cmd := exec.Command(binary, "testdata/e2e.cue", "-t", "model="+model, "-t", "requests=40", "--out", out)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait for the first finished cell, then interrupt mid-sweep.
	deadline := time.Now().Add(30 * time.Second)
	for strings.Count(so.String(), "\n") < 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if len(processesWith(model)) == 0 {
		t.Fatal("the simulator is not running mid-sweep; the test cannot tell anything")
	}
	_ = cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 130 {
			t.Errorf("exit: %v, want 130\n%s", err, se.String())
		}
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("benchrun did not stop within 20 s of SIGINT\n%s", se.String())
	}
	waitGone(t, model)
	dir := runDir(t, out)
	parts, _ := filepath.Glob(filepath.Join(dir, "cells", "*.parquet"))
	if len(parts) < 1 {
		t.Errorf("finished cells were lost: %v", parts)
	}
	for _, p := range parts {
		if _, err := resultstest.ReadFile[results.Cell](p); err != nil {
			t.Errorf("part %s unreadable after interrupt: %v", p, err)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if !strings.Contains(string(b), `"status": "interrupted"`) {
		t.Errorf("manifest does not say interrupted:\n%s", b)
	}
}
