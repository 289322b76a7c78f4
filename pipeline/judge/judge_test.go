package judge

import (
	"bytes"
	"strings"
	"testing"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/schema"
)

// judgeOf is a judge of the sweep stage's assertions exprs (each at the
// level it reads), with no baseline, saying what it says on progress.
func judgeOf(t *testing.T, progress *bytes.Buffer, exprs ...string) *Judge {
	t.Helper()
	asserts := map[string][]*Assertion{}
	var runAsserts []*Assertion
	for i, e := range exprs {
		a, err := CompileAssertion(schema.Assertion{Expr: e, Pos: schema.Pos{File: "p.cue", Line: i + 1, Col: 1}}, "sweep")
		if err != nil {
			t.Fatal(err)
		}
		if a.Level == LevelRun {
			runAsserts = append(runAsserts, a)
			continue
		}
		asserts["sweep"] = append(asserts["sweep"], a)
	}
	return New(Config{
		Run:     RunInfo{ID: "r1", Plan: "p", Attempt: 1},
		Asserts: asserts, RunAsserts: runAsserts, Measuring: []string{"sweep"},
		Progress: progress,
	})
}

func cellRow(id string, measurement int64, ttft float64) results.Cell {
	return results.Cell{RunID: "r1", Plan: "p", Stage: "sweep", CellID: id, Attempt: 1, Measurement: measurement,
		ISL: 64, OSL: 32, Concurrency: 1, Status: results.StatusOK, TTFTP50Ms: results.Some(ttft)}
}

// Rows in, verdicts out, without a scheduler: each row's row-level
// verdicts as it is fed, the stage's once it ended (once), the run's at
// the end, and what they count.
func TestJudgeRowsInVerdictsOut(t *testing.T) {
	var progress bytes.Buffer
	j := judgeOf(t, &progress, "ttft_p50_ms < 100", "len(rows) == 2", "len(stages.sweep.rows) >= 1")

	rows := j.Row(cellRow("c1", 1, 50), nil)
	if len(rows) != 1 || rows[0].Outcome != results.OutcomePass || rows[0].CellID != "c1" || rows[0].Measurement != 1 {
		t.Fatalf("c1's verdict rows = %+v, want one pass", rows)
	}
	rows = j.Row(cellRow("c2", 1, 150), nil)
	if len(rows) != 1 || rows[0].Outcome != results.OutcomeFail {
		t.Fatalf("c2's verdict rows = %+v, want one fail", rows)
	}
	if !strings.Contains(progress.String(), `✗ assertion "ttft_p50_ms < 100" does not hold`) {
		t.Fatalf("progress = %q, want the failure said", progress.String())
	}
	if got := len(j.Rows("sweep")); got != 2 {
		t.Fatalf("the sweep's current rows: %d, want 2", got)
	}

	stage := j.Stage("sweep")
	if len(stage) != 1 || stage[0].Outcome != results.OutcomePass || stage[0].CellID != "" || stage[0].RunID != "r1" {
		t.Fatalf("the stage's verdict rows = %+v, want one pass, stamped with the run", stage)
	}
	if again := j.Stage("sweep"); again != nil {
		t.Fatalf("a stage judged twice: %+v", again)
	}
	run := j.Run()
	if len(run) != 1 || run[0].Outcome != results.OutcomePass || run[0].Scope != "stage" {
		t.Fatalf("the run's verdict rows = %+v, want one pass", run)
	}
	if j.Baseline() != nil {
		t.Fatal("a baseline judged without a history")
	}

	out := j.Outcome()
	if out.Cells != 2 || len(out.Verdicts) != 4 || len(out.Failed) != 1 || len(out.Inconclusive) != 0 {
		t.Fatalf("outcome: %d cells, %d verdicts, %d failed, %d inconclusive; want 2, 4, 1, 0", out.Cells, len(out.Verdicts), len(out.Failed), len(out.Inconclusive))
	}
	if j.Confirm(cellRow("c2", 1, 150)) {
		t.Fatal("a cell asked to be measured again with nothing inconclusive and no history")
	}
}

