package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/benchrun/benchrun/internal/host"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/rundir"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
)

// ResumeRunInfo continues the run in dir (--resume RUN_DIR): the run keeps
// its id and directory, new rows are written beside the old ones with the
// next attempt number, and every cell already finished with status ok is
// reported by Env.CellDone, so measuring stages skip it. The directory must
// hold a run of the same plan made with the same -t values (manifest.json
// names them), and no other writer may hold it: the resume takes the run
// directory's lock (a *BusyError names the holder) and keeps it until Run
// returns. An attempt found still "running" crashed: Run records it so.
// Temporary files a killed writer left are removed. Run refuses a plan
// whose configuration of what is left to run differs from the run's.
func ResumeRunInfo(dir string, p *schema.Plan, tags []string, now time.Time) (*pipeline.RunInfo, error) {
	if _, err := os.Stat(filepath.Join(dir, rundir.ManifestFile)); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("--resume %s: not a run directory (no manifest.json)", dir)
		}
		return nil, fmt.Errorf("--resume %s: %w", dir, err)
	}
	lock, err := lockRunDir(dir, 0, now)
	if err != nil {
		return nil, fmt.Errorf("--resume %s: %w", dir, err)
	}
	ri, err := resumeLocked(dir, p, tags, now)
	if err != nil {
		lock.release()
		return nil, err
	}
	stateOf(ri).lock = lock
	// Say which attempt holds the directory now.
	lock.l.Name(pipeline.LockHolder{PID: os.Getpid(), Hostname: host.This().Hostname, StartedAt: now.UTC(), Attempt: ri.Attempt})
	return ri, nil
}

// resumeLocked reads the run directory for a resume, through
// internal/rundir as every reader does; the caller holds its lock.
func resumeLocked(dir string, p *schema.Plan, tags []string, now time.Time) (*pipeline.RunInfo, error) {
	run, err := rundir.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("--resume %s: %w", dir, err)
	}
	if run.Manifest == nil {
		return nil, fmt.Errorf("--resume %s: not a run directory (no manifest.json)", dir)
	}
	m := run.Manifest
	if m.Plan != p.Name {
		return nil, fmt.Errorf("--resume %s: the run is of plan %q, not %q", dir, m.Plan, p.Name)
	}
	// Cell ids name the cell, not the configuration: resuming with other
	// -t values (another model file, say) would skip cells measured on a
	// different configuration and mix the two in one run.
	if was, now := normTags(m.Tags), normTags(tags); was != now {
		return nil, fmt.Errorf("--resume %s: the run was made with %s but this resume gives %s: resuming would mix two configurations in one run (give the same -t values, or start a new run)", dir, was, now)
	}
	if err := resumeMetadata(p, m.Metadata); err != nil {
		return nil, fmt.Errorf("--resume %s: %w", dir, err)
	}
	attempts := m.AttemptRecords()
	st := &runState{prev: m}
	ri := &pipeline.RunInfo{Plan: p, Dir: dir, StartedAt: now, Tags: tags, Resumed: true, Attempt: len(attempts) + 1, FirstStartedAt: m.StartedAt, State: st}
	ri.ID = run.ID()
	if last := attempts[len(attempts)-1]; last.Status == pipeline.RunRunning {
		// We hold the lock, so whoever wrote "running" is gone.
		last.Status, last.Reason = pipeline.RunCrashed, crashReason
		st.crashed = &last
	}
	st.removed = rundir.RemoveTemporaries(dir)
	if st.doneCells, err = run.DoneCells(); err != nil {
		return nil, fmt.Errorf("--resume %s: %w", dir, err)
	}
	if st.priorFailed, st.priorInconclusive, err = failedVerdicts(run, st.doneCells); err != nil {
		return nil, fmt.Errorf("--resume %s: %w", dir, err)
	}
	st.prevPlan = run.PlanJSON
	return ri, nil
}

// DoneCells reads the cell rows of a run directory (cells/*.parquet) and
// returns the ids of the cells whose current row (the one of the highest
// attempt) has status ok. Error and skipped cells are not done: resuming
// runs them again. (rundir.Run.DoneCells; dir must be a run directory.)
func DoneCells(dir string) (map[string]bool, error) {
	run, err := rundir.Open(dir)
	if err != nil {
		return nil, err
	}
	return run.DoneCells()
}

