// Package jsonsink is the json sink kind: it writes result.json in the run
// directory (its document is sinks/internal/resultdoc's: vLLM `bench
// serve` keys plus benchrun's). The file is rewritten atomically after
// every cell, so it is current and whole even when a run is killed.
package jsonsink

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/rundir"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
	"github.com/benchrun/benchrun/sinks/internal/resultdoc"
)

// What this sink implements, checked by the compiler (the runner finds
// the optional interfaces by type assertion, so a renamed method would
// silently drop the capability).
var (
	_ pipeline.Sink        = (*Sink)(nil)
	_ pipeline.VerdictSink = (*Sink)(nil)
)

//go:embed schema.cue
var schemaSource string

// Kind registers the sink: part of every run.
var Kind = pipeline.SinkKind{
	Name:    "json",
	Doc:     "result.json: per-cell summaries under the key names of vLLM bench serve, plus --metadata stamps",
	Schema:  schema.KindSchema{Def: "#JSON", Source: schemaSource},
	Default: true,
	Writes:  FileName,
	Flags:   []string{"prefix"},
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
const FileName = resultdoc.FileName

// Sink writes result.json (and Prefix+".json" when Prefix is set).
type Sink struct {
	Prefix string

	ri       *pipeline.RunInfo
	cells    []resultdoc.CellResult
	index    map[string]int // cell id → its place in cells
	verdicts []results.Verdict
	// The last write's size, cost and end: a large file (thousands of
	// cells) is written again only after ten times its cost, so the run
	// pays at most about a tenth of its time for it, not a write of every
	// cell so far after every cell (quadratic: 2,000 exec records took
	// ~590 s). A small one is current after every cell. Stop always
	// writes.
	lastSize int
	lastCost time.Duration
	lastEnd  time.Time
	writes   int
}

// largeFile is the size from which result.json is no longer rewritten
// after every cell.
const largeFile = 256 << 10

// New returns the result.json output.
func New() *Sink { return &Sink{} }

// Name implements pipeline.Sink.
func (o *Sink) Name() string { return "json" }

// Start writes result.json as it stands: empty for a new run or a
// replay; for a resumed run, with the cells and verdicts its earlier
// attempts stored (SinkEnv.Prior).
func (o *Sink) Start(env *pipeline.SinkEnv) error {
	o.ri = env.Run
	prior, err := env.Prior()
	if err != nil {
		return err
	}
	if prior != nil && len(prior.Cells) > 0 {
		latest := results.LatestCells(prior.Cells)
		for _, c := range latest { // the requests of each row's own attempt, read as it needs them
			o.cells = append(o.cells, resultdoc.NewCellResult(c, prior.Requests.Of(rundir.KeyOf(c))))
		}
		o.verdicts = results.LatestVerdicts(prior.Verdicts)
	}
	return o.write(nil)
}

// Cell adds a cell (replacing an earlier row of the same cell id, as a
// resumed run re-measures) and rewrites the file.
func (o *Sink) Cell(c results.Cell, reqs results.Requests) error {
	r := resultdoc.NewCellResult(c, reqs)
	if o.index == nil {
		o.index = map[string]int{}
		for i, x := range o.cells {
			o.index[x.CellID] = i
		}
	}
	if i, ok := o.index[c.CellID]; ok && c.CellID != "" {
		o.cells[i] = r
		o.verdicts = slices.DeleteFunc(o.verdicts, func(v results.Verdict) bool { return v.CellID == c.CellID })
		return o.writeSoon()
	}
	o.index[c.CellID] = len(o.cells)
	o.cells = append(o.cells, r)
	return o.writeSoon()
}

// writeSoon writes result.json now, unless the last write was slow and
// recent (see Sink).
func (o *Sink) writeSoon() error {
	if o.lastSize >= largeFile && time.Since(o.lastEnd) < 10*o.lastCost {
		return nil
	}
	return o.write(nil)
}

// Verdicts adds the cell's verdicts and rewrites the file.
func (o *Sink) Verdicts(c results.Cell, rows []results.Verdict) error {
	if len(rows) == 0 {
		return nil
	}
	for _, v := range rows {
		if v.Attempt == 0 {
			v.Attempt = c.Attempt // the judged row's attempt
		}
		o.verdicts = append(o.verdicts, v)
	}
	return o.writeSoon()
}

// Stop writes the final file with the run's outcome.
func (o *Sink) Stop(sum *pipeline.Summary) error {
	if err := o.write(sum); err != nil {
		return err
	}
	if o.Prefix == "" {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(o.ri.Dir, FileName))
	if err != nil {
		return fmt.Errorf("--output: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(o.Prefix), 0o755); err != nil {
		return fmt.Errorf("--output: %w", err)
	}
	return rundir.WriteFileAtomic(o.Prefix+".json", b)
}

func (o *Sink) write(sum *pipeline.Summary) error {
	start := time.Now()
	b, err := resultdoc.Encode(resultdoc.Build(pipeline.RunRecord(o.ri, sum), o.cells, o.verdicts))
	if err != nil {
		return err
	}
	err = rundir.WriteFileAtomic(filepath.Join(o.ri.Dir, FileName), b)
	o.lastEnd = time.Now()
	o.lastCost, o.lastSize = o.lastEnd.Sub(start), len(b)
	o.writes++
	return err
}
