// Package rundir is the run directory both ways: the one reader that
// `benchrun report`, `benchrun compare`, regression history and --resume
// share, so that a run reads the same everywhere, whoever wrote it (a
// finished run, a failed or interrupted one, one killed before its
// manifest, one written by an older benchrun), and the writers' pieces:
// the one Manifest and its encoding (WriteManifest), the atomic writers
// (WriteFileAtomic for a file's bytes, WriteFile and WriteCell for Parquet
// parts).
//
// A run directory (docs/RESULTS.md) is
//
//	runs/plan=<name>/date=<YYYY-MM-DD>/run=<id>/
//	  manifest.json, plan.cue, plan.json, .benchrun.lock
//	  cells/ requests/ slices/ assertions/ samples/   Parquet part files
//
// Open reads one; Find lists the runs under a folder from their manifests
// alone. The readers write, remove or lock nothing for longer than an
// instant: deciding what a run writes and when, taking the lock for it
// and removing a killed writer's temporary files are pipeline's, which
// imports this package (never the other way round). Compact rewrites a
// finished run's part files, holding the run's lock as a writer does.
package rundir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/benchrun/benchrun/internal/results"
)

// Files of a run directory besides the tables.
const (
	PlanFile     = "plan.cue"
	ResolvedFile = "plan.json"
)

// ownNames are the names benchrun writes in a run directory: its own
// files, the tables' folders and the outputs' files. A plan's file of one
// of these names would overwrite the run's (or be overwritten).
var ownNames = []string{
	PlanFile, ResolvedFile, ManifestFile, LockFile, "merge.json",
	results.TableCells, results.TableRequests, results.TableSlices, results.TableSamples, results.TableAssertions,
	"cells.csv", "result.json", "report.md", "report.html", "charts", "cells.arrow", "requests.arrow", "junit.xml",
	"siyuan-assets.json", // the SiYuan sink's record of the charts it uploaded
}

// OwnName says why benchrun's own files keep name ("" when a plan may use
// it): a file of the run directory, or a stage's log (<stage>.log).
func OwnName(name string) string {
	switch {
	case slices.Contains(ownNames, name):
		return "benchrun writes " + name + " in every run directory"
	case strings.HasSuffix(name, ".log"):
		return "benchrun writes each stage's log as <stage>.log"
	case strings.HasPrefix(name, ".part-") || strings.HasPrefix(name, ".benchrun"):
		return "benchrun's own temporary files start so"
	}
	return ""
}

// Run is one run directory, opened for reading.
type Run struct {
	// Dir is the run directory, as given to Open.
	Dir string
	// Manifest is manifest.json; nil when the directory has none (its
	// writer was killed before it wrote one: Status is "incomplete").
	Manifest *Manifest
	// PlanCUE is plan.cue, the plan as written; PlanJSON is plan.json, the
	// plan as resolved. Either is nil when the run has no such file.
	PlanCUE  []byte
	PlanJSON []byte
	// Status is the manifest's status, except that a manifest saying
	// "running" while no process holds the run directory's lock belongs
	// to a run that crashed ("crashed"), and a directory without a
	// manifest is "incomplete" ("running" while its writer holds it).
	Status string
	// Live is set while a writer holds the run directory; Holder names it.
	Live   bool
	Holder *LockHolder
}

// NotRunError says that a directory is no run directory. Below lists the
// run directories under it, for a user who gave the runs folder or a
// plan's folder instead of one run.
type NotRunError struct {
	Dir string
	// Missing is set when the directory does not exist at all.
	Missing bool
	Below   []string
}

// ErrNotRun is what a *NotRunError matches with errors.Is.
var ErrNotRun = errors.New("not a run directory")

func (e *NotRunError) Is(target error) bool { return target == ErrNotRun }

func (e *NotRunError) Error() string {
	what := "it has neither manifest.json nor cells/"
	if e.Missing {
		what = "it does not exist"
	}
	return fmt.Sprintf("%s is not a run directory (%s); give one like runs/plan=NAME/date=YYYY-MM-DD/run=ID%s", e.Dir, what, describeBelow(e.Below))
}

// Open opens the run directory dir for reading. It reads the manifest
// and the plan files, and looks (without taking it) at the directory's
// lock to tell a live run from a crashed one. It changes nothing: a
// killed writer's temporary files stay (no table glob matches them).
//
// A file, or a directory that holds no run (neither manifest.json nor
// cells/ nor a writer's lock file), is an error saying what to give; a
// *NotRunError names the run directories below one.
func Open(dir string) (*Run, error) {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, &NotRunError{Dir: dir, Missing: true}
	case err != nil:
		return nil, fmt.Errorf("opening run directory %s: %w", dir, err)
	case !st.IsDir():
		return nil, fmt.Errorf("%s is a file, not a run directory; give one like runs/plan=NAME/date=YYYY-MM-DD/run=ID", dir)
	}
	r := &Run{Dir: dir}
	r.Manifest, err = ReadManifest(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if !hasRunMarker(dir) {
			return nil, &NotRunError{Dir: dir, Below: RunsBelow(dir)}
		}
	case err != nil:
		return nil, err
	}
	if r.PlanCUE, err = readOptional(filepath.Join(dir, PlanFile)); err != nil {
		return nil, err
	}
	if r.PlanJSON, err = readOptional(filepath.Join(dir, ResolvedFile)); err != nil {
		return nil, err
	}
	lock, lockErr := ProbeLock(dir)
	r.Live, r.Holder = lock.Held, lock.Holder
	r.Status = status(r.Manifest, lock, lockErr)
	return r, nil
}

