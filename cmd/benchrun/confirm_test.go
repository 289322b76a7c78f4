package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/benchrun/benchrun/internal/machine/machinetest"

	"github.com/benchrun/benchrun/internal/rundir"
)

// confirmPlan is one sweep cell against the simulator in fixed mode,
// judged against its history with baseline.confirm as tagged; the
// simulator can be made slower for good (ttft) or for its first N
// generation requests only (slow_first: a passing disturbance).
const confirmPlan = `name: "confirm"
model: {name: "sim"}
_ttft:       *"20ms" | string @tag(ttft)
_slow_first: *"0" | string @tag(slow_first)
_confirm:    *false | bool @tag(confirm,type=bool)
baseline: {min_runs: 3, confirm: _confirm, metrics: ["ttft_p50_ms", "tpot_p50_ms"]}
stages: {
	server: {
		kind: "launch"
		cmd: ["benchrun", "sim", "--addr", "127.0.0.1:${port}", "--model", "sim", "--mode", "fixed", "--ttft", _ttft, "--itl", "5ms", "--eos-prob", "0", "--slow-first", _slow_first, "--slow-factor", "2"]
	}
	health: {kind: "health", target: "server"}
	sweep: {
		kind:        "sweep"
		target:      "server"
		needs:       ["health"]
		cells:       [{isl: 16, osl: 8}]
		concurrency: [4]
		requests:    16
		warmup:      1
		calibrate:   "off"
	}
}
`

