package parquet_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/results/resultstest"
	"github.com/benchrun/benchrun/internal/testbin"
	pqs "github.com/benchrun/benchrun/sinks/parquet"
)

// TestMain removes the benchrun binary the tests built. Run with
// BENCHRUN_TEST_WRITER=DIR, the test binary is instead the part-file writer
// that TestKill9DuringPartWrite kills.
func TestMain(m *testing.M) {
	if dir := os.Getenv("BENCHRUN_TEST_WRITER"); dir != "" {
		os.Exit(writeParts(dir))
	}
	code := m.Run()
	testbin.Cleanup()
	os.Exit(code)
}

// buildBenchrun builds the real benchrun binary once per test process.
func buildBenchrun(t *testing.T) string { return testbin.Benchrun(t) }

// killPlan is a quickstart-like sweep against the built-in simulator: 9
// points of about a third of a second each.
const killPlan = `name: "killed"
model: {name: "sim-llama"}
metadata: {mode: "kill-test"}
stages: {
	server: {
		kind: "launch"
		engine: "sim"
		cmd: ["benchrun", "sim", "--addr", "127.0.0.1:${port}", "--model", model.name, "--mode", "fixed", "--ttft", "20ms", "--itl", "5ms"]
	}
	health: {kind: "health", target: "server"}
	sweep: {
		kind: "sweep"
		target: "server"
		needs: ["health"]
		cells: [{isl: 64, osl: 16}, {isl: 128, osl: 16}, {isl: 256, osl: 16}]
		concurrency: [1, 2, 4]
		requests: 6
		warmup: 0
		assert: ["status == \"ok\""]
	}
}
`

// TestKill9DuringSweep kills the real benchrun with SIGKILL in the middle of
// a sweep, then reads the run directory with DuckDB: every cell printed on
// stdout is there with all its requests, every file the glob matches reads,
// and no temporary file matches the glob.
func TestKill9DuringSweep(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the benchrun binary")
	}
	bin := buildBenchrun(t)
	work := t.TempDir()
	planPath := filepath.Join(work, "killed.cue")
	if err := os.WriteFile(planPath, []byte(killPlan), 0o644); err != nil {
		t.Fatal(err)
	}
	runs := filepath.Join(work, "runs")
	cmd := exec.Command(bin, planPath, "--out", runs, "--quiet", "--columns", "cell_id,status")
	cmd.Dir = work
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() { reapChildren(t, bin) })

	// Read CSV rows until the fourth cell, then kill at a random moment of
	// the fifth (which is writing its part files at some point).
	printed := map[string]bool{}
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	deadline := time.After(45 * time.Second)
	killAt := 4