// failedVerdicts are the verdicts of the cells a resume does not measure
// again, as they were judged: those that failed (a severity-fail check
// that did not hold, or could not be evaluated) still fail the run; those
// that were inconclusive are inconclusive still; a warning, failed or
// inconclusive, never fails it.
func failedVerdicts(run *rundir.Run, done map[string]bool) (failed, inconclusive []pipeline.Verdict, err error) {
	if len(done) == 0 {
		return nil, nil, nil
	}
	vs, err := run.LatestVerdicts()
	if err != nil {
		return nil, nil, err
	}
	for _, v := range vs {
		if !done[v.CellID] || v.Passed || v.Severity == pipeline.SeverityWarn || v.Outcome == results.OutcomeWarn {
			continue
		}
		pv := pipeline.Verdict{Assertion: v.Assertion, Name: v.Name, Level: v.Level, Severity: v.Severity, Pos: v.Pos, Stage: v.Stage, CellID: v.CellID, Cell: v.Cell, Values: v.Values, Error: v.Error, Measurement: v.Measurement}
		if v.Outcome == results.OutcomeInconclusive {
			pv.Inconclusive, pv.Explained = true, v.Explained
			inconclusive = append(inconclusive, pv)
			continue
		}
		failed = append(failed, pv)
	}
	return failed, inconclusive, nil
}

// resumeMetadata makes the resume's metadata the run's: a key the plan
// and --metadata give now must say what it said when the run was made
// (rows of one run under two values would be two configurations in one),
// and a key the run had that the resume does not give (its --metadata
// left off) is the run's still, so the new rows carry it. A difference is
// refused, every one named.
func resumeMetadata(p *schema.Plan, was map[string]string) error {
	var diffs []string
	for _, k := range slices.Sorted(maps.Keys(p.Metadata)) {
		old, ok := was[k]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("%s=%s is new", k, p.Metadata[k]))
		case old != p.Metadata[k]:
			diffs = append(diffs, fmt.Sprintf("%s: %q → %q", k, old, p.Metadata[k]))
		}
	}
	if len(diffs) > 0 {
		return fmt.Errorf("the run was made with other metadata (%s): resuming would mix two configurations in one run (give the run's --metadata, or none, or start a new run)", strings.Join(diffs, ", "))
	}
	if len(was) > 0 {
		p.Metadata = maps.Clone(was)
	}
	return nil
}

// normTags renders -t values for comparison and messages: sorted, without
// repeats, "no -t values" when there are none.
func normTags(tags []string) string {
	t := slices.Clone(tags)
	sort.Strings(t)
	t = slices.Compact(t)
	if len(t) == 0 {
		return "no -t values"
	}
	return "-t " + strings.Join(t, " -t ")
}

// nothingLeftToResume returns the stages of a resumed run that have
// nothing left to do: a stage that lists its cells (a sweep) has every one
// done, and every stage depending on it has nothing left either; a stage
// that does not list its work (a server, a health check) has nothing left
// when no stage depending on it has (a finally stage counts when it
// targets the stage, not when it only comes after it). Measuring stages
// that cannot list their work, stages nothing depends on, and finally
// stages always have work.
func nothingLeftToResume(g *pipeline.Graph, done map[string]bool) map[string]bool {
	work := map[string]bool{}
	var has func(n *pipeline.Node) bool
	has = func(n *pipeline.Node) bool {
		if w, ok := work[n.Spec.Name]; ok {
			return w
		}
		work[n.Spec.Name] = true // Build refuses cycles; this only guards
		w := false
		var users []*pipeline.Node
		for _, d := range g.Dependents(n.Spec.Name) {
			// A finally stage always runs: it needs what it targets (a
			// check of the server at the end), not what it only follows.
			if !d.Spec.Finally || d.Via[n.Spec.Name] == "target" {
				users = append(users, d)
			}
		}
		pl, planner := n.Stage.(pipeline.Planner)
		switch {
		case n.Spec.Finally:
			w = true
		case planner:
			w = slices.ContainsFunc(pl.Plan(), func(s pipeline.PlannedStep) bool { return !done[s.ID] })
		case n.Kind.Measuring, len(users) == 0:
			w = true
		}
		for _, u := range users {
			if has(u) {
				w = true
			}
		}
		work[n.Spec.Name] = w
		return w
	}
	idle := map[string]bool{}
	for _, n := range g.Nodes {
		if !has(n) {
			idle[n.Spec.Name] = true
		}
	}
	return idle
}

