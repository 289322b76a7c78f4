package pipeline

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/rundir"
	"github.com/benchrun/benchrun/schema"
)

// Replay drives sinks from a run directory as the live run drove them:
// Start, then Cell and Verdicts for every stored cell row in the order
// the rows were stored (every attempt's), the samples, then Stop with the
// run's outcome as its manifest records it. A sink thus writes the same
// files from a finished, failed or killed run as it wrote (or would have
// written) live: `benchrun report RUN_DIR` is a replay. Durable sinks are
// the source of a replay and are not driven. status is the run's status
// as the caller found it ("" to take the manifest's; "crashed" for one
// that says running with no writer).
func Replay(dir string, uses []*SinkUse, status string, progress io.Writer) (*Summary, error) {
	if progress == nil {
		progress = io.Discard
	}
	run, err := rundir.Open(dir)
	if err != nil {
		return nil, err
	}
	rows, err := run.Rows()
	if err != nil {
		return nil, err
	}
	m := run.Manifest
	if m == nil {
		m = &rundir.Manifest{RunID: run.ID(), Status: rundir.RunIncomplete}
	}
	ri := replayRunInfo(run, m)
	if status == "" {
		status = run.Status
	}
	sum := &Summary{Run: ri, Cells: len(results.LatestCells(rows.Cells)), Status: status, Interrupted: status == RunInterrupted}
	for _, st := range m.Stages {
		sum.Stages = append(sum.Stages, StageResult(st))
	}
	if m.FinishedAt != nil && status != RunRunning && status != RunCrashed {
		sum.FinishedAt = *m.FinishedAt
	}
	if m.ExitCode != nil {
		sum.ExitCode = *m.ExitCode
	}
	env := &SinkEnv{Run: ri, Progress: progress, Replay: true, Prior: func() (*Rows, error) { return nil, nil }}
	for _, c := range rows.Cells {
		if c.Rate > 0 {
			env.RateLadder = true
		}
	}
	var live []*SinkUse
	for _, u := range uses {
		if u.Sink != nil && !u.Kind.Durable {
			live = append(live, u)
		}
	}
	ss := newSinkSet(live, progress)
	if err := ss.start(env); err != nil {
		return nil, err
	}
	type key struct {
		cell    string
		attempt int64
	}
	reqs := map[key][]results.Request{}
	for _, r := range rows.Requests {
		k := key{r.CellID, results.AttemptOf(r.Attempt)}
		reqs[k] = append(reqs[k], r)
	}
	// Verdicts in the order stored: a cell's come right after its row,
	// and a stage's or the run's (no cell id) where they were judged, so
	// the cells before them are fed first.
	var firstErr error
	note := func(err error) {
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	keyOf := func(c results.Cell) key { return key{c.CellID, results.AttemptOf(c.Attempt)} }
	next := 0 // the next cell row to feed
	fed := map[key]bool{}
	// feedUntil feeds the cell rows before the one of key k (with no
	// verdicts: they had none) and returns that row; false when no row
	// left has that key (verdicts of a row that was not stored).
	feedUntil := func(k key) (results.Cell, bool) {
		for i := next; i < len(rows.Cells); i++ {
			if keyOf(rows.Cells[i]) != k {
				continue
			}
			for ; next < i; next++ {
				c := rows.Cells[next]
				fed[keyOf(c)] = true
				note(ss.cell(c, reqs[keyOf(c)], nil))
			}
			next = i + 1
			fed[k] = true
			return rows.Cells[i], true
		}
		return results.Cell{}, false
	}
	for i := 0; i < len(rows.Verdicts); {
		v := rows.Verdicts[i]
		k := key{v.CellID, results.AttemptOf(v.Attempt)}
		j := i + 1
		for j < len(rows.Verdicts) && (key{rows.Verdicts[j].CellID, results.AttemptOf(rows.Verdicts[j].Attempt)}) == k && rows.Verdicts[j].Stage == v.Stage {
			j++
		}
		group := rows.Verdicts[i:j]
		i = j
		if v.CellID == "" {
			note(ss.verdicts(results.Cell{RunID: v.RunID, Plan: v.Plan, Stage: v.Stage, Attempt: v.Attempt}, group))
			continue
		}
		if fed[k] {
			// Judged after its cell, at the end of the run (a regression
			// check against history): handed on as the run did.
			note(ss.verdicts(results.Cell{RunID: v.RunID, Plan: v.Plan, Stage: v.Stage, Attempt: v.Attempt}, group))
			continue
		}
		if c, ok := feedUntil(k); ok {
			note(ss.cell(c, reqs[k], group))
		}
	}
	for ; next < len(rows.Cells); next++ {
		c := rows.Cells[next]
		note(ss.cell(c, reqs[keyOf(c)], nil))
	}
	if len(rows.Samples) > 0 {
		if err := ss.samples(rows.Samples); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	if reason := ss.stop(sum); reason != "" && firstErr == nil {
		firstErr = fmt.Errorf("%s", reason)
	}
	sum.Sinks = ss.records()
	if firstErr == nil {
		firstErr = errorOfRecords(sum.Sinks)
	}
	return sum, firstErr
}

// errorOfRecords is the first required sink's failure in records.
func errorOfRecords(recs []SinkRecord) error {
	for _, r := range recs {
		if r.Status == SinkFailed {
			return fmt.Errorf("sink %s: %s", r.Name, r.LastError)
		}
	}
	return nil
}

// ReplaySinks are the sinks a replay of the run in dir drives: the
// non-durable sinks its manifest records, rebuilt from their recorded
// configuration with params (command-line flags) over it; for a run whose
// manifest records none (made before sinks were recorded), the
// registry's default ones.
func ReplaySinks(reg *Registry, dir string, params map[string]any) ([]*SinkUse, error) {
	var recs []SinkRecord
	if m, err := rundir.ReadManifest(dir); err == nil {
		recs = m.Sinks
	}
	if len(recs) == 0 {
		for _, name := range reg.sinkOrder {
			if k := reg.sinks[name]; k.isDefault() {
				recs = append(recs, SinkRecord{Name: k.Name, Kind: k.Name, Required: true})
			}
		}
	}
	var uses []*SinkUse
	for _, rec := range recs {
		k, ok := reg.Sink(rec.Kind)
		if !ok {
			// A sink an embedder or a test attached (not registered): its
			// files are not this benchrun's to write again.
			continue
		}
		if k.Durable || k.New == nil {
			continue
		}
		spec := SinkSpec{Kind: k.Name, Name: rec.Name, Params: maps.Clone(rec.Config), Index: -1}
		if spec.Params == nil {
			spec.Params = map[string]any{}
		}
		for flag, v := range params {
			if slices.Contains(k.Flags, flag) {
				spec.Params[flag] = v
			}
		}
		s, err := k.New(spec)
		if err != nil {
			return nil, fmt.Errorf("sink %s: %w", rec.Name, err)
		}
		uses = append(uses, &SinkUse{Kind: k, Spec: spec, Sink: s, Optional: !rec.Required, Attempts: defaultSinkAttempts, Backoff: defaultSinkBackoff})
	}
	return uses, nil
}

// replayRunInfo rebuilds what the sinks read of a run from its manifest
// and plan.json: the identity its rows were stamped with, not this
// machine's.
func replayRunInfo(run *rundir.Run, m *rundir.Manifest) *RunInfo {
	p := &schema.Plan{Name: m.Plan, Metadata: m.Metadata}
	var plan struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		Model       struct {
			Name string `json:"name"`
		} `json:"model"`
	}
	if len(run.PlanJSON) > 0 && json.Unmarshal(run.PlanJSON, &plan) == nil {
		p.Description, p.Model.Name = plan.Description, plan.Model.Name
		if p.Name == "" {
			p.Name = plan.Name
		}
	}
	attempt := len(m.AttemptRecords())
	return &RunInfo{
		ID: run.ID(), Plan: p, Dir: run.Dir, StartedAt: m.StartedAt, Tags: m.Tags, Attempt: max(attempt, 1), Resumed: attempt > 1,
		identity: &Identity{ModelDigest: m.ModelDigest, Hostname: m.Host.Hostname, Hardware: m.Hardware, BenchrunVersion: m.Benchrun},
	}
}