// status is the run's status from its manifest and its lock. A lock that
// could not be probed proves nothing, so the manifest's word stands.
func status(m *Manifest, lock LockState, lockErr error) string {
	switch {
	case m == nil && lock.Held:
		return RunRunning
	case m == nil:
		return RunIncomplete
	case m.Status == RunRunning && !lock.Held && lockErr == nil:
		return RunCrashed
	}
	return m.Status
}

// hasRunMarker says whether dir holds a run without a manifest: its cells
// table, or the lock file every writer creates before anything else.
func hasRunMarker(dir string) bool {
	for _, name := range []string{results.TableCells, LockFile} {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			return true
		}
	}
	return false
}

func readOptional(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return b, nil
}

// ID is the run's id: the manifest's, or the run=ID key of its directory.
func (r *Run) ID() string {
	if r.Manifest != nil && r.Manifest.RunID != "" {
		return r.Manifest.RunID
	}
	return idFromDir(r.Dir)
}

// Record is what the run-level outputs (reports, result.json) say about
// the run, from its manifest and plan.json: id, plan, times, status (as
// Status says: "crashed" for a run that never finished), exit code,
// metadata, tags, host, hardware, benchrun's version and the stages; the
// description and model name come from plan.json. A run without a
// manifest gives what its directory and plan.json say.
func (r *Run) Record() results.Run {
	run := results.Run{RunID: r.ID(), Status: r.Status}
	if m := r.Manifest; m != nil {
		run.Plan, run.StartedAt, run.FinishedAt, run.ExitCode = m.Plan, m.StartedAt, m.FinishedAt, m.ExitCode
		run.Metadata, run.Tags, run.Hostname, run.Hardware = m.Metadata, m.Tags, m.Host.Hostname, m.Hardware
		run.ModelDigest, run.BenchrunVersion = m.ModelDigest, m.Benchrun
		for _, s := range m.Stages {
			run.Stages = append(run.Stages, results.StageOutcome{Name: s.Name, Kind: s.Kind, Status: s.Status, Reason: s.Reason, DurationS: s.DurationS})
		}
	}
	var plan struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		Model       struct {
			Name string `json:"name"`
		} `json:"model"`
	}
	if len(r.PlanJSON) > 0 && json.Unmarshal(r.PlanJSON, &plan) == nil {
		run.Description, run.Model = plan.Description, plan.Model.Name
		if run.Plan == "" {
			run.Plan = plan.Name
		}
	}
	if run.Plan == "" {
		run.Plan = keyOf(filepath.Dir(filepath.Dir(r.Dir)), "plan=")
	}
	return run
}

// idFromDir is the run id a run directory's name gives: its run=ID key,
// or the whole name of a directory not named so (a copy of a run).
func idFromDir(dir string) string {
	return strings.TrimPrefix(filepath.Base(filepath.Clean(dir)), "run=")
}

// keyOf is the value of a hive key directory (plan=NAME, run=ID), "" when
// dir's name is not that key.
func keyOf(dir, key string) string {
	v, ok := strings.CutPrefix(filepath.Base(filepath.Clean(dir)), key)
	if !ok {
		return ""
	}
	return v
}

// RunsBelow lists the run directories under dir in the hive layout
// (run=*, */run=*, */*/run=*), the newest last, for a message to a user
// who gave the runs folder or a plan's folder instead of one run.
func RunsBelow(dir string) []string {
	var found []string
	for _, pat := range []string{"run=*", "*/run=*", "*/*/run=*"} {
		m, _ := filepath.Glob(filepath.Join(dir, pat))
		found = append(found, m...)
	}
	// Dates and run ids both start with the UTC time, so runs sort by
	// time on their date and run keys, whatever plan they belong to.
	slices.SortStableFunc(found, func(a, b string) int {
		return strings.Compare(filepath.Base(filepath.Dir(a))+filepath.Base(a), filepath.Base(filepath.Dir(b))+filepath.Base(b))
	})
	return found
}

// describeBelow says what RunsBelow found, as the tail of a message.
func describeBelow(found []string) string {
	switch len(found) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf(" (one is under it: %s)", found[0])
	}
	return fmt.Sprintf(" (%d run directories are under it; the newest is %s)", len(found), found[len(found)-1])
}
