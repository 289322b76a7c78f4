package judge

import (
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/benchrun/benchrun/internal/redact"
	"github.com/benchrun/benchrun/internal/results"
)

// RunInfo is what the judge knows of the run whose rows it judges: the
// identity a stage's or the run's verdict row is stamped with, and what
// the regression check calls the run.
type RunInfo struct {
	ID, Plan, Dir string
	// StartedAt is the run's first start (a resumed run's earliest).
	StartedAt time.Time
	// Attempt is the number every row of this attempt carries.
	Attempt int64
}

// Config is what a Judge judges with: the plan's compiled assertions, its
// baseline history, and the run.
type Config struct {
	Run RunInfo
	// Asserts are the row- and stage-level assertions, by the stage whose
	// rows they judge; RunAsserts the run-level ones.
	Asserts    map[string][]*Assertion
	RunAsserts []*Assertion
	// Measuring are the stages that measure, in plan order: the rows the
	// regression check judges.
	Measuring []string
	// History is the plan's baseline history (nil: no baseline).
	History *History
	// Failed and Inconclusive are verdicts earlier attempts judged on
	// cells a resume does not measure again: they still count.
	Failed, Inconclusive []Verdict
	// Progress receives what people read of the verdicts (each failure,
	// the baseline's line); nil discards it.
	Progress io.Writer
}

// Judge judges a run's rows as they are fed to it, the way a sink takes
// them: a cell row as it is emitted (its row-level assertions), a stage
// once it has ended, the run and its baseline at the end. It keeps what
// the judging needs (each stage's current rows, the verdicts, which cells
// to measure once more) under its own lock, and knows nothing of the
// scheduler: the runner decides when a stage has ended, and re-measures a
// cell the judge asks for again (Confirm). Rows in, verdict rows out.
type Judge struct {
	run        RunInfo
	asserts    map[string][]*Assertion
	runAsserts []*Assertion
	measuring  []string
	history    *History
	progress   io.Writer

	mu sync.Mutex
	// rows are each stage's current cell rows, for stage- and run-level
	// assertions.
	rows map[string][]results.Cell
	// stageJudged are the stages whose stage-level assertions were judged
	// (once each).
	stageJudged map[string]bool
	// baseCells says the row-level assertions read `baseline.COLUMN` and
	// the history can be read: each cell's row is read as it ends
	// (baselineCell).
	baseCells bool
	verdicts  []Verdict
	failed    []Verdict
	// inconclusive are the checks the machine's lateness could explain
	// (the latest measurement's).
	inconclusive []Verdict
	// remeasure names the cells (stage, cell id) whose first measurement
	// left a check inconclusive, with why: Confirm asks for them once more.
	remeasure map[[2]string]string
	cells     int
	// confirmations are the cells re-measured for baseline.confirm, by
	// cell id, with what their first measurement read.
	confirmations map[string]confirmation
}

// New makes a judge of cfg's run. When row-level assertions read
// `baseline.COLUMN` and the history cannot be read, it says so on the
// progress writer: those assertions then say no cell matched.
func New(cfg Config) *Judge {
	j := &Judge{
		run: cfg.Run, asserts: cfg.Asserts, runAsserts: cfg.RunAsserts, measuring: cfg.Measuring,
		history: cfg.History, progress: cfg.Progress,
		failed:       slices.Clone(cfg.Failed),
		inconclusive: slices.Clone(cfg.Inconclusive),
	}
	if j.progress == nil {
		j.progress = io.Discard
	}
	j.loadBaselineCells()
	return j
}

// Outcome is what a run's judging counts: every verdict, those that fail
// the run, those the machine's lateness could explain, and the cells
// measured (a confirmation is the same cell, measured again).
type Outcome struct {
	Verdicts, Failed, Inconclusive []Verdict
	Cells                          int
}

// Outcome is the judging so far.
func (j *Judge) Outcome() Outcome {
	j.mu.Lock()
	defer j.mu.Unlock()
	return Outcome{Verdicts: j.verdicts, Failed: j.failed, Inconclusive: j.inconclusive, Cells: j.cells}
}