wait:
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("benchrun ended before it was killed (%d rows); stderr:\n%s", len(printed), stderr.String())
			}
			id, status, _ := strings.Cut(l, ",")
			if id == "cell_id" {
				continue
			}
			if status != "ok" {
				t.Fatalf("cell %s: %s; stderr:\n%s", id, status, stderr.String())
			}
			printed[id] = true
			if len(printed) == killAt {
				time.Sleep(time.Duration(rand.IntN(300)) * time.Millisecond)
				break wait
			}
		case <-deadline:
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			t.Fatalf("no %d rows within 45 s; stderr:\n%s", killAt, stderr.String())
		}
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Rows printed between the sleep and the kill count as finished too.
	for l := range lines {
		if id, _, _ := strings.Cut(l, ","); id != "cell_id" {
			printed[id] = true
		}
	}
	_ = cmd.Wait()
	if st, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || st.Signal() != syscall.SIGKILL {
		t.Fatalf("benchrun was not killed by SIGKILL: %v", cmd.ProcessState)
	}

	runDirs, _ := filepath.Glob(filepath.Join(runs, "plan=killed", "date=*", "run=*"))
	if len(runDirs) != 1 {
		t.Fatalf("run directories: %v", runDirs)
	}
	runDir := runDirs[0]
	// Temporary files may be left behind, but no glob may match them.
	for _, table := range []string{"cells", "requests", "assertions"} {
		entries, _ := os.ReadDir(filepath.Join(runDir, table))
		for _, e := range entries {
			if m, _ := filepath.Match("*.parquet", e.Name()); !m && !strings.Contains(e.Name(), ".tmp-") {
				t.Errorf("unexpected file %s/%s", table, e.Name())
			}
		}
	}

	db := duck(t)
	for _, table := range []string{"cells", "requests", "assertions"} {
		files, _ := filepath.Glob(filepath.Join(runDir, table, "*.parquet"))
		for _, f := range files {
			query(t, db, "SELECT count(*) FROM read_parquet("+sqlPath(f)+")")
		}
	}
	cellsGlob := sqlPath(filepath.Join(runs, "**", "cells", "*.parquet"))
	reqGlob := sqlPath(filepath.Join(runs, "**", "requests", "*.parquet"))
	rows := query(t, db, `SELECT c.cell_id, c.status, c.requests, count(r.seq)
		FROM read_parquet(`+cellsGlob+`, hive_partitioning = true, union_by_name = true) c
		LEFT JOIN read_parquet(`+reqGlob+`, union_by_name = true) r USING (run_id, cell_id)
		GROUP BY ALL ORDER BY ALL`)
	stored := map[string]bool{}
	for _, r := range rows {
		stored[r[0]] = true
		if r[1] != "ok" || r[2] != "6" || r[3] != "6" {
			t.Errorf("cell %s: status %s, requests %s, %s request rows; want ok, 6, 6", r[0], r[1], r[2], r[3])
		}
	}
	for id := range printed {
		if !stored[id] {
			t.Errorf("cell %s was printed on stdout but is not in the Parquet files", id)
		}
	}
	if len(stored) >= 9 {
		t.Errorf("all %d cells finished: the kill came too late to test anything", len(stored))
	}
	t.Logf("killed after %d printed rows; %d cells stored", len(printed), len(stored))

	// The reports can be rebuilt from what survived.
	out, err := exec.Command(bin, "report", runDir).CombinedOutput()
	if err != nil {
		t.Fatalf("benchrun report after the kill: %v\n%s", err, out)
	}
	page, err := os.ReadFile(filepath.Join(runDir, "report.html"))
	if err != nil || !strings.Contains(string(page), "crashed") {
		t.Errorf("report.html after the kill does not say the run crashed (%v)", err)
	}
	if !strings.Contains(string(out), "the run crashed") {
		t.Errorf("benchrun report does not say the run crashed:\n%s", out)
	}
	// Opening the run with no writer holding it removed what the killed
	// writer left half written (a temporary file stands for one, whether
	// or not the kill caught a write in flight).
	half := filepath.Join(runDir, "cells", ".part-001-00099.parquet.tmp-4242")
	if err := os.WriteFile(half, []byte("PAR1"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "report", runDir).CombinedOutput(); err != nil || !strings.Contains(string(out), "removed") {
		t.Errorf("benchrun report: %v; it does not say it removed the temporary files:\n%s", err, out)
	}
	left, _ := filepath.Glob(filepath.Join(runDir, "*", ".*.tmp-*"))
	if top, _ := filepath.Glob(filepath.Join(runDir, ".*.tmp-*")); len(top)+len(left) > 0 {
		t.Errorf("temporary files left after benchrun report: %v %v", left, top)
	}

	// The resume finds the attempt crashed, says so, records it, and
	// measures the rest.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res := exec.CommandContext(ctx, bin, planPath, "--resume", runDir, "--columns", "cell_id,status")
	res.Dir = work
	rout, err := res.CombinedOutput()
	if err != nil {
		t.Fatalf("resume of the killed run: %v\n%s", err, rout)
	}
	if !strings.Contains(string(rout), "attempt 1 (pid ") || !strings.Contains(string(rout), "crashed") {
		t.Errorf("the resume does not say attempt 1 crashed:\n%s", rout)
	}
	mb, _ := os.ReadFile(filepath.Join(runDir, "manifest.json"))
	if !strings.Contains(string(mb), `"status": "crashed"`) || !strings.Contains(string(mb), `"attempt": 2`) {
		t.Errorf("manifest after the resume does not record attempt 1 as crashed and attempt 2:\n%s", mb)
	}
	if n := query(t, db, `SELECT count(DISTINCT cell_id) FROM read_parquet(`+cellsGlob+`, union_by_name = true) WHERE status = 'ok'`); n[0][0] != "9" {
		t.Errorf("%s cells ok after the resume, want all 9", n[0][0])
	}
}

