// Package junit writes junit.xml in the run directory, for the test views
// of CI systems (GitLab's, Jenkins', the GitHub Actions reporters): one
// <testsuite> per stage, one <testcase> per assertion verdict and one per
// cell that was not measured, so that a failed check shows as a failed
// test and a run that measured nothing is never a green suite.
//
// The file is rewritten atomically at Start, after every cell's verdicts
// and at Stop. Until Stop it carries an error testcase saying the run has
// not finished, so the file a killed run leaves is never green (`benchrun
// report RUN_DIR` writes it afresh, calling the run crashed). The final
// file is a function of the rows and of what the manifest records (the
// run's start and end, its status, its stages), so a replay writes it byte
// for byte (docs/PLANS.md, "Sinks").
package junit

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/rundir"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
)

// What this sink implements, checked by the compiler (the runner finds
// the optional interfaces by type assertion).
var (
	_ pipeline.Sink        = (*Sink)(nil)
	_ pipeline.VerdictSink = (*Sink)(nil)
)

//go:embed schema.cue
var schemaSource string

// Kind registers the sink: part of every run in CI (CI=true, as GitLab,
// GitHub Actions and most CI systems set it); a plan entry turns it on
// anywhere.
var Kind = pipeline.SinkKind{
	Name:        "junit",
	Doc:         "junit.xml for CI test views: a testsuite per stage, a testcase per assertion verdict and per cell not measured (part of every run when CI=true)",
	Schema:      schema.KindSchema{Def: "#JUnit", Source: schemaSource},
	DefaultWhen: func() bool { return os.Getenv("CI") == "true" },
	Writes:      FileName,
	Flags:       []string{"prefix"},
	New: func(spec pipeline.SinkSpec) (pipeline.Sink, error) {
		prefix, err := spec.PrefixOnly()
		if err != nil {
			return nil, err
		}
		o := New()
		o.Prefix = prefix
		return o, nil
	},
}

// FileName is the output's name in the run directory.
const FileName = "junit.xml"

// entry is what the file shows of one cell row (its latest, with its
// verdicts) or of one judging of a stage's or the run's rows (cell nil).
type entry struct {
	stage    string
	attempt  int64
	cell     *results.Cell
	verdicts []results.Verdict
}

// Sink writes junit.xml (and Prefix+".junit.xml" at Stop when Prefix
// is set).
type Sink struct {
	Prefix string

	ri      *pipeline.RunInfo
	entries []*entry
	byCell  map[string]*entry
	record  func() results.Run // the run's identity (tests); nil: pipeline.RunRecord
}

// New returns the junit.xml output.
func New() *Sink { return &Sink{byCell: map[string]*entry{}} }

// Name implements pipeline.Sink.
func (o *Sink) Name() string { return "junit" }

// Start writes junit.xml as it stands: for a resumed run with the cells
// and verdicts its earlier attempts stored, fed in as a replay feeds them.
func (o *Sink) Start(env *pipeline.SinkEnv) error {
	o.ri = env.Run
	if env.Prior != nil {
		prior, err := env.Prior()
		if err != nil {
			return err
		}
		if prior != nil {
			o.seed(prior)
		}
	}
	return o.write(nil)
}

// seed feeds the rows of earlier attempts: every cell row in the order
// stored, each with the verdicts judged on it, and the verdicts of
// stages and of the run.
func (o *Sink) seed(prior *pipeline.Rows) {
	type key struct {
		cell    string
		attempt int64
	}
	byRow := map[key][]results.Verdict{}
	var groups [][]results.Verdict
	for _, v := range prior.Verdicts {
		if v.CellID != "" {
			k := key{v.CellID, results.AttemptOf(v.Attempt)}
			byRow[k] = append(byRow[k], v)
			continue
		}
		if n := len(groups); n > 0 && groups[n-1][0].Stage == v.Stage && results.AttemptOf(groups[n-1][0].Attempt) == results.AttemptOf(v.Attempt) {
			groups[n-1] = append(groups[n-1], v)
			continue
		}
		groups = append(groups, []results.Verdict{v})
	}
	for _, c := range prior.Cells {
		k := key{c.CellID, results.AttemptOf(c.Attempt)}
		o.addCell(c)
		o.addVerdicts(c, byRow[k])
		delete(byRow, k) // a second row of the same attempt (older files) had none of its own
	}
	for _, g := range groups {
		o.addVerdicts(results.Cell{Stage: g[0].Stage, Attempt: g[0].Attempt}, g)
	}
}