// TestBaselineConfirm: with baseline.confirm, a cell that breached its
// history is measured again while its server is up, and the second
// measurement is judged: a passing disturbance (the simulator's first 33
// requests twice as slow: the health probe, the first measurement's
// warm-up pass and its timed pass) is not a regression, a lasting one (TTFT 20 → 40 ms) still is, and both
// rows of the cell stay in the cells table. Without confirm the same
// disturbance fails the run: what confirm is for.
func TestBaselineConfirm(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator 7 times")
	}
	dir, bin, plan := simPlanDir(t, confirmPlan)
	runs := filepath.Join(dir, "runs")
	run := func(tags ...string) (int, string, *rundir.Run) {
		t.Helper()
		return runPlanTagged(t, dir, bin, plan, runs, tags...)
	}
	// What the verdicts find is judged against the machine the history
	// and the checks ran on: from the first history run.
	machine := machinetest.Start()
	var quietClaims []string
	for i := range 3 {
		if code, stderr, _ := run(); code != 0 {
			t.Fatalf("history run %d: exit %d\n%s", i, code, stderr)
		}
	}
	measurements := func(rd *rundir.Run) string {
		cells, err := rd.Cells()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range cells {
			got = append(got, fmt.Sprintf("%d:%s:%s", c.Measurement, c.Status, ms0(c.TTFTMs)))
		}
		return strings.Join(got, " ")
	}
	regressionValues := func(rd *rundir.Run, metric string) map[string]string {
		vs, err := rd.LatestVerdicts()
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vs {
			if v.Level == "regression" && v.Name == metric {
				return v.Values
			}
		}
		t.Fatalf("no regression verdict of %s in %+v", metric, vs)
		return nil
	}

	// A passing disturbance, confirmed away: when the disturbed first
	// measurement regressed against the history, the cell is measured once
	// more, both rows stay, and the second is judged. That the first
	// regressed at all (a history measured beside busy neighbours may be
	// wide enough to hold it), and that the confirmation reads inside the
	// interval (beside CPU-bound neighbours a clean measurement of this
	// 20 ms server read 24 ms against [19.1, 21.6]), are claims about a
	// quiet machine: judged last, against the machine, so that the other
	// checks run.
	code, stderr, rd := run("confirm=true", "slow_first=33")
	m := measurements(rd)
	t.Logf("passing disturbance, confirm: exit %d; rows (measurement:status:ttft) %s", code, m)
	v := regressionValues(rd, "ttft_p50_ms")
	if !strings.Contains(stderr, "measuring it once more to confirm") {
		if rows := strings.Fields(m); len(rows) != 1 || v["outcome"] == "regressed" {
			t.Errorf("not measured again, yet rows %q and ttft verdict %v", m, v)
		}
		quietClaims = append(quietClaims, fmt.Sprintf("passing disturbance: its first measurement did not regress against the history (ttft verdict %v), so it was not measured again\n%s", v, stderr))
	} else {
		if code != 0 {
			quietClaims = append(quietClaims, fmt.Sprintf("passing disturbance: exit %d, want 0 after a confirmation that did not regress\n%s", code, stderr))
		}
		if rows := strings.Fields(m); len(rows) != 2 || !strings.HasPrefix(rows[0], "1:ok:") || !strings.HasPrefix(rows[1], "2:ok:") {
			t.Errorf("cell rows %q, want the first measurement and its confirmation", m)
		}
		switch {
		case v["measurements"] != "2":
			t.Errorf("ttft verdict values %v: want judged on the second measurement", v)
		case code == 0 && v["outcome"] == "regressed":
			t.Errorf("ttft verdict values %v: exit 0 with a regressed verdict", v)
		case code == 0 && !strings.HasPrefix(v["confirm"], "not confirmed") && v["first"] != "":
			t.Errorf("ttft verdict values %v: want the first measurement's regression recorded as not confirmed", v)
		}
		reqs, err := rd.Requests()
		if err != nil {
			t.Fatal(err)
		}
		per := map[int64]int{}
		for _, q := range reqs {
			per[q.Measurement]++
		}
		if per[1] != 16 || per[2] != 16 || len(per) != 2 {
			t.Errorf("requests per measurement %v, want 16 and 16", per)
		}
	}

	// The same disturbance without confirm: never measured again; that it
	// regresses against a history measured beside busy neighbours (whose
	// spread can hold it) is a quiet machine's claim.
	if code, stderr, rd := run("slow_first=33"); strings.Contains(stderr, "once more") || len(strings.Fields(measurements(rd))) != 1 {
		t.Errorf("without confirm: exit %d (rows %s), want no re-measurement\n%s", code, measurements(rd), stderr)
	} else if code != 1 {
		quietClaims = append(quietClaims, fmt.Sprintf("without confirm: exit %d (rows %s), want 1: a regression\n%s", code, measurements(rd), stderr))
	}

	// A lasting slowdown, confirmed: when the first measurement regressed,
	// the second is taken and regresses too; both rows stay.
	code, stderr, rd = run("confirm=true", "ttft=40ms")
	v = regressionValues(rd, "ttft_p50_ms")
	t.Logf("lasting slowdown, confirm: exit %d; rows %s; ttft verdict %v", code, measurements(rd), v)
	switch {
	case code == 1:
		if v["outcome"] != "regressed" || !strings.HasPrefix(v["confirm"], "confirmed") || !strings.Contains(stderr, "confirmed: both measurements regressed") {
			t.Errorf("exit %d, ttft verdict %v; want a confirmed regression\n%s", code, v, stderr)
		}
		if rows := strings.Fields(measurements(rd)); len(rows) != 2 {
			t.Errorf("cell rows %v, want both measurements", rows)
		}
		cells, _ := rd.LatestCells()
		if len(cells) != 1 || cells[0].Measurement != 2 {
			t.Errorf("current rows %+v, want the confirmation", cells)
		}
	default:
		quietClaims = append(quietClaims, fmt.Sprintf("lasting slowdown: exit %d, ttft verdict %v; want a confirmed regression, exit 1\n%s", code, v, stderr))
	}
	if len(quietClaims) > 0 {
		t.Log(strings.Join(quietClaims, "\n"))
		machine.Judge(t, "the verdicts against a history measured on a quiet machine")
		t.Error(strings.Join(quietClaims, "\n"))
	}
}

