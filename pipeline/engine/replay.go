package engine

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
	"github.com/benchrun/benchrun/pipeline"
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
func Replay(dir string, uses []*pipeline.SinkUse, status string, progress io.Writer) (*pipeline.Summary, error) {
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
	Summary *pipeline.Summary
	// RunInfo, when set, is the run the rows belong to (a live run's own);
	// nil rebuilds it from the manifest.
	RunInfo *pipeline.RunInfo
	// Progress is for human lines (nil: discarded); Stdout is for what a
	// sink prints as data (a dry run's document), nil for none.
	Progress, Stdout io.Writer
}

// ReplayWith is Replay with options: `benchrun post` and post stages
// drive remote sinks with it.
func ReplayWith(dir string, uses []*pipeline.SinkUse, o ReplayOptions) (*pipeline.Summary, error) {
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
		sum = recordedSummary(ri, m, rows, status)
	}
	env := &pipeline.SinkEnv{Run: ri, Progress: progress, Stdout: o.Stdout, Replay: true, Prior: func() (*pipeline.Rows, error) { return nil, nil }, HistoryRoot: historyRoot(dir)}
	for _, c := range rows.Cells {
		if c.Rate > 0 {
			env.RateLadder = true
		}
		if c.BenchTest != "" {
			env.NamedTests = true
		}
	}
	var live []*pipeline.SinkUse
	for _, u := range uses {
		if u.Sink != nil && !u.Kind.Durable {
			live = append(live, u)
		}
	}
	ss := newSinkSet(live, progress)
	if err := ss.start(env); err != nil {
		return nil, err
	}
	f := newReplayFeeder(ss, rows)
	f.feed()
	if reason := ss.stop(sum); reason != "" {
		f.note(fmt.Errorf("%s", reason))
	}
	sum.Sinks = ss.records()
	if f.firstErr == nil {
		f.firstErr = errorOfRecords(sum.Sinks)
	}
	return sum, f.firstErr
}

// recordedSummary is the run's outcome as its manifest records it, with
// status as the caller found the run.
func recordedSummary(ri *pipeline.RunInfo, m *rundir.Manifest, rows *pipeline.Rows, status string) *pipeline.Summary {
	sum := &pipeline.Summary{Run: ri, Cells: len(results.LatestCells(rows.Cells)), Status: status, Interrupted: status == pipeline.RunInterrupted}
	for _, st := range m.Stages {
		sum.Stages = append(sum.Stages, pipeline.StageResult(st))
	}
	if m.FinishedAt != nil && status != pipeline.RunRunning && status != pipeline.RunCrashed {
		sum.FinishedAt = *m.FinishedAt
	}
	if m.ExitCode != nil {
		sum.ExitCode = *m.ExitCode
	}
	return sum
}

// replayFeeder hands a run's stored rows to the sinks in the order the run
// emitted them: each cell row with its requests and verdicts, a stage's or
// the run's verdicts where they were judged, the samples last.
type replayFeeder struct {
	ss       sinkSet
	rows     *pipeline.Rows
	next     int // the next cell row to feed
	firstErr error
}

func newReplayFeeder(ss sinkSet, rows *pipeline.Rows) *replayFeeder {
	return &replayFeeder{ss: ss, rows: rows}
}

// requestsOf is cell row c's requests, read from the run directory as a
// sink reads them (a confirmation is a second row of one attempt, with
// its own requests).
func (f *replayFeeder) requestsOf(c results.Cell) results.Requests {
	if f.rows.Requests == nil {
		return nil
	}
	return f.rows.Requests.Of(rundir.KeyOf(c))
}

func (f *replayFeeder) note(err error) {
	if err != nil && f.firstErr == nil {
		f.firstErr = err
	}
}

// feed hands every row on. Verdicts go in the order stored: a cell's come
// right after its row, and a stage's or the run's (no cell id) where they
// were judged, so the cells before them are fed first.
func (f *replayFeeder) feed() {
	vs := f.rows.Verdicts
	for i := 0; i < len(vs); {
		j := i + 1
		for j < len(vs) && sameJudging(vs[j], vs[i]) {
			j++
		}
		f.verdicts(vs[i:j])
		i = j
	}
	for ; f.next < len(f.rows.Cells); f.next++ {
		c := f.rows.Cells[f.next]
		f.note(f.ss.cell(c, f.requestsOf(c), nil))
	}
	if len(f.rows.Samples) > 0 {
		f.note(f.ss.samples(f.rows.Samples))
	}
}

// sameJudging says two verdicts were judged together: one cell row's (or
// stage's, or the run's), at one instant.
func sameJudging(a, b results.Verdict) bool {
	return a.CellID == b.CellID && results.AttemptOf(a.Attempt) == results.AttemptOf(b.Attempt) &&
		a.Stage == b.Stage && a.Level == b.Level && a.JudgedAt.Equal(b.JudgedAt)
}

