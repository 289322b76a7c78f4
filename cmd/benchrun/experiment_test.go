//go:build linux

package main

import (
	"encoding/csv"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// experimentSizes are issue 49's experiment's sizes: H history runs of the
// nightly plan, N identical runs, M runs 10 % slower, P pairs of identical
// quickstart runs through compare; BENCHRUN_EXPERIMENT_SIZES=H,N,M,P.
func experimentSizes(t *testing.T) (h, n, m, p int) {
	sizes := []int{8, 20, 10, 20}
	if v := os.Getenv("BENCHRUN_EXPERIMENT_SIZES"); v != "" {
		for i, f := range strings.Split(v, ",") {
			x, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || x < 0 || i >= len(sizes) {
				t.Fatalf("BENCHRUN_EXPERIMENT_SIZES=%q: want four counts H,N,M,P", v)
			}
			sizes[i] = x
		}
	}
	return sizes[0], sizes[1], sizes[2], sizes[3]
}

// benchrunRun runs benchrun with args in dir and returns its exit code
// and its stdout and stderr.
func benchrunRun(t *testing.T, dir, bin string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "BENCHRUN_TEST_AS_MAIN=1", "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode(), stdout.String(), stderr.String()
	case err != nil:
		t.Fatal(err)
	}
	return 0, stdout.String(), stderr.String()
}

// named is what a run's stderr named: its regressions ("✗ regression:
// METRIC of CELL"), how many verdicts were inconclusive or unknown, and
// the lines that said so (the reasons, to read when a run was not
// called as it should have been).
func named(stderr string) (regressed []string, inconclusive, unknown int, said []string) {
	for _, line := range strings.Split(stderr, "\n") {
		switch {
		case strings.HasPrefix(line, "✗ regression: "):
			f := strings.Fields(strings.TrimPrefix(line, "✗ regression: "))
			regressed = append(regressed, strings.Join(f[:min(3, len(f))], " "))
		case strings.HasPrefix(line, "? regression unknown"):
			unknown++
			said = append(said, line)
		case strings.HasPrefix(line, "? "):
			inconclusive++
			said = append(said, line)
		}
	}
	return regressed, inconclusive, unknown, said
}

