package engine

import (
	"github.com/benchrun/benchrun/internal/redact"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/pipeline"
)

// The judging itself, and what it keeps, is the judge's (pipeline/judge):
// the runner feeds it rows as it feeds the sinks, and hands the verdict
// rows it returns to the sinks, under emitMu so that they reach them in
// the order they were judged.

// judgeStage judges a stage's stage-level assertions once it has ended,
// on the current row of each of its cells, and hands the verdicts to the
// sinks (rows with no cell id: the stage's, not a cell's).
func (r *runner) judgeStage(stage string) {
	r.emitMu.Lock()
	defer r.emitMu.Unlock()
	r.emitVerdicts(stage, r.judge.Stage(stage))
}

// judgeServices judges the stage-level assertions of the services still
// up (a launch stage's start-up rows): every stage that could use them has
// ended, so their rows are all there. A service released earlier was
// judged then (release).
func (r *runner) judgeServices() {
	for _, n := range r.g.Nodes {
		if r.states[n.Spec.Name].status == pipeline.StatusUp {
			r.judgeStage(n.Spec.Name)
		}
	}
}

// judgeRun judges the run-level assertions once every stage has ended.
func (r *runner) judgeRun() {
	r.emitMu.Lock()
	defer r.emitMu.Unlock()
	r.emitVerdicts("", r.judge.Run())
}

// judgeBaseline checks every measured cell of the run against its history
// once every stage has ended (judge.Judge.Baseline) and hands the
// verdicts to the sinks, stage by stage.
func (r *runner) judgeBaseline() {
	r.emitMu.Lock()
	defer r.emitMu.Unlock()
	for _, st := range r.judge.Baseline() {
		r.emitVerdicts(st.Stage, st.Rows)
	}
}

func (r *runner) emitVerdicts(stage string, rows []results.Verdict) {
	if len(rows) == 0 {
		return
	}
	if err := r.sinks.verdicts(r.judge.LevelCell(stage), redact.Value(rows)); err != nil && r.emitErr == nil {
		r.emitErr = err
	}
}
