package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchrun/benchrun/internal/loadgen"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/rundir"
)

// runExample runs an example plan of plans/ against the simulator the
// plan launches (benchrun sim: this binary, found on PATH) and opens the
// run directory it wrote.
func runExample(t *testing.T, name string) *rundir.Run {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the simulator and a plan")
	}
	plan, err := filepath.Abs(filepath.Join("..", "..", "plans", name))
	if err != nil {
		t.Fatal(err)
	}
	dir, bin, _ := simPlanDir(t, "")
	out := filepath.Join(dir, "runs")
	cmd := exec.Command(os.Args[0], plan, "--quiet", "--out", out)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "BENCHRUN_TEST_AS_MAIN=1", "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("benchrun %s: %v\n%s", name, err, b)
	}
	dirs, err := filepath.Glob(filepath.Join(out, "*", "*", "*"))
	if err != nil || len(dirs) != 1 {
		t.Fatalf("run directories: %v %v", dirs, err)
	}
	r, err := rundir.Open(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestSLOSearchPlanKeepsEveryProbe runs plans/slo-search.cue: every probe
// the search measured is a row of the Parquet cells table (search
// "probe") with its requests in the requests table, and the knee is a row
// of its own whose max_concurrency_within_slo is the highest probe that
// met the SLO, with the probe one session above it (when probed) failing.
func TestSLOSearchPlanKeepsEveryProbe(t *testing.T) {
	r := runExample(t, "slo-search.cue")
	cells, err := r.Cells()
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := r.Requests()
	if err != nil {
		t.Fatal(err)
	}
	perCell := map[string]int{}
	for _, q := range reqs {
		perCell[q.CellID]++
	}
	var knee *results.Cell
	meets := map[int64]bool{}
	for i, c := range cells {
		switch c.Search {
		case "probe":
			ok := strings.Contains(c.Notes, "search: meets the SLO")
			meets[c.Concurrency] = ok
			t.Logf("%s: tpot p99 %s ms, meets %v", c.CellID, fmtOpt(c.TPOTP99Ms), ok)
			if c.Status != results.StatusOK || perCell[c.CellID] != int(c.Requests) || c.Requests == 0 {
				t.Errorf("%s: %s, %d request rows for %d requests", c.CellID, c.Status, perCell[c.CellID], c.Requests)
			}
			if c.MaxConcurrencyWithinSLO != nil {
				t.Errorf("%s: a probe with max_concurrency_within_slo", c.CellID)
			}
		case "knee":
			knee = &cells[i]
		default:
			t.Errorf("%s: search %q", c.CellID, c.Search)
		}
	}
	if knee == nil || knee.CellID != "sweep/64:16/knee" || knee.MaxConcurrencyWithinSLO == nil || perCell[knee.CellID] != 0 {
		t.Fatalf("knee %+v", knee)
	}
	k := int64(*knee.MaxConcurrencyWithinSLO)
	t.Logf("knee: %d sessions (%s)", k, knee.Notes)
	// The plan's engine puts the knee at 8 (tpot 2 + 2c ms against 19;
	// stages/sweep's TestSearchFindsTheKnee holds the search to it), but
	// a p99 of 16 requests is their slowest, and on a busy machine one
	// stalled stamp may move it: here the knee is held to what the probes
	// say, whatever they measured.
	if !meets[k] || knee.Concurrency != k {
		t.Errorf("knee at %d sessions (met: %v), concurrency %d", k, meets[k], knee.Concurrency)
	}
	for c, ok := range meets {
		if ok && c > k {
			t.Errorf("probe at %d sessions met the SLO above the knee %d", c, k)
		}
	}
	if ok, probed := meets[k+1]; !probed || ok {
		t.Errorf("the probe at %d sessions: probed %v, met %v; want probed and broken", k+1, probed, ok)
	}
}

// TestTraceReplayPlan runs plans/trace-replay.cue: its row carries the
// time scale and the trace's mean rate at it, and its 16 request rows the
// trace's input and output lengths.
func TestTraceReplayPlan(t *testing.T) {
	r := runExample(t, "trace-replay.cue")
	cells, err := r.Cells()
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := r.Requests()
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 1 || cells[0].CellID != "sweep/trace/x2" || cells[0].TimeScale == nil || *cells[0].TimeScale != 2 || cells[0].Arrival != "trace" || cells[0].Search != "" {
		t.Fatalf("cells %+v", cells)
	}
	tr, err := loadgen.LoadTrace(loadgen.TraceSpec{Path: "../../testdata/traces/mooncake-synthetic.jsonl", Format: loadgen.FormatMooncake})
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != tr.Len() {
		t.Fatalf("%d request rows, want %d", len(reqs), tr.Len())
	}
	for _, q := range reqs {
		line := tr.Requests[q.Seq]
		if int(q.InputTokens) != line.InputLength || int(q.OutputTokens) != line.OutputLength {
			t.Errorf("seq %d: %d in, %d out; line %d says %d, %d", q.Seq, q.InputTokens, q.OutputTokens, line.Line, line.InputLength, line.OutputLength)
		}
	}
}
