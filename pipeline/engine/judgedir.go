package engine

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/benchrun/benchrun/internal/redact"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/rundir"
	"github.com/benchrun/benchrun/pipeline"
)

// JudgeOptions say how JudgeDir judges a run directory.
type JudgeOptions struct {
	// Baseline is --baseline: the runs folder the regression check reads
	// the history from, over the plan's baseline.runs (Options.Baseline).
	Baseline string
	// HistoryRoot is where the history is when neither baseline.runs nor
	// Baseline says (a merged run's: the runs folder its shards were filed
	// under); "" is a run's own rule, the runs folder the directory is
	// filed under.
	HistoryRoot string
	// Progress receives what a run says of its verdicts (each failure, the
	// baseline's line); nil discards it.
	Progress io.Writer
	// Failure, when set, is why the run failed besides what its rows and
	// stages record (a merged run: a shard that did not end ok, for
	// another reason than its own checks): the run exits 3 with it. The
	// manifest's own status is not read: JudgeDir decides it afresh.
	Failure string
	// Store writes the verdict rows to the run directory's assertions
	// table, in the order a live run hands them to its sinks; JudgeDir
	// calls it once, before the manifest records the outcome. nil stores
	// nothing (the verdicts are still in the summary and the manifest).
	Store func(rows []results.Verdict) error
}

// JudgeDir judges the rows stored in the run directory dir as the run
// that wrote them is judged, with the pipeline's own judging: the
// row-level assertions of g's plan on each cell's current row (with its
// requests and, for `baseline.COLUMN`, the history's row), the
// stage-level ones on each stage's rows, the run-level ones across
// stages, then the plan's baseline (regressions against the history).
// The verdict rows go to o.Store; the manifest records the outcome as a
// run's does (status, reason, exit code, the failed checks). The summary's
// ExitCode is the run's: 3 when the manifest records a failed stage (or
// o.Failure says the run failed), or a stage's current cell row is an
// error, else 1 when a check failed (an assertion or a regression), else 0.
//
// `benchrun merge` judges the run it recomputed from its shards with it,
// so a merged run is judged exactly like one process's. The directory
// needs its manifest; g is the plan it ran (plan.cue, loaded with the
// manifest's tags).
func JudgeDir(ctx context.Context, g *pipeline.Graph, dir string, o JudgeOptions) (*pipeline.Summary, error) {
	progress := o.Progress
	if progress == nil {
		progress = io.Discard
	}
	run, err := rundir.Open(dir)
	if err != nil {
		return nil, err
	}
	if run.Manifest == nil {
		return nil, fmt.Errorf("%s has no manifest.json: nothing says which run its rows are", dir)
	}
	rows, err := run.Rows()
	if err != nil {
		return nil, err
	}
	RegisterPlanSecrets(g.Plan)
	ri := replayRunInfo(run, run.Manifest)
	ri.Plan = g.Plan
	col := &verdictCollector{}
	r := &runner{g: g, ri: ri, opts: Options{Progress: progress, Baseline: o.Baseline}, states: map[string]*nodeState{},
		historyRoot: o.HistoryRoot}
	r.sinks = newSinkSet([]*pipeline.SinkUse{{Kind: pipeline.SinkKind{Name: "judge", Durable: true}, Sink: col}}, progress)
	recorded := map[string]pipeline.StageResult{}
	for _, st := range run.Manifest.Stages {
		recorded[st.Name] = pipeline.StageResult(st)
	}
	for _, n := range g.Nodes {
		st := &nodeState{node: n, status: pipeline.StatusPending}
		if rec, ok := recorded[n.Spec.Name]; ok {
			st.status, st.reason, st.attempts = rec.Status, rec.Reason, rec.Attempts
			st.duration = time.Duration(rec.DurationS * float64(time.Second))
		}
		r.states[n.Spec.Name] = st
	}
	r.judge = r.newJudge()

	// The rows as a run emits them: each cell's current row with its
	// requests, judged at its level as it arrives.
	latest := results.LatestCells(rows.Cells)
	// Every measurement of the current attempt, in order: a cell measured
	// once more is judged as the run judged it (a failure of the first
	// that the machine cannot explain still counts).
	for _, c := range results.AttemptMeasurements(rows.Cells) {
		r.tally.add(c)
		if err := r.emit(c, rows.Requests.Of(rundir.KeyOf(c))); err != nil {
			return nil, err
		}
	}
	// Then each stage that ran, as it ends (a stage's cells error: it is
	// not ok, as the runner finds), then the run.
	for _, n := range g.Nodes {
		name := n.Spec.Name
		st := r.states[name]
		if st.status == pipeline.StatusPending && len(r.judge.Rows(name)) > 0 {
			st.status = pipeline.StatusOK // not recorded, yet it has rows
		}
		if why := r.tally.errorReason(name); why != "" && (st.status == pipeline.StatusOK || st.status == pipeline.StatusUp) {
			st.status, st.reason = pipeline.StatusError, why
		}
		if st.status != pipeline.StatusPending && st.status != pipeline.StatusSkipped {
			r.judgeStage(name)
		}
	}
	r.judged = true
	r.judgeRun()
	if ctx.Err() == nil {
		r.judgeBaseline()
	}

	sum := r.summary(ctx)
	sum.Cells = len(latest)
	if o.Failure != "" && (sum.ExitCode == pipeline.ExitOK || sum.ExitCode == pipeline.ExitAssertion) {
		sum.ExitCode, sum.Reason = pipeline.ExitInfra, o.Failure
	}
	if m := run.Manifest; m.FinishedAt != nil {
		sum.FinishedAt = *m.FinishedAt
	}
	redactSummary(sum)
	if o.Store != nil {
		if err := o.Store(redact.Value(col.rows)); err != nil {
			return sum, fmt.Errorf("storing the verdicts: %w", err)
		}
	}
	if err := recordJudgement(dir, sum); err != nil {
		return sum, err
	}
	return sum, nil
}

// recordJudgement writes a judged run's outcome into its manifest, as a
// run's end does: status, reason, exit code and the failed checks.
func recordJudgement(dir string, sum *pipeline.Summary) error {
	m, err := rundir.ReadManifest(dir)
	if err != nil {
		return err
	}
	status := pipeline.RunFailed
	switch {
	case sum.Interrupted:
		status = pipeline.RunInterrupted
	case sum.ExitCode == pipeline.ExitOK:
		status = pipeline.RunOK
	}
	recordOutcome(m, sum)
	m.Finish(status, sum.Reason, sum.ExitCode, sum.FinishedAt)
	return writeManifest(dir, m)
}

// verdictCollector is the sink JudgeDir's runner hands verdict rows to:
// it keeps them, in order, for JudgeOptions.Store.
type verdictCollector struct{ rows []results.Verdict }

var (
	_ pipeline.Sink        = (*verdictCollector)(nil)
	_ pipeline.VerdictSink = (*verdictCollector)(nil)
)

func (*verdictCollector) Name() string                              { return "judge" }
func (*verdictCollector) Start(*pipeline.SinkEnv) error             { return nil }
func (*verdictCollector) Cell(results.Cell, results.Requests) error { return nil }
func (*verdictCollector) Stop(*pipeline.Summary) error              { return nil }
func (v *verdictCollector) Verdicts(_ results.Cell, rows []results.Verdict) error {
	v.rows = append(v.rows, rows...)
	return nil
}