// reapChildren ends any process still running our test binary (the
// simulator benchrun launched; its parent-death signal should have ended
// it already) and fails the test if one had survived.
func reapChildren(t *testing.T, bin string) {
	deadline := time.Now().Add(3 * time.Second)
	for {
		var alive []int
		procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		for _, p := range procs {
			b, err := os.ReadFile(p)
			if err != nil || !strings.HasPrefix(string(b), bin+"\x00") {
				continue
			}
			var pid int
			if _, err := fmt.Sscan(filepath.Base(filepath.Dir(p)), &pid); err == nil {
				alive = append(alive, pid)
			}
		}
		if len(alive) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, pid := range alive {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			t.Errorf("processes %v outlived the killed benchrun", alive)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestOutputPrefixAndMetadata runs the real binary to the end with
// --output and --metadata: PREFIX.csv is stdout, PREFIX.json, .md and
// .html exist, and the stamp reaches result.json and the Parquet rows.
func TestOutputPrefixAndMetadata(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the benchrun binary")
	}
	bin := buildBenchrun(t)
	work := t.TempDir()
	planPath := filepath.Join(work, "killed.cue")
	if err := os.WriteFile(planPath, []byte(killPlan), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reapChildren(t, bin) })
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, planPath, "--out", filepath.Join(work, "runs"), "--quiet",
		"--output", filepath.Join(work, "out", "x"), "--metadata", "gpu=none", "--columns", "cell_id,concurrency,output_tok_s")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("benchrun: %v\n%s", err, stderr.String())
	}
	csv, err := os.ReadFile(filepath.Join(work, "out", "x.csv"))
	if err != nil || string(csv) != stdout.String() {
		t.Errorf("out/x.csv (%v) differs from stdout:\n%s\nvs\n%s", err, csv, stdout.String())
	}
	if n := strings.Count(stdout.String(), "\n"); n != 10 {
		t.Errorf("stdout has %d lines, want a header and 9 rows:\n%s", n, stdout.String())
	}
	js, err := os.ReadFile(filepath.Join(work, "out", "x.json"))
	if err != nil || strings.Count(string(js), `"gpu": "none"`) < 1+9 {
		t.Errorf("out/x.json (%v) lacks the gpu=none stamp at the top and in every cell", err)
	}
	for _, ext := range []string{".md", ".html"} {
		if _, err := os.Stat(filepath.Join(work, "out", "x"+ext)); err != nil {
			t.Error(err)
		}
	}
	// The page a real run writes opens offline: not one URL in it.
	page, err := os.ReadFile(filepath.Join(work, "out", "x.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"http://", "https://", "src=", "href=", "<script"} {
		if strings.Contains(string(page), bad) {
			t.Errorf("out/x.html contains %q: report.html must not reference anything outside itself", bad)
		}
	}
	// The four load charts, and a usage chart per cell whose telemetry
	// (the simulator's metrics) has samples.
	if n := strings.Count(string(page), "<svg"); n < 4 {
		t.Errorf("out/x.html has %d inline charts, want at least the 4 load charts", n)
	}
	rows := query(t, duck(t), `SELECT count(*) FROM read_parquet(`+sqlPath(filepath.Join(work, "runs", "**", "cells", "*.parquet"))+`, hive_partitioning = true, union_by_name = true)
		WHERE metadata['gpu'] = 'none' AND metadata['mode'] = 'kill-test'`)
	if rows[0][0] != "9" {
		t.Errorf("%s cell rows carry both the plan's and the --metadata stamp, want 9", rows[0][0])
	}
}

// writerRows is the size of each part the writer process writes: big
// enough (about 0.1 s to encode) that a kill lands inside a write.
const writerRows = 60_000

// writeParts writes part files of writerRows request rows into dir, one
// after another, printing each part's number once it is in place; it stops
// after 100 parts, so a parent that never kills it does not leave it running.
func writeParts(dir string) int {
	rows := syntheticRequests(writerRows, 8)
	for n := 1; n <= 100; n++ {
		if err := pqs.WriteFile(filepath.Join(dir, fmt.Sprintf("part-%05d.parquet", n)), rows); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println(n)
	}
	return 0
}

// TestKill9DuringPartWrite kills a process with SIGKILL while it streams a
// part file, at a random moment: the glob matches only whole files, each of
// which DuckDB reads in full, and a later resume numbers its parts after
// them. (TestKill9DuringSweep kills the real benchrun, where a write is a
// small part of the time; this one makes the write the likely victim.)
func TestKill9DuringPartWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a writer process")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	db := duck(t)
	tmpSeen := 0
	for round := range 3 {
		dir := t.TempDir()
		cmd := exec.Command(self, "-test.run=^$")
		cmd.Env = append(os.Environ(), "BENCHRUN_TEST_WRITER="+dir)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan int, 1)
		go func() {
			sc := bufio.NewScanner(stdout)
			n := 0
			for sc.Scan() {
				if n++; n == 2 {
					done <- n
				}
			}
			close(done)
		}()
		select {
		case _, ok := <-done:
			if !ok {
				_ = cmd.Wait()
				t.Fatalf("the writer ended before two parts: %s", stderr.String())
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatal("the writer wrote no two parts in 30 s")
		}
		time.Sleep(time.Duration(rand.IntN(150)) * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()

		entries, _ := os.ReadDir(dir)
		parts := 0
		for _, e := range entries {
			switch {
			case strings.Contains(e.Name(), ".tmp-"):
				tmpSeen++
				if m, _ := filepath.Match("*.parquet", e.Name()); m {
					t.Errorf("temporary file %s matches *.parquet", e.Name())
				}
			case strings.HasSuffix(e.Name(), ".parquet"):
				parts++
			default:
				t.Errorf("unexpected file %s", e.Name())
			}
		}
		rows := query(t, db, "SELECT count(*), count(DISTINCT filename) FROM read_parquet("+sqlPath(filepath.Join(dir, "*.parquet"))+", filename = true)")
		if want := fmt.Sprint(parts * writerRows); rows[0][0] != want || rows[0][1] != fmt.Sprint(parts) {
			t.Errorf("round %d: DuckDB read %s rows from %s files; want %s from %d", round, rows[0][0], rows[0][1], want, parts)
		}
		reqs, err := resultstest.ReadTable[results.Request](filepath.Dir(dir), filepath.Base(dir))
		if err != nil || len(reqs) != parts*writerRows {
			t.Errorf("round %d: benchrun's reader: %d rows, %v; want %d", round, len(reqs), err, parts*writerRows)
		}
	}
	t.Logf("3 kills; %d left a temporary file behind (a kill inside a write)", tmpSeen)
}
