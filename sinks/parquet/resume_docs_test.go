package parquet_test

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// interruptPlan is a sweep whose second cell is long enough to be
// interrupted in the middle: 4 requests of 30 tokens at 20 ms a token.
// Every cell must be ok, so an attempt's interrupted and skipped rows fail
// an assertion.
const interruptPlan = `name: "resumed"
model: {name: "sim-llama"}
metadata: {quant: "Q8_0"}
stages: {
	server: {
		kind: "launch"
		engine: "sim"
		cmd: ["benchrun", "sim", "--addr", "127.0.0.1:${port}", "--model", model.name, "--mode", "fixed", "--ttft", "2ms", "--itl", "20ms"]
	}
	health: {kind: "health", target: "server"}
	sweep: {
		kind: "sweep"
		target: "server"
		needs: ["health"]
		cells: [{isl: 16, osl: 4}, {isl: 16, osl: 30}, {isl: 32, osl: 4}]
		concurrency: [1]
		requests: 4
		warmup: 0
		assert: ["status == \"ok\""]
	}
}
`

// After a resume, the interrupted attempt's error and skipped rows, their
// requests and their failed verdicts stayed under the same cell ids, and
// the documented queries counted them: 8 request rows for a 4-request
// cell, a failure for a cell that was re-measured ok. This runs the real
// binary, interrupts it (SIGINT) in the middle of the second cell, resumes
// it, and runs every documented query over the run directory.
func TestDocumentedQueriesOnAResumedRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the benchrun binary")
	}
	bin := buildBenchrun(t)
	work := t.TempDir()
	planPath := filepath.Join(work, "resumed.cue")
	if err := os.WriteFile(planPath, []byte(interruptPlan), 0o644); err != nil {
		t.Fatal(err)
	}
	runs := filepath.Join(work, "runs")
	t.Cleanup(func() { reapChildren(t, bin) })

	// Attempt 1: interrupted once the first cell is printed.
	cmd := exec.Command(bin, planPath, "--out", runs, "--quiet", "--columns", "cell_id,status")
	cmd.Dir = work
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	first := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "sweep/") {
				select {
				case first <- sc.Text():
				default:
				}
			}
		}
	}()
	select {
	case l := <-first:
		if !strings.HasSuffix(l, ",ok") {
			t.Fatalf("first cell: %s; stderr:\n%s", l, stderr.String())
		}
	case <-time.After(45 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("no cell within 45 s; stderr:\n%s", stderr.String())
	}
	time.Sleep(400 * time.Millisecond) // into the second cell (about 2.4 s long)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil || cmd.ProcessState.ExitCode() != 130 {
		t.Fatalf("interrupted run: %v (exit %d), want exit 130; stderr:\n%s", err, cmd.ProcessState.ExitCode(), stderr.String())
	}
	dirs, _ := filepath.Glob(filepath.Join(runs, "plan=resumed", "date=*", "run=*"))
	if len(dirs) != 1 {
		t.Fatalf("run directories: %v", dirs)
	}
	runDir := dirs[0]

	// Attempt 2: the resume measures the interrupted and the skipped cell.
	out, err := exec.Command(bin, planPath, "--resume", runDir, "--columns", "cell_id,status").CombinedOutput()
	if err != nil {
		t.Fatalf("resume: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "attempt 2") {
		t.Errorf("the resume does not say which attempt it is:\n%s", out)
	}

	db := duck(t)
	reqGlob := sqlPath(filepath.Join(runs, "**", "requests", "*.parquet"))
	raw := query(t, db, `SELECT count(*) FROM read_parquet(`+reqGlob+`, union_by_name = true) WHERE cell_id = 'sweep/16:30/c1'`)
	if raw[0][0] == "4" {
		t.Fatalf("the interrupted attempt left no request rows of its cell: nothing to tell apart")
	}
	qs := docQueries(t, runs)

	t.Run("latest-cells", func(t *testing.T) {
		rows := query(t, db, qs["latest-cells"])
		want := map[string]string{"sweep/16:4/c1": "1", "sweep/16:30/c1": "2", "sweep/32:4/c1": "2"}
		if len(rows) != 3 {
			t.Fatalf("%d current rows, want one per cell: %v", len(rows), rows)
		}
		for _, r := range rows {
			if want[r[1]] != r[2] || r[3] != "ok" || r[4] != "4" {
				t.Errorf("current row %v: want attempt %s, ok, 4 requests", r, want[r[1]])
			}
		}
	})
	t.Run("superseded-rows", func(t *testing.T) {
		rows := query(t, db, qs["superseded-rows"])
		got := map[string]string{}
		for _, r := range rows {
			if r[2] != "1" {
				t.Errorf("superseded row %v: want attempt 1", r)
			}
			got[r[1]] = r[3]
		}
		if got["sweep/16:30/c1"] != "error" || got["sweep/32:4/c1"] != "skipped" || len(got) != 2 {
			t.Errorf("superseded rows %v: want the interrupted cell's error row and the skipped one", rows)
		}
	})
	t.Run("requests-join-cells", func(t *testing.T) {
		rows := query(t, db, qs["requests-join-cells"])
		if len(rows) != 3 {
			t.Fatalf("%d cells joined, want 3: %v", len(rows), rows)
		}
		for _, r := range rows {
			if r[2] != "4" || r[3] != "4" || r[4] != "4" {
				t.Errorf("cell %s: requests %s, %s request rows, %s ok; want 4 each", r[1], r[2], r[3], r[4])
			}
		}
	})
	t.Run("per-plan-cell", func(t *testing.T) {
		rows := query(t, db, qs["per-plan-cell"])
		if len(rows) != 3 {
			t.Fatalf("%d groups, want 3: %v", len(rows), rows)
		}
		for _, r := range rows {
			if r[5] != "1" {
				t.Errorf("cell %s:%s: %s runs, want 1", r[1], r[2], r[5])
			}
		}
	})
	t.Run("recompute-p99-ttft", func(t *testing.T) {
		rows := query(t, db, qs["recompute-p99-ttft"])
		if len(rows) != 3 {
			t.Fatalf("%d cells, want 3: %v", len(rows), rows)
		}
		for _, r := range rows {
			if d := atof(t, r[4]); d > 1e-6 {
				t.Errorf("%s: cell p99 %s, recomputed %s", r[1], r[2], r[3])
			}
		}
	})
	t.Run("recompute-itl", func(t *testing.T) {
		rows := query(t, db, qs["recompute-itl"])
		cellGlob := sqlPath(filepath.Join(runs, "**", "cells", "*.parquet"))
		want := map[string][2]float64{}
		for _, r := range query(t, db, `SELECT cell_id, itl_p50_ms, itl_p99_ms FROM read_parquet(`+cellGlob+`, union_by_name = true) WHERE status = 'ok'`) {
			want[r[0]] = [2]float64{atof(t, r[1]), atof(t, r[2])}
		}
		if len(rows) != 3 {
			t.Fatalf("%d cells, want 3: %v", len(rows), rows)
		}
		for _, r := range rows {
			w := want[r[1]]
			if d0, d1 := atof(t, r[2])-w[0], atof(t, r[4])-w[1]; d0*d0 > 1e-12 || d1*d1 > 1e-12 {
				t.Errorf("%s: itl p50/p99 from chunk gaps %s/%s, cell row %v", r[1], r[2], r[4], w)
			}
		}
	})
	t.Run("metadata-filter", func(t *testing.T) {
		if rows := query(t, db, qs["metadata-filter"]); len(rows) != 3 {
			t.Errorf("%d rows with quant=Q8_0, want one per cell: %v", len(rows), rows)
		}
	})
	t.Run("failed-assertions", func(t *testing.T) {
		if rows := query(t, db, qs["failed-assertions"]); len(rows) != 0 {
			t.Errorf("failed verdicts %v: every cell's current row is ok", rows)
		}
	})

	// The manifest records both attempts; benchrun's own readers agree.
	b, err := os.ReadFile(filepath.Join(runDir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Status   string `json:"status"`
		Attempts []struct {
			Attempt int    `json:"attempt"`
			Status  string `json:"status"`
		} `json:"attempts"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m.Status != "ok" || len(m.Attempts) != 2 || m.Attempts[0].Status != "interrupted" || m.Attempts[1].Status != "ok" {
		t.Errorf("manifest: status %s, attempts %+v; want ok after an interrupted and an ok attempt", m.Status, m.Attempts)
	}
	js, err := os.ReadFile(filepath.Join(runDir, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Cells []struct {
			CellID    string `json:"cell_id"`
			Attempt   int    `json:"attempt"`
			Completed int    `json:"completed"`
			Status    string `json:"status"`
		} `json:"cells"`
	}
	if err := json.Unmarshal(js, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Cells) != 3 {
		t.Errorf("result.json has %d cells, want 3", len(res.Cells))
	}
	for _, c := range res.Cells {
		if c.Status != "ok" || c.Completed != 4 || (c.CellID != "sweep/16:4/c1" && c.Attempt != 2) {
			t.Errorf("result.json cell %+v", c)
		}
	}
}