// Seed gives the stage- and run-level assertions of a resumed run the
// current rows its earlier attempts stored (the cells it will not measure
// again count as they were).
func (j *Judge) Seed(cells []results.Cell) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, c := range results.LatestCells(cells) {
		j.keepRow(c)
	}
}

// Rows returns a copy of the stage's current row of each cell, in the
// order they were first fed.
func (j *Judge) Rows(stage string) []results.Cell {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.rows[stage])
}

// RemeasureNote is why the cell of stage was measured once more ("" when
// the judge did not ask for it): the second row's note.
func (j *Judge) RemeasureNote(stage, cellID string) string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.remeasure[[2]string{stage, cellID}]
}

// Row judges a cell row, stamped and redacted, with its requests: its
// row-level assertions (a stage's and the run's are judged when they
// end), and keeps it as its cell's current row. It returns the verdict
// rows for the assertions table. A later measurement of a cell replaces
// what the earlier one's passing or inconclusive verdicts counted
// (supersede).
func (j *Judge) Row(cell results.Cell, reqs results.Requests) []results.Verdict {
	j.mu.Lock()
	defer j.mu.Unlock()
	if cell.Measurement == 1 {
		j.cells++ // a confirmation is the same cell, measured again
	}
	j.supersede(cell)
	now := time.Now().UTC()
	var rows []results.Verdict
	for _, a := range j.asserts[cell.Stage] {
		if a.Level != LevelRow {
			continue // judged when the stage (or the run) ends
		}
		var base *results.Cell
		if a.ReadsBaseline {
			base = j.baselineCell(cell)
		}
		v := redact.Value(a.JudgeRow(cell, reqs, base))
		rows = append(rows, j.record(cell, a, v, now))
		if v.Inconclusive && !v.TooFewSamples && v.Severity != SeverityWarn && cell.Measurement == 1 {
			j.wantRemeasure(cell, fmt.Sprintf("%s inconclusive", What(v)))
		}
	}
	j.keepRow(cell)
	return redact.Value(rows)
}

// keepRow keeps a stage's current row of each cell (the latest fed) for
// the stage- and run-level assertions. The caller holds mu.
func (j *Judge) keepRow(c results.Cell) {
	if j.rows == nil {
		j.rows = map[string][]results.Cell{}
	}
	rows := j.rows[c.Stage]
	if i := slices.IndexFunc(rows, func(o results.Cell) bool { return o.CellID == c.CellID && c.CellID != "" }); i >= 0 {
		rows[i] = c
		return
	}
	j.rows[c.Stage] = append(rows, c)
}

// Stage judges a stage's stage-level assertions once it has ended, on the
// current row of each of its cells, and returns their verdict rows (rows
// with no cell id: the stage's, not a cell's); nil once it was judged.
func (j *Judge) Stage(stage string) []results.Verdict {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.stageJudged[stage] {
		return nil
	}
	if j.stageJudged == nil {
		j.stageJudged = map[string]bool{}
	}
	j.stageJudged[stage] = true
	var rows []results.Verdict
	now := time.Now().UTC()
	for _, a := range j.asserts[stage] {
		if a.Level != LevelStage {
			continue
		}
		v := redact.Value(a.JudgeStage(stage, slices.Clone(j.rows[stage])))
		rows = append(rows, j.record(j.LevelCell(stage), a, v, now))
	}
	return rows
}

// Run judges the run-level assertions once every stage has ended and
// returns their verdict rows.
func (j *Judge) Run() []results.Verdict {
	j.mu.Lock()
	defer j.mu.Unlock()
	var rows []results.Verdict
	now := time.Now().UTC()
	for _, a := range j.runAsserts {
		v := redact.Value(a.JudgeRun(j.rows))
		rows = append(rows, j.record(j.LevelCell(a.Stage), a, v, now))
	}
	return rows
}

// LevelCell is the row a stage- or run-level verdict is stamped from.
func (j *Judge) LevelCell(stage string) results.Cell {
	return results.Cell{RunID: j.run.ID, Plan: j.run.Plan, Stage: stage, Attempt: j.run.Attempt}
}
