// Package report writes report.md and a self-contained report.html for a
// run: charts as inline SVG (output tokens/s, TTFT and ITL p50/p99 against
// concurrency or rate, the latency-throughput trade-off), the cell table,
// a variant-vs-variant table per metadata key whose value differs between
// the cells (quant: Q4_K_M vs Q8_0; variants.go), the assertion verdicts
// and the stages. Nothing is fetched when the page
// is viewed. The same charts are written as charts/<name>.svg, which
// report.md links to. `benchrun report RUN_DIR` regenerates all of it from
// the run's Parquet files.
package report

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/benchrun/benchrun/internal/chart"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/rundir"
	"github.com/benchrun/benchrun/internal/turns"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
	"github.com/benchrun/benchrun/sinks/internal/runview"
)

// What this sink implements, checked by the compiler (the runner finds
// the optional interfaces by type assertion, so a renamed method would
// silently drop the capability).
var (
	_ pipeline.Sink        = (*Sink)(nil)
	_ pipeline.VerdictSink = (*Sink)(nil)
	_ pipeline.SampleSink  = (*Sink)(nil)
)

//go:embed schema.cue
var schemaSource string

// Kind registers the sink: part of every run.
var Kind = pipeline.SinkKind{
	Name:    "report",
	Doc:     "report.md and a self-contained report.html with SVG charts (benchrun report RUN_DIR rebuilds them)",
	Schema:  schema.KindSchema{Def: "#Report", Source: schemaSource},
	Default: true,
	Writes:  "report.md and report.html",
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

// Data is everything a report shows.
type Data struct {
	Run      results.Run
	Cells    []results.Cell
	Verdicts []results.Verdict
	// Samples are the run's telemetry samples (any attempt, any order):
	// each cell row's utilisation-and-power chart is drawn from its own.
	Samples []results.Sample
	// Turns are the conversation cells' TTFT by turn, by cell id, from
	// their request rows (the "TTFT by turn" section).
	Turns map[string][]turns.TurnTTFT
	// Views are what the charts draw from the cells' request rows: their
	// latency distributions, time slices and timelines, by cell id.
	Views runview.Views
}

// Chart is one rendered chart (charts/<Name>.svg).
type Chart = chart.Rendered

// Charts builds the report's charts (runview.RunCharts): the run's load
// levels, its programs' results, its rate ladders' achieved rates, its
// baseline bands, then per shape the latency distributions, time slices
// and a request timeline.
func Charts(d Data) []Chart {
	return runview.RunCharts(d.Cells, d.Verdicts, d.Views)
}

// Write writes report.md, report.html and charts/*.svg into dir, and, when
// prefix is set, copies of the two reports to prefix+".md" and
// prefix+".html" (their charts are inline or beside the run's report).
func Write(dir string, d Data, prefix string) error {
	charts := Charts(d)
	// charts/ is the run directory's own: a link there would put the
	// SVGs wherever it points.
	if fi, err := os.Lstat(filepath.Join(dir, "charts")); err == nil && !fi.IsDir() {
		return fmt.Errorf("%s is not a directory (a symbolic link?): benchrun writes only into the run directory; remove it", filepath.Join(dir, "charts"))
	}
	if err := os.MkdirAll(filepath.Join(dir, "charts"), 0o755); err != nil {
		return fmt.Errorf("creating charts: %w", err)
	}
	for _, c := range charts {
		if err := rundir.WriteFileAtomic(filepath.Join(dir, "charts", c.Name+".svg"), []byte(c.SVG+"\n")); err != nil {
			return err
		}
	}
	md := Markdown(d, charts, "charts/")
	page, err := HTML(d, charts)
	if err != nil {
		return err
	}
	if err := rundir.WriteFileAtomic(filepath.Join(dir, "report.md"), md); err != nil {
		return err
	}
	if err := rundir.WriteFileAtomic(filepath.Join(dir, "report.html"), page); err != nil {
		return err
	}
	if prefix == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(prefix), 0o755); err != nil {
		return fmt.Errorf("--output: %w", err)
	}
	rel, err := filepath.Rel(filepath.Dir(prefix), filepath.Join(dir, "charts"))
	if err != nil {
		rel = filepath.Join(dir, "charts")
	}
	if err := rundir.WriteFileAtomic(prefix+".md", Markdown(d, charts, filepath.ToSlash(rel)+"/")); err != nil {
		return err
	}
	return rundir.WriteFileAtomic(prefix+".html", page)
}

// sortedKeys returns a map's keys in order.
func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// failedFirst orders verdicts: failures and errors first, then in run order.
func failedFirst(vs []results.Verdict) []results.Verdict {
	out := slices.Clone(vs)
	slices.SortStableFunc(out, func(a, b results.Verdict) int {
		if a.Passed == b.Passed {
			return 0
		}
		if !a.Passed {
			return -1
		}
		return 1
	})
	return out
}

// countFailed counts the verdicts that did not pass and were not
// inconclusive (the machine's lateness could explain those).
func countFailed(vs []results.Verdict) int {
	n := 0
	for _, v := range vs {
		if !v.Passed && v.Outcome != results.OutcomeInconclusive {
			n++
		}
	}
	return n
}