// A cell's second measurement is its current row and the one counted: the
// first's passing verdicts give way to it, a failure of the first still
// counts, and the cell is counted once.
func TestJudgeSecondMeasurement(t *testing.T) {
	j := judgeOf(t, &bytes.Buffer{}, "ttft_p50_ms < 100")
	j.Row(cellRow("c1", 1, 50), nil)
	j.Row(cellRow("c2", 1, 150), nil)
	j.Row(cellRow("c1", 2, 60), nil)
	j.Row(cellRow("c2", 2, 60), nil)
	out := j.Outcome()
	if out.Cells != 2 {
		t.Fatalf("cells = %d, want 2: a confirmation is the same cell", out.Cells)
	}
	if len(out.Failed) != 1 || out.Failed[0].CellID != "c2" || out.Failed[0].Measurement != 1 {
		t.Fatalf("failed = %+v, want c2's first measurement", out.Failed)
	}
	if len(out.Verdicts) != 3 {
		t.Fatalf("verdicts = %+v, want c1's first pass superseded", out.Verdicts)
	}
	rows := j.Rows("sweep")
	if len(rows) != 2 || rows[0].Measurement != 2 || rows[1].Measurement != 2 {
		t.Fatalf("current rows = %+v, want the second measurements", rows)
	}
}

// A resumed run's earlier rows are the stage's current rows, and the
// verdicts its earlier attempts judged still count.
func TestJudgeSeeded(t *testing.T) {
	j := New(Config{Run: RunInfo{ID: "r1", Attempt: 2}, Failed: []Verdict{{Assertion: "x", Severity: SeverityFail}}})
	j.Seed([]results.Cell{cellRow("c1", 1, 50), cellRow("c1", 2, 70)})
	if rows := j.Rows("sweep"); len(rows) != 1 || rows[0].Measurement != 2 {
		t.Fatalf("seeded rows = %+v, want c1's latest", rows)
	}
	if out := j.Outcome(); len(out.Failed) != 1 || out.Cells != 0 {
		t.Fatalf("outcome = %+v, want the earlier failure and no cell measured", out)
	}
}

// A check the machine's own lateness could explain is inconclusive: the
// judge asks for the cell once more (Confirm, with why for the second
// row's note), and the second measurement's verdict replaces it.
func TestJudgeInconclusiveAsksOnceMore(t *testing.T) {
	var progress bytes.Buffer
	j := judgeOf(t, &progress, "ttft_p50_ms < 100")
	first := cellRow("c1", 1, 105)
	first.MachineLateP50Ms, first.MachineLateP99Ms, first.MachineLateMaxMs = results.Some(20.0), results.Some(50.0), results.Some(50.0)
	rows := j.Row(first, nil)
	if len(rows) != 1 || rows[0].Outcome != results.OutcomeInconclusive {
		t.Fatalf("verdict rows = %+v, want one inconclusive", rows)
	}
	if out := j.Outcome(); len(out.Inconclusive) != 1 || len(out.Failed) != 0 {
		t.Fatalf("outcome = %+v, want one inconclusive and nothing failed", out)
	}
	if !j.Confirm(first) {
		t.Fatalf("an inconclusive cell not asked for again; progress:\n%s", progress.String())
	}
	if note := j.RemeasureNote("sweep", "c1"); !strings.Contains(note, "inconclusive") {
		t.Fatalf("the second row's note = %q, want why", note)
	}
	if !strings.Contains(progress.String(), "measuring it once more to confirm") {
		t.Fatalf("progress = %q, want the confirmation said", progress.String())
	}
	j.Row(cellRow("c1", 2, 50), nil)
	if out := j.Outcome(); len(out.Inconclusive) != 0 || len(out.Failed) != 0 || len(out.Verdicts) != 1 {
		t.Fatalf("after the second measurement: %+v, want its one passing verdict", out)
	}
	if j.Confirm(cellRow("c1", 2, 50)) {
		t.Fatal("a second measurement asked for a third")
	}
}