// Cell records a cell row, replacing an earlier row of the same cell id
// (a resumed run measures again) and its verdicts. The file is rewritten
// after the cell's verdicts, which the pipeline hands over right after.
func (o *Sink) Cell(c results.Cell, _ results.Requests) error {
	o.addCell(c)
	return nil
}

func (o *Sink) addCell(c results.Cell) {
	if e := o.byCell[c.CellID]; e != nil && c.CellID != "" {
		// The cell again: a resume's attempt replaces it; its own
		// re-measurement keeps the earlier measurement's failures, which
		// the re-measurement does not undo.
		var kept []results.Verdict
		if results.AttemptOf(c.Attempt) == e.attempt {
			for _, v := range e.verdicts {
				if v.Outcome == results.OutcomeFail || v.Outcome == results.OutcomeError {
					kept = append(kept, v)
				}
			}
		}
		e.stage, e.attempt, e.cell, e.verdicts = c.Stage, results.AttemptOf(c.Attempt), &c, kept
		return
	}
	e := &entry{stage: c.Stage, attempt: results.AttemptOf(c.Attempt), cell: &c}
	o.entries = append(o.entries, e)
	if c.CellID != "" {
		o.byCell[c.CellID] = e
	}
}

// Verdicts records a cell's verdicts (or, for a cell without an id, the
// verdicts of a stage's or the run's rows) and rewrites the file.
func (o *Sink) Verdicts(c results.Cell, rows []results.Verdict) error {
	o.addVerdicts(c, rows)
	return o.write(nil)
}

func (o *Sink) addVerdicts(c results.Cell, rows []results.Verdict) {
	if c.CellID == "" {
		if len(rows) == 0 {
			return
		}
		// A stage judged again by a later attempt replaces the earlier
		// attempts' judgings of it.
		attempt := results.AttemptOf(c.Attempt)
		kept := o.entries[:0]
		for _, e := range o.entries {
			if e.cell == nil && e.stage == c.Stage && e.attempt < attempt {
				continue
			}
			kept = append(kept, e)
		}
		o.entries = append(kept, &entry{stage: c.Stage, attempt: attempt, verdicts: rows})
		return
	}
	e := o.byCell[c.CellID]
	if e == nil {
		o.addCell(c)
		e = o.byCell[c.CellID]
	}
	e.verdicts = append(e.verdicts, rows...)
}

// Stop writes the final file with the run's outcome, and PREFIX.junit.xml.
func (o *Sink) Stop(sum *pipeline.Summary) error {
	b := o.render(sum)
	if err := rundir.WriteFileAtomic(filepath.Join(o.ri.Dir, FileName), b); err != nil {
		return err
	}
	if o.Prefix == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(o.Prefix), 0o755); err != nil {
		return fmt.Errorf("--output: %w", err)
	}
	return rundir.WriteFileAtomic(o.Prefix+"."+FileName, b)
}

func (o *Sink) write(sum *pipeline.Summary) error {
	return rundir.WriteFileAtomic(filepath.Join(o.ri.Dir, FileName), o.render(sum))
}

func (o *Sink) render(sum *pipeline.Summary) []byte {
	rec := pipeline.RunRecord(o.ri, nil)
	if o.record != nil {
		rec = o.record()
	}
	return render(document(rec, o.entries, sum))
}
