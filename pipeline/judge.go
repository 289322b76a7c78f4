package pipeline

import (
	"slices"
	"time"

	"github.com/benchrun/benchrun/internal/redact"
	"github.com/benchrun/benchrun/internal/results"
)

// keepRow keeps a stage's current row of each cell (the latest emitted)
// for the stage- and run-level assertions. The caller holds emitMu.
func (r *runner) keepRow(c results.Cell) {
	if r.rows == nil {
		r.rows = map[string][]results.Cell{}
	}
	rows := r.rows[c.Stage]
	if i := slices.IndexFunc(rows, func(o results.Cell) bool { return o.CellID == c.CellID && c.CellID != "" }); i >= 0 {
		rows[i] = c
		return
	}
	r.rows[c.Stage] = append(rows, c)
}

// seedRows gives the stage- and run-level assertions of a resumed run the
// current rows its earlier attempts stored (the cells it will not measure
// again count as they were).
func (r *runner) seedRows(prior *Rows) {
	if prior == nil {
		return
	}
	for _, c := range results.LatestCells(prior.Cells) {
		r.keepRow(c)
	}
}

// judgeStage judges a stage's stage-level assertions once it has ended,
// on the current row of each of its cells, and hands the verdicts to the
// sinks (rows with no cell id: the stage's, not a cell's).
func (r *runner) judgeStage(stage string) {
	r.emitMu.Lock()
	defer r.emitMu.Unlock()
	if r.stageJudged[stage] {
		return
	}
	if r.stageJudged == nil {
		r.stageJudged = map[string]bool{}
	}
	r.stageJudged[stage] = true
	var rows []results.Verdict
	now := time.Now().UTC()
	for _, a := range r.asserts[stage] {
		if a.Level != LevelStage {
			continue
		}
		v := redact.Value(a.JudgeStage(stage, slices.Clone(r.rows[stage])))
		rows = append(rows, r.record(r.levelCell(stage), a, v, now))
	}
	r.emitVerdicts(stage, rows)
}

// judgeServices judges the stage-level assertions of the services still
// up (a launch stage's start-up rows): every stage that could use them has
// ended, so their rows are all there. A service released earlier was
// judged then (release).
func (r *runner) judgeServices() {
	for _, n := range r.g.Nodes {
		if r.states[n.Spec.Name].status == StatusUp {
			r.judgeStage(n.Spec.Name)
		}
	}
}

// judgeRun judges the run-level assertions once every stage has ended.
func (r *runner) judgeRun() {
	r.emitMu.Lock()
	defer r.emitMu.Unlock()
	var rows []results.Verdict
	now := time.Now().UTC()
	for _, a := range r.runAsserts {
		v := redact.Value(a.JudgeRun(r.rows))
		rows = append(rows, r.record(r.levelCell(a.Stage), a, v, now))
	}
	r.emitVerdicts("", rows)
}

// levelCell is the row a stage- or run-level verdict is stamped from.
func (r *runner) levelCell(stage string) results.Cell {
	return results.Cell{RunID: r.ri.ID, Plan: r.g.Plan.Name, Stage: stage, Attempt: r.attempt()}
}

func (r *runner) emitVerdicts(stage string, rows []results.Verdict) {
	if len(rows) == 0 {
		return
	}
	if err := r.sinks.verdicts(r.levelCell(stage), redact.Value(rows)); err != nil && r.emitErr == nil {
		r.emitErr = err
	}
}
