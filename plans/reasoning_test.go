package plans_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/rundir"
)

// TestReasoningPlan runs plans/reasoning.cue against the simulator: one
// row per effort, its reasoning tokens per request the simulator's (20 at
// low, 80 at high), every request answered, its time to the first answer
// the thinking's length after the TTFT (60 and 180 ms; ttft 20 ms at
// either), and the search's knee at its hi, 8 sessions, within the TTFO
// SLO.
func TestReasoningPlan(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the plan")
	}
	cells, _ := runExampleTables(t, "reasoning.cue")
	byID := map[string]results.Cell{}
	for _, c := range cells {
		byID[c.CellID] = c
	}
	for _, tc := range []struct {
		id      string
		think   float64
		ttfoP50 float64
	}{
		{"sweep/64:128/c1/reasoning_effort=low", 20, 60},
		{"sweep/64:128/c4/reasoning_effort=low", 20, 60},
		{"sweep/64:128/c1/reasoning_effort=high", 80, 180},
		{"sweep/64:128/c4/reasoning_effort=high", 80, 180},
	} {
		c, ok := byID[tc.id]
		switch {
		case !ok:
			t.Errorf("no row %s", tc.id)
		case c.ReasoningTokensAvg == nil || *c.ReasoningTokensAvg != tc.think || c.AnswerTokensAvg == nil || *c.AnswerTokensAvg != 128-tc.think:
			t.Errorf("%s: reasoning %v answer %v tokens per request, want %v and %v", tc.id, c.ReasoningTokensAvg, c.AnswerTokensAvg, tc.think, 128-tc.think)
		case c.AnsweredPct == nil || *c.AnsweredPct != 100:
			t.Errorf("%s: answered %v%%", tc.id, c.AnsweredPct)
		case c.TTFOP50Ms == nil || *c.TTFOP50Ms < tc.ttfoP50 || *c.TTFOP50Ms > tc.ttfoP50+20:
			t.Errorf("%s: ttfo p50 %v ms, want %v", tc.id, c.TTFOP50Ms, tc.ttfoP50)
		case c.TTFTP50Ms == nil || *c.TTFTP50Ms > 40:
			t.Errorf("%s: ttft p50 %v ms, want the simulator's 20", tc.id, c.TTFTP50Ms)
		}
	}
	knee := byID["search/64:128/knee"]
	if knee.MaxConcurrencyWithinSLO == nil || *knee.MaxConcurrencyWithinSLO != 8 || knee.Reasoning != "reasoning_effort=high" {
		t.Errorf("knee: max concurrency %v, reasoning %q; want 8 at high effort", knee.MaxConcurrencyWithinSLO, knee.Reasoning)
	}
}

// runExampleOut is runExample with the runs folder the test reads back.
// runExampleTables runs the example plan (under a temporary --out), wants
// it to exit 0, and reads back its one run's cells and requests tables.
func runExampleTables(t *testing.T, plan string) ([]results.Cell, []results.Request) {
	t.Helper()
	out := t.TempDir()
	code, _, stderr := runExampleOut(t, plan, out)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	dirs, _ := filepath.Glob(filepath.Join(out, "plan=*", "*", "run=*"))
	if len(dirs) != 1 {
		t.Fatalf("run directories %v", dirs)
	}
	run, err := rundir.Open(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	cells, err := run.Cells()
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := run.Requests()
	if err != nil {
		t.Fatal(err)
	}
	return cells, reqs
}

func runExampleOut(t *testing.T, plan, out string) (int, string, string) {
	t.Helper()
	abs, err := filepath.Abs(plan)
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(binary, abs, "--out", out)
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(binary)+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	code := 0
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatal(err)
		}
		code = ee.ExitCode()
	}
	return code, stdout.String(), stderr.String()
}
