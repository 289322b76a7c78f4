package e2e

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/measure"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/results/resultstest"
	_ "github.com/duckdb/duckdb-go/v2" // DuckDB reads the run's Parquet as an analyst would
)

// duckCount is DuckDB's count of the rows of a run directory's table,
// read from its part files as they stand.
func duckCount(t *testing.T, db *sql.DB, dir, table string) int64 {
	t.Helper()
	var n int64
	q := fmt.Sprintf("select count(*) from read_parquet('%s', union_by_name = true)", filepath.Join(dir, table, "*.parquet"))
	if err := db.QueryRow(q).Scan(&n); err != nil {
		t.Fatalf("DuckDB could not read %s's parts: %v", table, err)
	}
	return n
}

// soakRunDir waits for the run directory of a run writing under out.
func soakRunDir(t *testing.T, out string, deadline time.Time) string {
	t.Helper()
	for time.Now().Before(deadline) {
		if dirs, _ := filepath.Glob(filepath.Join(out, "plan=e2e", "date=*", "run=*")); len(dirs) == 1 {
			return dirs[0]
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no run directory under %s", out)
	return ""
}

// waitParts waits until table has at least n part files.
func waitParts(t *testing.T, dir, table string, n int, deadline time.Time) {
	t.Helper()
	for time.Now().Before(deadline) {
		if parts, _ := filepath.Glob(filepath.Join(dir, table, "*.parquet")); len(parts) >= n {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: fewer than %d parts in time", table, n)
}

// TestKilledSoakResumes stops a soak mid-run with SIGKILL, as a machine
// that runs out of memory or an operator would, and with SIGINT, as a
// user's Ctrl-C: what it measured until then is queryable by DuckDB
// while it runs and after it stopped, no process outlives it, and
// --resume measures the rest; every cell row then equals the row
// recomputed from its rows in the requests table.
func TestKilledSoakResumes(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) { stopAndResume(t, sig) })
	}
}

func stopAndResume(t *testing.T, sig syscall.Signal) {
	model := uniqueModel()
	out := t.TempDir()
	tags := []string{"-t", "model=" + model, "-t", "duration=2s", "-t", "repeats=5", "-t", "rate=100"}
	cmd := exec.Command(binary, append(append([]string{"testdata/soak.cue"}, tags...), "--out", out)...)
	var se bytes.Buffer
	cmd.Stderr = &se
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	dir := soakRunDir(t, out, deadline)
	waitParts(t, dir, "cells", 2, deadline)

	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// During the run: the finished cells' rows are there to query, and
	// the rows of the cell being measured so far (live/, a file a slice).
	if n := duckCount(t, db, dir, "requests"); n < 2*100*0.9 {
		t.Errorf("DuckDB read %d request rows during the run; want the two finished cells' (about 200)", n)
	}
	var live int64
	for live == 0 && time.Now().Before(deadline) {
		// A live file may be removed between the glob and its reading
		// (its cell ended): then the query fails and is made again.
		q := fmt.Sprintf("select count(*) from read_parquet('%s')", filepath.Join(dir, "live", "*.parquet"))
		if err := db.QueryRow(q).Scan(&live); err != nil {
			live = 0
		}
		time.Sleep(50 * time.Millisecond)
	}
	if live == 0 {
		t.Errorf("DuckDB read no row of the cell being measured in %s/live", dir)
	}
	t.Logf("rows of the running cell read from live/: %d", live)

	_ = syscall.Kill(cmd.Process.Pid, sig)
	_ = cmd.Wait()
	waitGone(t, model)
	if code := cmd.ProcessState.ExitCode(); sig == syscall.SIGINT && code != 130 {
		t.Errorf("exit %d after SIGINT; want 130\n%s", code, se.String())
	}
	for _, table := range []string{results.TableCells, results.TableRequests, results.TableSlices} {
		duckCount(t, db, dir, table) // every finished part is readable after the stop
	}
	var killed int64 // an interrupted run stores its other cells' rows too, not ok
	q := fmt.Sprintf("select count(*) from read_parquet('%s') where status = 'ok'", filepath.Join(dir, results.TableCells, "*.parquet"))
	if err := db.QueryRow(q).Scan(&killed); err != nil {
		t.Fatal(err)
	}
	if killed >= 5 {
		t.Fatalf("the run finished all %d cells before it was stopped; the test tells nothing", killed)
	}

	// A kill -9 mid-cell leaves that cell's spooled rows (removed by the
	// resume, which measures the cell again); an interrupt removes them.
	spools, _ := filepath.Glob(filepath.Join(dir, "live", "*"))
	if sig == syscall.SIGINT && len(spools) > 0 {
		t.Errorf("an interrupted run left %v", spools)
	}
	t.Logf("live files after %s: %d", sig, len(spools))

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	resume := exec.CommandContext(ctx, binary, append(append([]string{"testdata/soak.cue"}, tags...), "--resume", dir)...)
	var rse bytes.Buffer
	resume.Stderr = &rse
	if err := resume.Run(); err != nil {
		t.Fatalf("--resume: %v\n%s", err, rse.String())
	}
	waitGone(t, model)
	checkCellsFromRequests(t, dir, 5)
	if left, _ := filepath.Glob(filepath.Join(dir, "live", "*")); len(left) > 0 {
		t.Errorf("the resumed run left %v", left)
	}
}

// checkCellsFromRequests holds every current cell row of a run directory
// to the row measure.FillCell recomputes from its request rows (the same
// cell id and attempt): the counts and every latency percentile equal.
func checkCellsFromRequests(t *testing.T, dir string, want int) {
	t.Helper()
	cells, err := resultstest.ReadTable[results.Cell](dir, results.TableCells)
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := resultstest.ReadTable[results.Request](dir, results.TableRequests)
	if err != nil {
		t.Fatal(err)
	}
	current := map[string]results.Cell{}
	for _, c := range cells {
		if old, ok := current[c.CellID]; !ok || c.Attempt > old.Attempt {
			current[c.CellID] = c
		}
	}
	if len(current) != want {
		t.Fatalf("%d cells; want %d", len(current), want)
	}
	for id, c := range current {
		var mine []results.Request
		for _, r := range reqs {
			if r.CellID == id && results.AttemptOf(r.Attempt) == results.AttemptOf(c.Attempt) && r.Measurement == c.Measurement {
				mine = append(mine, r)
			}
		}
		if c.Status != results.StatusOK {
			t.Errorf("%s: %s %s", id, c.Status, c.Reason)
		}
		got := c
		measure.FillCell(&got, results.AsRequests(mine), measure.CellWindow{Span: time.Duration(c.DurationS * float64(time.Second)), Slice: time.Duration(c.SliceS * float64(time.Second))}, measure.SLO{})
		if got.Requests != c.Requests || got.Completed != c.Completed {
			t.Errorf("%s: the row says %d requests, %d completed; its %d request rows say %d, %d", id, c.Requests, c.Completed, len(mine), got.Requests, got.Completed)
		}
		for _, name := range []string{results.ColTTFTP50Ms, results.ColTTFTP99Ms, results.ColITLP50Ms, results.ColITLP99Ms, results.ColE2ELP99Ms, results.ColTTFTMs} {
			col, _ := results.Lookup(name)
			a, b := col.Float(&c), col.Float(&got)
			if (a == nil) != (b == nil) || a != nil && *a != *b {
				t.Errorf("%s: %s %v on the row, %v recomputed from its request rows", id, name, fmtOpt(a), fmtOpt(b))
			}
		}
	}
}

func fmtOpt(p *float64) string {
	if p == nil {
		return "NULL"
	}
	return strconv.FormatFloat(*p, 'g', -1, 64)
}

// TestSoak is the 30-minute soak of docs/METRICS.md ("Memory per
// finished request"), run only when BENCHRUN_SOAK is set (its value, a
// Go duration, is the soak's length: 30m for the figure): streamed
// requests of 64 tokens at 500 req/s against the simulator. It holds the
// benchrun process's peak RSS under BENCHRUN_SOAK_RSS_MB (1024) and its
// cell row to the row recomputed from its requests table.
func TestSoak(t *testing.T) {
	length := os.Getenv("BENCHRUN_SOAK")
	if length == "" {
		t.Skip("BENCHRUN_SOAK=30m runs the 30-minute soak")
	}
	d, err := time.ParseDuration(length)
	if err != nil {
		t.Fatalf("BENCHRUN_SOAK=%q: %v", length, err)
	}
	limitMB := 1024
	if v := os.Getenv("BENCHRUN_SOAK_RSS_MB"); v != "" {
		if limitMB, err = strconv.Atoi(v); err != nil {
			t.Fatal(err)
		}
	}
	model := uniqueModel()
	out := t.TempDir()
	cmd := exec.Command(binary, "testdata/soak.cue", "-t", "model="+model, "-t", "duration="+length, "-t", "repeats=1", "-t", "rate=500", "-t", "osl=64", "--out", out)
	var se bytes.Buffer
	cmd.Stderr = &se
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	peak := watchPeakRSS(cmd.Process.Pid, model)
	err = cmd.Wait()
	peakKB := <-peak
	waitGone(t, model)
	if err != nil {
		t.Fatalf("soak: %v\n%s", err, se.String())
	}
	t.Logf("soak of %s: peak RSS %d MB", d, peakKB>>10)
	if d >= time.Minute && !strings.Contains(se.String(), "timed: slice 1/") { // a pass of a minute or more prints its slices
		t.Errorf("no progress line per slice on stderr:\n%s", se.String())
	}
	if peakKB>>10 >= int64(limitMB) {
		t.Errorf("peak RSS %d MB over a %s soak; want under %d MB", peakKB>>10, d, limitMB)
	}
	checkCellsFromRequests(t, soakRunDir(t, out, time.Now().Add(10*time.Second)), 1)
	if peakKB == 0 {
		t.Errorf("no peak RSS read of the benchrun processes")
	}
}

// watchPeakRSS follows the peak resident memory (VmHWM, kB) of a benchrun
// process and its children other than the simulator (whose command line
// names model) until top exits, and sends it.
func watchPeakRSS(top int, model string) <-chan int64 {
	peak := make(chan int64, 1)
	go func() {
		var most int64
		for syscall.Kill(top, 0) == nil {
			for _, pid := range append([]int{top}, childrenOf(top)...) {
				// The simulator (and its guard) is the server under test,
				// not the client: its command line runs `sim` (benchrun's own
				// names the model too, in its -t flag).
				cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
				if strings.Contains(string(cmdline), "\x00sim\x00") && strings.Contains(string(cmdline), model) {
					continue
				}
				most = max(most, vmHWM(pid))
			}
			time.Sleep(200 * time.Millisecond)
		}
		peak <- most
	}()
	return peak
}

// childrenOf is pid's children (/proc/PID/task/*/children).
func childrenOf(pid int) []int {
	var out []int
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, s := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(s); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// vmHWM is a process's peak resident set in kB (0 when gone).
func vmHWM(pid int) int64 {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return n
		}
	}
	return 0
}