func checkResume(g *pipeline.Graph, ri *pipeline.RunInfo, idle map[string]bool) error {
	// Without the configuration the run was made with, nothing says this
	// plan is the same: refused, never resumed unchecked.
	var old map[string]any
	if len(stateOf(ri).prevPlan) == 0 {
		return fmt.Errorf("run directory %s has no %s (deleted?): the resume cannot check that this plan is the one the run was made with; restore it from the run's copy, or start a new run", ri.Dir, filepath.Join(ri.Dir, "plan.json"))
	}
	if err := json.Unmarshal(stateOf(ri).prevPlan, &old); err != nil {
		return fmt.Errorf("run directory %s: %s cannot be read (%v): the resume cannot check that this plan is the one the run was made with; restore it, or start a new run", ri.Dir, filepath.Join(ri.Dir, "plan.json"), err)
	}
	resolved, err := resolvedPlanText(g.Plan) // as plan.json keeps it: URL passwords masked
	if err != nil {
		return err
	}
	var now map[string]any
	if err := json.Unmarshal(resolved, &now); err != nil {
		return err
	}
	var stages []string
	for _, n := range g.Nodes {
		if !idle[n.Spec.Name] && !n.Spec.Finally {
			stages = append(stages, n.Spec.Name)
		}
	}
	if len(stages) == 0 {
		return nil
	}
	var d differ
	for _, k := range []string{"model", "metadata", "slo", "assert", "baseline"} {
		d.diff(k, lookup(old, k), lookup(now, k))
	}
	oldStages, _ := old["stages"].(map[string]any)
	nowStages, _ := now["stages"].(map[string]any)
	for _, name := range stages {
		d.diff("stages"+pathKey(name), withoutDescription(lookup(oldStages, name)), withoutDescription(lookup(nowStages, name)))
	}
	if len(d.lines) == 0 {
		return nil
	}
	lines := d.lines
	if len(lines) > 20 {
		lines = append(lines[:20:20], fmt.Sprintf("... and %d more", len(d.lines)-20))
	}
	return fmt.Errorf("--resume %s: the plan is not the one the run was made with (%s), in what is left to run; resuming would mix two configurations in one run:\n  %s\nrestore the plan as it was (the run keeps it as %s), or start a new run",
		ri.Dir, filepath.Join(ri.Dir, "plan.json"), strings.Join(lines, "\n  "), filepath.Join(ri.Dir, "plan.cue"))
}

// absent stands for a field one side does not have.
type absentT struct{}

var absent any = absentT{}

func lookup(m map[string]any, k string) any {
	if v, ok := m[k]; ok {
		return v
	}
	return absent
}

func withoutDescription(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := map[string]any{}
	for k, x := range m {
		if k != "description" {
			out[k] = x
		}
	}
	return out
}

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func pathKey(k string) string {
	if identRE.MatchString(k) {
		return "." + k
	}
	return fmt.Sprintf(".%q", k)
}

// differ lists the differences between two decoded JSON values, one line
// per changed leaf: `path: old → new`.
type differ struct{ lines []string }

func (d *differ) diff(path string, a, b any) {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			d.diff(path+pathKey(k), lookup(am, k), lookup(bm, k))
		}
		return
	}
	al, aok := a.([]any)
	bl, bok := b.([]any)
	if aok && bok {
		for i := range max(len(al), len(bl)) {
			x, y := absent, absent
			if i < len(al) {
				x = al[i]
			}
			if i < len(bl) {
				y = bl[i]
			}
			d.diff(fmt.Sprintf("%s[%d]", path, i), x, y)
		}
		return
	}
	if !reflect.DeepEqual(a, b) {
		d.lines = append(d.lines, fmt.Sprintf("%s: %s → %s", path, show(a), show(b)))
	}
}

func show(v any) string {
	if v == absent {
		return "(absent)"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	s := string(b)
	if r := []rune(s); len(r) > 80 {
		s = string(r[:77]) + "..."
	}
	return s
}
