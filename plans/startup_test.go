package plans_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/machine/machinetest"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/results/resultstest"
)

// TestStartup: the launch stage's start-up rows and the sweep cells after
// per-cell restarts carry startup_s, each the simulator's --load-time
// (the ground truth) plus the process's own start; the stage's and the
// run's assertions over the start-up rows hold.
//
// That a start-up takes at least its load time is a claim about any
// machine; how little it takes beyond it (the process's exec, the poll),
// and how quick the first call is, are claims about a quiet one: judged
// last, against the machine (on a loaded two-core machine a start took
// more than the slack), so that the other checks run.
func TestStartup(t *testing.T) {
	machine := machinetest.Start()
	var quietClaims []string
	b := startBenchrun(t, "", "testdata/startup.cue")
	if code := b.wait(t, 2*time.Minute); code != 0 {
		t.Fatalf("exit %d\n%s", code, b.stderr.String())
	}
	cells := readCells(t, b.runDir(t))
	byID := map[string]results.Cell{}
	for _, c := range cells {
		byID[c.CellID] = c
	}
	// What each row's server loaded for: the first starts take the first
	// cell's variables; each restart the cell's it is for.
	want := []struct {
		id   string
		load time.Duration
	}{
		{"server/startup/r1", 200 * time.Millisecond},
		{"server/startup/r2", 200 * time.Millisecond},
		{"server/startup/restart1", 200 * time.Millisecond},
		{"sweep/16:8/c1/load=200ms", 200 * time.Millisecond},
		{"server/startup/restart2", 900 * time.Millisecond},
		{"sweep/16:8/c1/load=900ms", 900 * time.Millisecond},
	}
	if len(cells) != len(want) {
		t.Errorf("%d rows, want %d", len(cells), len(want))
	}
	// Process start, listen and the poll add to the load; a loaded
	// two-core machine may take a second more.
	const slack = 1500 * time.Millisecond
	for i, w := range want {
		c, ok := byID[w.id]
		if !ok {
			t.Errorf("no row %s", w.id)
			continue
		}
		if i < len(cells) && cells[i].CellID != w.id {
			t.Errorf("row %d is %s, want %s (the order they were measured in)", i, cells[i].CellID, w.id)
		}
		if c.Status != results.StatusOK || c.StartupS == nil {
			t.Errorf("%s: status %s (%s), startup_s %v", w.id, c.Status, c.Reason, c.StartupS)
			continue
		}
		if *c.StartupS < w.load.Seconds() {
			t.Errorf("%s: startup_s %.3f s, less than the load %s", w.id, *c.StartupS, w.load)
		} else if *c.StartupS > (w.load + slack).Seconds() {
			quietClaims = append(quietClaims, fmt.Sprintf("%s: startup_s %.3f s, want the load %s plus at most %s", w.id, *c.StartupS, w.load, slack))
		}
		t.Logf("%s: startup_s %.3f s (load %s), first_call_ms %v", w.id, *c.StartupS, w.load, fmtMs(c.FirstCallMs))
	}
	// The restart a cell was measured after is the one whose start-up it carries.
	for _, p := range [][2]string{{"server/startup/restart1", "sweep/16:8/c1/load=200ms"}, {"server/startup/restart2", "sweep/16:8/c1/load=900ms"}} {
		if a, b := byID[p[0]].StartupS, byID[p[1]].StartupS; a == nil || b == nil || *a != *b {
			t.Errorf("%s startup_s %v, %s startup_s %v: want the same", p[0], a, p[1], b)
		}
	}
	// 700 ms apart, less what the exec of each process added (the
	// simulator's clock starts once it runs: 20 to 300 ms here).
	if a, b := byID["sweep/16:8/c1/load=200ms"].StartupS, byID["sweep/16:8/c1/load=900ms"].StartupS; a != nil && b != nil {
		if d := *b - *a; d < 0.35 || d > 1.2 {
			quietClaims = append(quietClaims, fmt.Sprintf("the cells' startup_s differ by %.3f s, want about 0.7 (their load times' difference)", d))
		}
	}
	// The cold starts' first call: the 1-token probe, fixed mode's 10 ms TTFT.
	for _, id := range []string{"server/startup/r1", "server/startup/r2"} {
		if c := byID[id]; c.FirstCallMs == nil || *c.FirstCallMs < 10 {
			t.Errorf("%s: first_call_ms %v, want at least the simulator's 10 ms TTFT", id, fmtMs(c.FirstCallMs))
		} else if *c.FirstCallMs > 500 {
			quietClaims = append(quietClaims, fmt.Sprintf("%s: first_call_ms %v, want about 10 ms", id, fmtMs(c.FirstCallMs)))
		}
	}
	verdicts, err := resultstest.ReadTable[results.Verdict](b.runDir(t), "assertions")
	if err != nil {
		t.Fatal(err)
	}
	levels := map[string]int{}
	for _, v := range verdicts {
		if v.Outcome != results.OutcomePass {
			t.Errorf("verdict %s %q on %s: %s %v %s", v.Level, v.Assertion, v.Stage, v.Outcome, v.Values, v.Error)
		}
		levels[v.Stage+"/"+v.Level]++
	}
	if levels["server/stage"] != 2 || levels["/run"] != 1 || levels["sweep/row"] != 2 {
		t.Errorf("verdicts by stage/level: %v; want server/stage 2 (the launch stage's, judged when it stopped), /run 1, sweep/row 2", levels)
	}
	if len(quietClaims) > 0 {
		t.Log(strings.Join(quietClaims, "\n"))
		machine.Judge(t, "start-ups within their load time plus the slack")
		t.Error(strings.Join(quietClaims, "\n"))
	}
}

func fmtMs(p *float64) any {
	if p == nil {
		return "null"
	}
	return *p
}