// verdicts hands on one judging's verdicts: with their cell row when they
// judged one that is stored, else on their own.
func (f *replayFeeder) verdicts(group []results.Verdict) {
	v := group[0]
	stamp := results.Cell{RunID: v.RunID, Plan: v.Plan, Stage: v.Stage, Attempt: v.Attempt}
	if v.CellID == "" || v.Level == pipeline.LevelRegression {
		// A stage's or the run's, or judged after its cell at the end
		// of the run (a regression check against history): handed on
		// as the run did.
		f.note(f.ss.verdicts(stamp, group))
		return
	}
	if c, ok := f.feedUntil(v.CellID, results.AttemptOf(v.Attempt)); ok {
		f.note(f.ss.cell(c, f.requestsOf(c), group))
		return
	}
	f.note(f.ss.verdicts(stamp, group))
}

// feedUntil feeds the cell rows before the next one of the cell and
// attempt (with no verdicts: they had none) and returns that row; false
// when no row left is of them (verdicts of a row not stored).
func (f *replayFeeder) feedUntil(cell string, attempt int64) (results.Cell, bool) {
	cells := f.rows.Cells
	for i := f.next; i < len(cells); i++ {
		if c := cells[i]; c.CellID != cell || results.AttemptOf(c.Attempt) != attempt {
			continue
		}
		for ; f.next < i; f.next++ {
			c := cells[f.next]
			f.note(f.ss.cell(c, f.requestsOf(c), nil))
		}
		f.next = i + 1
		return cells[i], true
	}
	return results.Cell{}, false
}

// errorOfRecords is the first required sink's failure in records.
func errorOfRecords(recs []pipeline.SinkRecord) error {
	for _, r := range recs {
		if r.Status == pipeline.SinkFailed {
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
func ReplaySinks(reg *pipeline.Registry, dir string, params map[string]any) ([]*pipeline.SinkUse, error) {
	var recs []pipeline.SinkRecord
	if m, err := rundir.ReadManifest(dir); err == nil {
		recs = m.Sinks
	}
	if len(recs) == 0 {
		for _, k := range reg.DefaultSinkKinds() {
			recs = append(recs, pipeline.SinkRecord{Name: k.Name, Kind: k.Name, Required: true})
		}
	}
	return sinksFromRecords(reg, recs, params, func(k pipeline.SinkKind) bool { return !k.Remote })
}

// PostSinks are the remote sinks `benchrun post RUN_DIR` drives: those
// the run's manifest records (its post stages' and any others of a
// remote kind), or, when names are given, those of them so named; a name
// no record has that is a remote kind (`--sink siyuan`) is that kind with
// its defaults and params.
func PostSinks(reg *pipeline.Registry, dir string, names []string, params map[string]any) ([]*pipeline.SinkUse, error) {
	var recs []pipeline.SinkRecord
	if m, err := rundir.ReadManifest(dir); err == nil {
		recs = m.Sinks
	}
	remote := func(k pipeline.SinkKind) bool { return k.Remote }
	if len(names) == 0 {
		uses, err := sinksFromRecords(reg, recs, params, remote)
		if err == nil && len(uses) == 0 {
			err = fmt.Errorf("the run's plan posts nowhere (no sink of kind %s): name one with --sink KIND", strings.Join(remoteKinds(reg), " or "))
		}
		return uses, err
	}
	var chosen []pipeline.SinkRecord
	for _, name := range names {
		i := slices.IndexFunc(recs, func(r pipeline.SinkRecord) bool { return r.Name == name })
		switch k, ok := reg.Sink(name); {
		case i >= 0:
			if k, _ := reg.Sink(recs[i].Kind); !k.Remote {
				return nil, fmt.Errorf("--sink %s: the run's %s sink is of kind %s, which writes files (benchrun report RUN_DIR writes them again); post sends to %s", name, name, recs[i].Kind, strings.Join(remoteKinds(reg), ", "))
			}
			chosen = append(chosen, recs[i])
		case ok && k.Remote:
			chosen = append(chosen, pipeline.SinkRecord{Name: name, Kind: name, Required: true})
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

func remoteKinds(reg *pipeline.Registry) []string {
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
func sinksFromRecords(reg *pipeline.Registry, recs []pipeline.SinkRecord, params map[string]any, keep func(pipeline.SinkKind) bool) ([]*pipeline.SinkUse, error) {
	var uses []*pipeline.SinkUse
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
		spec := pipeline.SinkSpec{Kind: k.Name, Name: rec.Name, Params: maps.Clone(rec.Config), Index: -1}
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
		uses = append(uses, &pipeline.SinkUse{Kind: k, Spec: spec, Sink: s, Optional: !rec.Required, Attempts: pipeline.DefaultSinkAttempts, Backoff: pipeline.DefaultSinkBackoff})
	}
	return uses, nil
}

// replayRunInfo rebuilds what the sinks read of a run from its manifest
// and plan.json: the identity its rows were stamped with, not this
// machine's.
func replayRunInfo(run *rundir.Run, m *rundir.Manifest) *pipeline.RunInfo {
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
	return &pipeline.RunInfo{
		ID: run.ID(), Plan: p, Dir: run.Dir, StartedAt: m.StartedAt, Tags: m.Tags, Attempt: max(attempt, 1), Resumed: attempt > 1,
		Identity: &pipeline.Identity{ModelDigest: m.ModelDigest, Hostname: m.Host.Hostname, Hardware: m.Hardware, BenchrunVersion: m.Benchrun},
	}
}

// localPath says whether p names a place under the current directory: a
// relative path that does not climb out of it.
func localPath(p string) bool {
	return filepath.IsLocal(p)
}