// countInconclusive counts the inconclusive verdicts.
func countInconclusive(vs []results.Verdict) int {
	n := 0
	for _, v := range vs {
		if v.Outcome == results.OutcomeInconclusive {
			n++
		}
	}
	return n
}

// verdictCell is a verdict's cell for people, with its measurement when
// the cell was measured more than once ("sweep 64:32 c=4, measurement 1").
func verdictCell(v results.Verdict, current map[string]int64) string {
	cur := current[v.CellID]
	if v.Measurement > 0 && (v.Measurement > 1 || cur > 1) {
		return fmt.Sprintf("%s, measurement %d", v.Cell, v.Measurement)
	}
	return v.Cell
}

// verdictText is what a verdict's row says besides its check: the values
// it read, as the SiYuan document lists them (runview.FormatValues:
// "ttft_p50_ms = 12.3 (limit 150)"), the error that kept it from being
// judged, or why the machine could explain it.
func verdictText(v results.Verdict) string {
	switch {
	case v.Error != "":
		return v.Error
	case v.Outcome == results.OutcomeInconclusive && v.Explained != "":
		return v.Explained
	}
	return runview.FormatValues(v)
}

// currentMeasurements maps each cell id to its current row's measurement.
func currentMeasurements(cells []results.Cell) map[string]int64 {
	out := map[string]int64{}
	for _, c := range cells {
		out[c.CellID] = results.MeasurementOf(c.Measurement)
	}
	return out
}

// num formats a metric for a table: fixed decimals by magnitude, "–" for 0
// on a row that did not measure it.
func num(v float64, ok bool) string {
	if !ok {
		return "–"
	}
	switch a := v; {
	case a >= 1000:
		return fmt.Sprintf("%.0f", v)
	case a >= 100:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

// Sink writes the reports when the run ends.
type Sink struct {
	Prefix string

	ri *pipeline.RunInfo
	d  Data
}

// New returns the report output.
func New() *Sink { return &Sink{} }

// Name implements pipeline.Sink.
func (o *Sink) Name() string { return "report" }

// Start takes the rows a resumed run's earlier attempts stored
// (SinkEnv.Prior): the latest row of each cell and its verdicts.
func (o *Sink) Start(env *pipeline.SinkEnv) error {
	o.ri = env.Run
	prior, err := env.Prior()
	if err != nil {
		return err
	}
	if prior != nil {
		o.d.Cells, o.d.Verdicts = results.LatestCells(prior.Cells), results.LatestVerdicts(prior.Verdicts)
		o.d.Samples = keepSamples(nil, prior.Samples)
		for _, c := range o.d.Cells {
			reqs := prior.Requests.Of(rundir.KeyOf(c))
			o.d.keepTurns(c, reqs)
			o.d.Views.Keep(c, reqs)
		}
	}
	return nil
}

// Cell keeps the row (replacing an earlier row of the same cell), and a
// conversation cell's TTFT by turn from its requests.
func (o *Sink) Cell(c results.Cell, reqs results.Requests) error {
	o.d.keepTurns(c, reqs)
	o.d.Views.Keep(c, reqs)
	for i := range o.d.Cells {
		if o.d.Cells[i].CellID == c.CellID && c.CellID != "" {
			// The cell again: a resume's attempt replaces its verdicts; its
			// own re-measurement keeps a failure of the earlier measurement,
			// which the second does not undo.
			sameAttempt := results.AttemptOf(o.d.Cells[i].Attempt) == results.AttemptOf(c.Attempt)
			o.d.Cells[i] = c
			o.d.Verdicts = slices.DeleteFunc(o.d.Verdicts, func(v results.Verdict) bool {
				return v.CellID == c.CellID && !(sameAttempt && (v.Outcome == results.OutcomeFail || v.Outcome == results.OutcomeError))
			})
			return nil
		}
	}
	o.d.Cells = append(o.d.Cells, c)
	return nil
}

// Verdicts keeps the rows.
func (o *Sink) Verdicts(_ results.Cell, rows []results.Verdict) error {
	o.d.Verdicts = append(o.d.Verdicts, rows...)
	return nil
}

// Samples keeps the samples the usage charts plot. They are matched to
// their cell row only when the reports are written, so it does not matter
// whether they come before their cell (live) or after every cell (a
// replay).
func (o *Sink) Samples(rows []results.Sample) error {
	o.d.Samples = keepSamples(o.d.Samples, rows)
	return nil
}

// Stop writes the reports.
func (o *Sink) Stop(sum *pipeline.Summary) error {
	o.d.Run = pipeline.RunRecord(o.ri, sum)
	FillRunFromCells(&o.d.Run, o.d.Cells)
	return Write(o.ri.Dir, o.d, o.Prefix)
}

// FillRunFromCells completes run-level fields the cells know better
// (model, model digest) when the run record lacks them.
func FillRunFromCells(run *results.Run, cells []results.Cell) {
	for _, c := range cells {
		if run.Model == "" {
			run.Model = c.Model
		}
		if run.ModelDigest == "" {
			run.ModelDigest = c.ModelDigest
		}
		if run.Hardware == "" {
			run.Hardware = c.Hardware
		}
		if run.Hostname == "" {
			run.Hostname = c.Hostname
		}
	}
}
