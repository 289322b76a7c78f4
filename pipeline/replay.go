package pipeline

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"

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
	return ReplayWith(dir, uses, ReplayOptions{Status: status, Progress: progress})
}

// ReplayOptions say how ReplayWith drives the sinks.
type ReplayOptions struct {
	// Status is the run's status as the caller found it ("" to take the
	// manifest's); unused with Summary.
	Status string
	// Summary, when set, is the run's outcome the sinks' Stop gets instead
	// of the one the manifest records (a post stage posts the run as
	// judged, before the manifest is final).
	Summary *Summary
	// RunInfo, when set, is the run the rows belong to (a live run's own);
	// nil rebuilds it from the manifest.
	RunInfo *RunInfo
	// Progress is for human lines (nil: discarded); Stdout is for what a
	// sink prints as data (a dry run's document), nil for none.
	Progress, Stdout io.Writer
}

// ReplayWith is Replay with options: `benchrun post` and post stages
// drive remote sinks with it.
func ReplayWith(dir string, uses []*SinkUse, o ReplayOptions) (*Summary, error) {
	progress := o.Progress
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
	ri := o.RunInfo
	if ri == nil {
		ri = replayRunInfo(run, m)
	}
	sum := o.Summary
	if sum == nil {
		status := o.Status
		if status == "" {
			status = run.Status
		}
		sum = &Summary{Run: ri, Cells: len(results.LatestCells(rows.Cells)), Status: status, Interrupted: status == RunInterrupted}
		for _, st := range m.Stages {
			sum.Stages = append(sum.Stages, StageResult(st))
		}
		if m.FinishedAt != nil && status != RunRunning && status != RunCrashed {
			sum.FinishedAt = *m.FinishedAt
		}
		if m.ExitCode != nil {
			sum.ExitCode = *m.ExitCode
		}
	}
	env := &SinkEnv{Run: ri, Progress: progress, Stdout: o.Stdout, Replay: true, Prior: func() (*Rows, error) { return nil, nil }, HistoryRoot: historyRoot(dir)}
	for _, c := range rows.Cells {
		if c.Rate > 0 {
			env.RateLadder = true
		}
		if c.BenchTest != "" {
			env.NamedTests = true
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
	// A cell row is (cell id, attempt, measurement): a confirmation is a
	// second row of one attempt, with its own requests.
	type key struct {
		cell                 string
		attempt, measurement int64
	}
	reqs := map[key][]results.Request{}
	for _, r := range rows.Requests {
		k := key{r.CellID, results.AttemptOf(r.Attempt), results.MeasurementOf(r.Measurement)}
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
	keyOf := func(c results.Cell) key {
		return key{c.CellID, results.AttemptOf(c.Attempt), results.MeasurementOf(c.Measurement)}
	}
	next := 0 // the next cell row to feed
	// feedUntil feeds the cell rows before the next one of the cell and
	// attempt (with no verdicts: they had none) and returns that row;
	// false when no row left is of them (verdicts of a row not stored).
	feedUntil := func(cell string, attempt int64) (results.Cell, bool) {
		for i := next; i < len(rows.Cells); i++ {
			if c := rows.Cells[i]; c.CellID != cell || results.AttemptOf(c.Attempt) != attempt {
				continue
			}
			for ; next < i; next++ {
				c := rows.Cells[next]
				note(ss.cell(c, reqs[keyOf(c)], nil))
			}
			next = i + 1
			return rows.Cells[i], true
		}
		return results.Cell{}, false
	}
	// One judging per group: the verdicts of one cell row (or stage, or
	// run), judged together at one instant.
	same := func(a, b results.Verdict) bool {
		return a.CellID == b.CellID && results.AttemptOf(a.Attempt) == results.AttemptOf(b.Attempt) &&
			a.Stage == b.Stage && a.Level == b.Level && a.JudgedAt.Equal(b.JudgedAt)
	}
	for i := 0; i < len(rows.Verdicts); {
		v := rows.Verdicts[i]
		j := i + 1
		for j < len(rows.Verdicts) && same(rows.Verdicts[j], v) {
			j++
		}
		group := rows.Verdicts[i:j]
		i = j
		stamp := results.Cell{RunID: v.RunID, Plan: v.Plan, Stage: v.Stage, Attempt: v.Attempt}
		if v.CellID == "" || v.Level == LevelRegression {
			// A stage's or the run's, or judged after its cell at the end
			// of the run (a regression check against history): handed on
			// as the run did.
			note(ss.verdicts(stamp, group))
			continue
		}
		if c, ok := feedUntil(v.CellID, results.AttemptOf(v.Attempt)); ok {
			note(ss.cell(c, reqs[keyOf(c)], group))
		} else {
			note(ss.verdicts(stamp, group))
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
	return sinksFromRecords(reg, recs, params, func(k SinkKind) bool { return !k.Remote })
}

// PostSinks are the remote sinks `benchrun post RUN_DIR` drives: those
// the run's manifest records (its post stages' and any others of a
// remote kind), or, when names are given, those of them so named; a name
// no record has that is a remote kind (`--sink siyuan`) is that kind with
// its defaults and params.
func PostSinks(reg *Registry, dir string, names []string, params map[string]any) ([]*SinkUse, error) {
	var recs []SinkRecord
	if m, err := rundir.ReadManifest(dir); err == nil {
		recs = m.Sinks
	}
	remote := func(k SinkKind) bool { return k.Remote }
	if len(names) == 0 {
		uses, err := sinksFromRecords(reg, recs, params, remote)
		if err == nil && len(uses) == 0 {
			err = fmt.Errorf("the run's plan posts nowhere (no sink of kind %s): name one with --sink KIND", strings.Join(remoteKinds(reg), " or "))
		}
		return uses, err
	}
	var chosen []SinkRecord
	for _, name := range names {
		i := slices.IndexFunc(recs, func(r SinkRecord) bool { return r.Name == name })
		switch k, ok := reg.Sink(name); {
		case i >= 0:
			if k, _ := reg.Sink(recs[i].Kind); !k.Remote {
				return nil, fmt.Errorf("--sink %s: the run's %s sink is of kind %s, which writes files (benchrun report RUN_DIR writes them again); post sends to %s", name, name, recs[i].Kind, strings.Join(remoteKinds(reg), ", "))
			}
			chosen = append(chosen, recs[i])
		case ok && k.Remote:
			chosen = append(chosen, SinkRecord{Name: name, Kind: name, Required: true})
		default:
			var have []string
			for _, r := range recs {
				if k, _ := reg.Sink(r.Kind); k.Remote {
					have = append(have, r.Name)
				}
			}
			return nil, fmt.Errorf("--sink %s: the run has no sink so named (its remote sinks: %s) and it is no remote sink kind (%s)", name, orNone(have), strings.Join(remoteKinds(reg), ", "))
		}
	}
	return sinksFromRecords(reg, chosen, params, remote)
}

func remoteKinds(reg *Registry) []string {
	var out []string
	for _, k := range reg.Sinks() {
		if k.Remote {
			out = append(out, k.Name)
		}
	}
	return out
}

func orNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}

// sinksFromRecords rebuilds the recorded sinks of the kinds keep accepts
// from their recorded configuration, with params (command-line flags)
// over it.
func sinksFromRecords(reg *Registry, recs []SinkRecord, params map[string]any, keep func(SinkKind) bool) ([]*SinkUse, error) {
	var uses []*SinkUse
	for _, rec := range recs {
		k, ok := reg.Sink(rec.Kind)
		if !ok {
			// A sink an embedder or a test attached (not registered): its
			// files are not this benchrun's to write again.
			continue
		}
		if k.Durable || k.New == nil || !keep(k) {
			continue
		}
		spec := SinkSpec{Kind: k.Name, Name: rec.Name, Params: maps.Clone(rec.Config), Index: -1}
		if spec.Params == nil {
			spec.Params = map[string]any{}
		}
		// A replay writes where its own command line says, or where the
		// plan said relative to where it runs, never where an edited
		// manifest says: a recorded prefix that is absolute or climbs out
		// (..) is not replayed.
		if p, ok := spec.Params["prefix"].(string); ok && p != "" && !localPath(p) {
			delete(spec.Params, "prefix")
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

// localPath says whether p names a place under the current directory: a
// relative path that does not climb out of it.
func localPath(p string) bool {
	return filepath.IsLocal(p)
}