// TestExperimentVerdictRates is issue 49's Done-when, end to end, beside
// CPU-bound neighbours (BENCHRUN_EXPERIMENT_HOGS `sha256sum /dev/zero`,
// default 8) with the simulator as a local server:
//
//   - the nightly plan's shape (`baseline: {}`, two cells × c=1, 4) after
//     H history runs: of N identical runs (each joining the history, as a
//     nightly's do), at most max(1, N/20) may exit 1 (a false alarm); of M
//     runs of a server 10 % slower (-t ttft=22ms -t itl=5.5ms, judged
//     against the same history, not joining it), at least 9 in 10 exit 1
//     naming a metric;
//   - P pairs of identical plans/quickstart.cue runs through `benchrun
//     compare`: no verdict regressed or improved.
//
// It prints the counts (stderr, "experiment: ..."). Minutes per run on
// two cores: the whole default takes about an hour, so it is skipped
// unless BENCHRUN_EXPERIMENT=1:
//
//	BENCHRUN_EXPERIMENT=1 go test ./cmd/benchrun -run TestExperimentVerdictRates -v -timeout 3h
func TestExperimentVerdictRates(t *testing.T) {
	if os.Getenv("BENCHRUN_EXPERIMENT") != "1" {
		t.Skip("issue 49's experiment (about an hour): set BENCHRUN_EXPERIMENT=1 (BENCHRUN_EXPERIMENT_SIZES=H,N,M,P, default 8,20,10,20; BENCHRUN_EXPERIMENT_HOGS, default 8)")
	}
	h, n, m, p := experimentSizes(t)
	hogs := 8
	if v := os.Getenv("BENCHRUN_EXPERIMENT_HOGS"); v != "" {
		var err error
		if hogs, err = strconv.Atoi(v); err != nil || hogs < 0 {
			t.Fatalf("BENCHRUN_EXPERIMENT_HOGS=%q: want a count", v)
		}
	}
	startHogs(t, hogs, fmt.Sprintf("0-%d", runtime.NumCPU()-1))

	dir, bin, plan := simPlanDir(t, verdictRatesPlan)
	history := filepath.Join(dir, "runs")
	for i := range h {
		if code, _, stderr := benchrunRun(t, dir, bin, plan, "--out", history); code != 0 {
			t.Logf("history run %d exited %d:\n%s", i, code, lastLines(stderr, 5))
		}
	}
	alarms, inconclusive, unknown := 0, 0, 0
	for i := range n {
		code, _, stderr := benchrunRun(t, dir, bin, plan, "--out", history)
		reg, inc, unk, said := named(stderr)
		inconclusive, unknown = inconclusive+inc, unknown+unk
		if code == 1 {
			alarms++
			t.Logf("identical run %d: false alarm: %s", i, strings.Join(reg, "; "))
		}
		if len(said) > 0 {
			t.Logf("identical run %d: %d inconclusive, %d unknown:\n%s", i, inc, unk, strings.Join(said, "\n"))
		}
	}
	found := 0
	for i := range m {
		code, _, stderr := benchrunRun(t, dir, bin, plan, "--out", filepath.Join(dir, "slower"), "--baseline", history, "-t", "ttft=22ms", "-t", "itl=5.5ms")
		reg, _, _, said := named(stderr)
		if code == 1 && len(reg) > 0 {
			found++
		}
		t.Logf("10%% slower run %d: exit %d: %s", i, code, strings.Join(reg, "; "))
		if len(reg) == 0 {
			t.Logf("10%% slower run %d was not called regressed:\n%s", i, strings.Join(append(said, lastLines(stderr, 3)), "\n"))
		}
	}

	quickstart, err := filepath.Abs(filepath.Join("..", "..", "plans", "quickstart.cue"))
	if err != nil {
		t.Fatal(err)
	}
	called, pairsCalled := 0, 0
	for i := range p {
		a, b := filepath.Join(dir, fmt.Sprintf("qa%d", i)), filepath.Join(dir, fmt.Sprintf("qb%d", i))
		for _, out := range []string{a, b} {
			if code, _, stderr := benchrunRun(t, dir, bin, quickstart, "--out", out); code != 0 {
				t.Logf("quickstart run exited %d:\n%s", code, lastLines(stderr, 5))
			}
		}
		code, stdout, stderr := benchrunRun(t, dir, bin, "compare", a, b, "--format", "csv")
		calls := compareCalls(t, stdout)
		called += len(calls)
		if len(calls) > 0 {
			pairsCalled++
			t.Logf("pair %d: compare exit %d: %s", i, code, strings.Join(calls, "; "))
		} else if code == 2 {
			t.Errorf("pair %d: compare exit 2:\n%s", i, lastLines(stderr, 5))
		}
	}

	summary := fmt.Sprintf("experiment (%d × sha256sum /dev/zero, %d CPUs): nightly after %d history runs: false alarms %d/%d (verdicts inconclusive %d, unknown %d); 10%% slower caught %d/%d; quickstart pairs through compare: %d/%d called a change (%d verdicts regressed or improved)",
		hogs, runtime.NumCPU(), h, alarms, n, inconclusive, unknown, found, m, pairsCalled, p, called)
	t.Log(summary)
	fmt.Fprintln(os.Stderr, summary)
	if alarms > max(1, n/20) {
		t.Errorf("%d false alarms in %d identical runs, want at most %d", alarms, n, max(1, n/20))
	}
	if 10*found < 9*m {
		t.Errorf("caught %d of %d runs 10%% slower, want at least 9 in 10", found, m)
	}
	if called > 0 {
		t.Errorf("%d pairs of identical quickstart runs called regressed or improved", pairsCalled)
	}
}

// compareCalls are the verdicts of compare's CSV that say regressed or
// improved, as "metric of cell: outcome".
func compareCalls(t *testing.T, stdout string) []string {
	t.Helper()
	recs, err := csv.NewReader(strings.NewReader(stdout)).ReadAll()
	if err != nil || len(recs) == 0 {
		if strings.TrimSpace(stdout) == "" {
			return nil
		}
		t.Fatalf("compare's CSV: %v\n%s", err, stdout)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	oc, ok := col["outcome"]
	if !ok {
		t.Fatalf("compare's CSV has no outcome column: %v", recs[0])
	}
	var out []string
	for _, r := range recs[1:] {
		if o := r[oc]; o == "regressed" || o == "improved" {
			out = append(out, fmt.Sprintf("%s of %s: %s", field(r, col, "metric"), field(r, col, "cell_id"), o))
		}
	}
	return out
}

func field(r []string, col map[string]int, name string) string {
	if i, ok := col[name]; ok && i < len(r) {
		return r[i]
	}
	return ""
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
