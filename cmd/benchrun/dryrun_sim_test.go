package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/machine/machinetest"
	"github.com/benchrun/benchrun/internal/rundir"
)

// TestDryRunEstimatesTheSimulator: against the built-in simulator in fixed
// mode, the dry run's estimate of the sweep comes from the simulator's own
// TTFT and gap (its command line), not a guessed modest server: the
// quickstart plan's estimate is never above 1.25x what the sweep then
// takes (it was 2.5-4x), and, on a quiet machine, not under half of it.
func TestDryRunEstimatesTheSimulator(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the quickstart plan")
	}
	dir, bin, _ := simPlanDir(t, "")
	plan, err := filepath.Abs(filepath.Join("..", "..", "plans", "quickstart.cue"))
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "BENCHRUN_TEST_AS_MAIN=1", "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	dry := exec.Command(os.Args[0], plan, "--dry-run")
	dry.Dir, dry.Env = dir, env
	out, err := dry.Output()
	if err != nil {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`estimated duration ~(\S+) `).FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("no estimate in\n%s", out)
	}
	est, err := time.ParseDuration(m[1])
	if err != nil {
		t.Fatal(err)
	}
	machine := machinetest.Start()
	code, stderr, rd := runPlanTagged(t, dir, bin, plan, filepath.Join(dir, "runs"))
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	took := stageDuration(t, rd, "sweep")
	ratio := est.Seconds() / took.Seconds()
	t.Logf("estimate %s, the sweep took %s (%.2fx)", est, took.Round(time.Millisecond), ratio)
	if ratio > 1.25 {
		t.Errorf("estimate %s for a sweep that took %s: %.2fx", est, took, ratio)
	}
	if ratio < 0.5 {
		machine.Judge(t, "the sweep taking about what the simulator's timings give")
		t.Errorf("estimate %s for a sweep that took %s: %.2fx", est, took, ratio)
	}
}

// stageDuration is how long stage ran, from the run's manifest.
func stageDuration(t *testing.T, rd *rundir.Run, stage string) time.Duration {
	t.Helper()
	m, err := rundir.ReadManifest(rd.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range m.Stages {
		if s.Name == stage {
			return time.Duration(s.DurationS * float64(time.Second))
		}
	}
	t.Fatalf("no stage %s in the manifest: %s", stage, strings.Join(func() []string {
		var names []string
		for _, s := range m.Stages {
			names = append(names, fmt.Sprint(s.Name))
		}
		return names
	}(), ", "))
	return 0
}