// runPlanTagged runs the plan as benchrun would be run (the test binary as
// main, the simulator on PATH) with the tags given, and opens the one run
// directory it made.
func runPlanTagged(t *testing.T, dir, bin, plan, runs string, tags ...string) (code int, stderr string, rd *rundir.Run) {
	t.Helper()
	args := []string{plan, "--out", runs}
	for _, tag := range tags {
		args = append(args, "-t", tag)
	}
	before, _ := filepath.Glob(filepath.Join(runs, "*", "*", "*"))
	cmd := exec.Command(os.Args[0], args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "BENCHRUN_TEST_AS_MAIN=1", "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	var out strings.Builder
	cmd.Stderr = &out
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	if ee != nil {
		code = ee.ExitCode()
	}
	after, _ := filepath.Glob(filepath.Join(runs, "*", "*", "*"))
	sort.Strings(after)
	var fresh []string
	for _, d := range after {
		if !slices.Contains(before, d) {
			fresh = append(fresh, d)
		}
	}
	if len(fresh) != 1 {
		t.Fatalf("run %v: new run directories %v\n%s", tags, fresh, out.String())
	}
	if rd, err = rundir.Open(fresh[0]); err != nil {
		t.Fatal(err)
	}
	return code, out.String(), rd
}

// coldConfirmPlan is confirmPlan's cell with long prompts against a
// simulator with a prompt cache: a re-measurement that re-sent the first
// measurement's prompts would find all but their last block cached.
const coldConfirmPlan = `name: "confirm-cold"
model: {name: "sim"}
_ttft: *"20ms" | string @tag(ttft)
_as:   *"generic" | string @tag(as)
baseline: {min_runs: 3, confirm: true, metrics: ["ttft_p50_ms"]}
stages: {
	server: {
		kind: "launch"
		cmd: ["benchrun", "sim", "--addr", "127.0.0.1:${port}", "--model", "sim", "--as", _as, "--mode", "fixed", "--ttft", _ttft, "--itl", "2ms", "--eos-prob", "0", "--prompt-cache"]
	}
	health: {kind: "health", target: "server"}
	sweep: {
		kind:        "sweep"
		target:      "server"
		needs:       ["health"]
		cells:       [{isl: 512, osl: 4}]
		concurrency: [2]
		requests:    8
		warmup:      1
		calibrate:   "off"
	}
}
`

// TestConfirmationIsCold: a confirmation measures the cell as cold as the
// first measurement did. Against a simulator with a prompt cache, a TTFT
// ten times its history's (20 -> 200 ms) regresses, is measured once more,
// and the second measurement regresses too: no request of either is
// answered from the cache. (Before, the confirmation re-sent the first
// measurement's prompts, read TTFT from the cache, and the run was judged
// "improved", exit 0.)
//
// Both caches the simulator plays: vLLM's blocks (generic) and
// llama-server's slots, each keeping the last prompt it served.
func TestConfirmationIsCold(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator 8 times")
	}
	for _, as := range []string{"generic", "llama-server"} {
		t.Run(as, func(t *testing.T) { confirmationIsCold(t, as) })
	}
}

func confirmationIsCold(t *testing.T, as string) {
	dir, bin, plan := simPlanDir(t, coldConfirmPlan)
	runs := filepath.Join(dir, "runs")
	for i := range 3 {
		if code, stderr, _ := runPlanTagged(t, dir, bin, plan, runs, "as="+as); code != 0 {
			t.Fatalf("history run %d: exit %d\n%s", i, code, stderr)
		}
	}
	code, stderr, rd := runPlanTagged(t, dir, bin, plan, runs, "ttft=200ms", "as="+as)
	cells, err := rd.Cells()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cells {
		got = append(got, fmt.Sprintf("%d:%s:%s", c.Measurement, c.Status, ms0(c.TTFTMs)))
		if c.TTFTMs == nil || *c.TTFTMs < 150 {
			t.Errorf("measurement %d: TTFT %s ms, want the server's 200 (a cold measurement)", c.Measurement, ms0(c.TTFTMs))
		}
	}
	if len(cells) != 2 {
		t.Fatalf("rows %v, want the first measurement and its confirmation\n%s", got, stderr)
	}
	reqs, err := rd.Requests()
	if err != nil {
		t.Fatal(err)
	}
	cached := map[int64]int64{}
	for _, q := range reqs {
		if q.CachedTokens != nil {
			cached[q.Measurement] += *q.CachedTokens
		}
	}
	if cached[1] != 0 || cached[2] != 0 {
		t.Errorf("cached prompt tokens per measurement %v, want none", cached)
	}
	if code != 1 || !strings.Contains(stderr, "confirmed: both measurements regressed") {
		t.Errorf("exit %d, want 1 (a confirmed regression); rows %v\n%s", code, got, stderr)
	}
}

func ms0(x *float64) string {
	if x == nil {
		return "null"
	}
	return fmt.Sprintf("%.0f", *x)
}
