// Package csvsink is the csv sink kind: it writes cell rows as CSV as each
// cell finishes: to stdout (a table that pastes into a spreadsheet; the
// seed `bench` command's columns unless --columns chooses), to PREFIX.csv
// with the same columns when --output PREFIX is given, and to cells.csv in
// the run directory with every column.
package csvsink

import (
	_ "embed"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/benchrun/benchrun/internal/suggest"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/rundir"
	"github.com/benchrun/benchrun/internal/safetext"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
)

// What this sink implements, checked by the compiler (the runner finds
// the optional interfaces by type assertion, so a renamed method would
// silently drop the capability).
var (
	_ pipeline.Sink = (*Sink)(nil)
)

//go:embed schema.cue
var schemaSource string

// Kind registers the sink: part of every run.
var Kind = pipeline.SinkKind{
	Name:    "csv",
	Doc:     "cell rows as CSV on stdout as each cell finishes (--columns, --output PREFIX.csv) and every column in cells.csv",
	Schema:  schema.KindSchema{Def: "#CSV", Source: schemaSource},
	Default: true,
	Writes:  "cells.csv and the CSV table",
	Flags:   []string{"columns", "prefix"},
	New:     newFromSpec,
}

// Config is the sink's configuration (schema.cue).
type Config struct {
	Columns []string `json:"columns"`
	Prefix  string   `json:"prefix"`
	Stdout  *bool    `json:"stdout"`
}

// newFromSpec decodes a sink entry (and the --columns and --output
// flags): an unknown column is an error naming the valid ones.
func newFromSpec(spec pipeline.SinkSpec) (pipeline.Sink, error) {
	var cfg Config
	if err := spec.Decode(&cfg); err != nil {
		return nil, err
	}
	o, err := New(nil, cfg.Columns)
	if err != nil {
		return nil, spec.ErrorAt("columns", err)
	}
	o.Prefix = cfg.Prefix
	o.toStdout = cfg.Stdout == nil || *cfg.Stdout
	return o, nil
}

// DefaultColumns are the seed `bench` command's columns, with measurement
// after status: a cell measured once more (a check the machine's
// lateness could explain, a regression to confirm) has two rows, 1 and
// 2, the second the one its checks judge.
var DefaultColumns = []string{
	results.ColISL, results.ColOSL, results.ColConcurrency, results.ColFirstCallMs, results.ColTTFTMs, results.ColPrefillTokS,
	results.ColITLP50Ms, results.ColITLP99Ms, results.ColDecodeTokS, results.ColSpeedupVsC1, results.ColBatchingEfficiency,
	results.ColStatus, results.ColMeasurement, results.ColReason, results.ColNotes,
}

// Sink writes CSV rows to W (with Columns), to Prefix+".csv" (with
// Columns) and to cells.csv in the run directory (every column).
type Sink struct {
	W       io.Writer // usually stdout; nil for none
	Columns []string
	// Prefix, when set, also streams W's table to Prefix+".csv".
	Prefix string
	// toStdout: a registered csv sink writes its table to the run's stdout.
	toStdout bool

	index   []results.Column
	targets []target
	files   []*os.File
}

type target struct {
	w       *csv.Writer
	columns []string
	index   []results.Column
	header  bool
	// said holds, for a table people read (stdout and PREFIX.csv), the
	// notes each stage's earlier rows carried: a stage's run-level facts
	// (NVML absent, how prompts are drawn, the calibration) are said on
	// its first row, not on every one. nil: every row's notes whole
	// (cells.csv).
	said map[string]map[string]bool
}

// leanNotes is c's notes without those an earlier row of its stage
// carried on t, which it records.
func (t *target) leanNotes(c results.Cell) string {
	if t.said == nil || c.Notes == "" {
		return c.Notes
	}
	seen := t.said[c.Stage]
	if seen == nil {
		seen = map[string]bool{}
		t.said[c.Stage] = seen
	}
	var kept []string
	for _, n := range strings.Split(c.Notes, "; ") {
		if results.IsMeasuredAgainNote(n) {
			// Two cells measured again for the same reason each say so:
			// the note tells the row apart from the cell's first.
			kept = append(kept, n)
			continue
		}
		if !seen[n] {
			seen[n] = true
			kept = append(kept, n)
		}
	}
	return strings.Join(kept, "; ")
}

// New returns a CSV output writing to w with the given columns (nil:
// DefaultColumns). An unknown column is an error naming the valid ones.
func New(w io.Writer, columns []string) (*Sink, error) {
	if len(columns) == 0 {
		// Start picks the defaults for the plan (a rate column for open loops).
		return &Sink{W: w}, nil
	}
	for i := range columns {
		columns[i] = strings.TrimSpace(columns[i])
	}
	idx, err := columnIndex(columns)
	if err != nil {
		return nil, err
	}
	return &Sink{W: w, Columns: columns, index: idx}, nil
}

// defaultColumnsFor is DefaultColumns with the rate column after
// concurrency when the run has an open-loop ladder (a rate row's load
// point is its rate, and its concurrency column alone would read 0), and
// the program's test name when a stage's rows are named tests (two
// llama-bench depths share isl, osl and concurrency).
func defaultColumnsFor(rateLadder, namedTests bool) []string {
	cols := make([]string, 0, len(DefaultColumns)+2)
	for _, c := range DefaultColumns {
		cols = append(cols, c)
		if c == "concurrency" && rateLadder {
			cols = append(cols, "rate")
		}
		if c == "concurrency" && namedTests {
			cols = append(cols, "bench_test")
		}
	}
	return cols
}

// Columns lists every column a cell row has, in order.
func Columns() []string { return results.ColumnNames() }

// columnIndex looks the named columns up in the results catalogue.
func columnIndex(columns []string) ([]results.Column, error) {
	var idx []results.Column
	for _, c := range columns {
		i, ok := results.Lookup(c)
		if !ok {
			// The guess goes last, where the eye lands after the long list.
			hint := ""
			if s := suggest.Closest(c, Columns()); s != "" {
				hint = fmt.Sprintf("; did you mean %q?", s)
			}
			return nil, fmt.Errorf("unknown column %q (columns: %s)%s", c, strings.Join(Columns(), ","), hint)
		}
		idx = append(idx, i)
	}
	return idx, nil
}

// Name implements pipeline.Sink.
func (o *Sink) Name() string { return "csv" }

// Start opens the files and writes the headers. A live run appends to
// cells.csv (a resumed run keeps the rows it has); a replay writes it
// afresh.
func (o *Sink) Start(env *pipeline.SinkEnv) error {
	run := env.Run
	if o.toStdout && env.Stdout != nil {
		o.W = env.Stdout
	}
	if o.index == nil {
		if len(o.Columns) == 0 {
			o.Columns = defaultColumnsFor(env.RateLadder, env.NamedTests)
			if t, ok := o.W.(interface{ Terminal() bool }); ok && t.Terminal() && env.Progress != nil {
				// A person reads the table beside the progress view: a
				// row's notes (hundreds of characters) wrap over screens
				// and bury it. They stay in cells.csv and --columns.
				o.Columns = slices.DeleteFunc(slices.Clone(o.Columns), func(c string) bool { return c == "notes" })
				fmt.Fprintln(env.Progress, "benchrun: stdout is a terminal: the table leaves out notes (they are in cells.csv; --columns chooses)")
			}
		}
		idx, err := columnIndex(o.Columns)
		if err != nil {
			return err
		}
		o.index = idx
	}
	all := Columns()
	allIdx, _ := columnIndex(all)
	// cells.csv is appended to, so a resumed run keeps the rows it has;
	// one written by a benchrun with other columns is first rewritten
	// under today's header (its rows keep their values by column name).
	path := filepath.Join(run.Dir, "cells.csv")
	flags := os.O_CREATE | os.O_WRONLY | os.O_APPEND
	if env.Replay {
		flags = os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	} else if err := upgradeHeader(path, all); err != nil {
		return fmt.Errorf("cells.csv: %w", err)
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if err != nil {
		return fmt.Errorf("opening cells.csv: %w", err)
	}
	o.files = append(o.files, f)
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("opening cells.csv: %w", err)
	}
	o.targets = append(o.targets, target{csv.NewWriter(f), all, allIdx, st.Size() == 0, nil})
	if o.Prefix != "" {
		path := o.Prefix + ".csv"
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("--output: %w", err)
		}
		pf, err := os.Create(path)
		if err != nil {
			return fmt.Errorf("--output: %w", err)
		}
		o.files = append(o.files, pf)
		o.targets = append(o.targets, target{csv.NewWriter(pf), o.Columns, o.index, true, map[string]map[string]bool{}})
	}
	if o.W != nil {
		o.targets = append(o.targets, target{csv.NewWriter(o.W), o.Columns, o.index, true, map[string]map[string]bool{}})
	}
	for _, t := range o.targets {
		if !t.header {
			continue
		}
		if err := t.w.Write(t.columns); err != nil {
			return fmt.Errorf("writing CSV header: %w", err)
		}
		t.w.Flush()
		if err := t.w.Error(); err != nil {
			return fmt.Errorf("writing CSV header: %w", err)
		}
	}
	return nil
}

// upgradeHeader rewrites the CSV file at path under the header columns
// when its own header differs (an earlier attempt of the run was made by a
// benchrun with fewer columns): each row keeps its values by column name,
// a column it lacks is empty. A missing or empty file is left alone.
func upgradeHeader(path string, columns []string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	recs, err := r.ReadAll()
	f.Close()
	if err != nil {
		return err
	}
	if len(recs) == 0 || slices.Equal(recs[0], columns) {
		return nil
	}
	at := map[string]int{}
	for i, c := range recs[0] {
		at[c] = i
	}
	var b strings.Builder
	w := csv.NewWriter(&b)
	_ = w.Write(columns)
	for _, rec := range recs[1:] {
		out := make([]string, len(columns))
		for i, c := range columns {
			if j, ok := at[c]; ok && j < len(rec) {
				out[i] = rec[j]
			}
		}
		_ = w.Write(out)
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return err
	}
	return rundir.WriteFileAtomic(path, []byte(b.String()))
}

// Cell writes one row to every target and flushes, so each row appears
// as its cell finishes.
func (o *Sink) Cell(c results.Cell, _ results.Requests) error {
	for i := range o.targets {
		t := &o.targets[i]
		row := c
		row.Notes = t.leanNotes(c)
		if err := t.w.Write(Record(row, t.index)); err != nil {
			return fmt.Errorf("writing CSV row: %w", err)
		}
		t.w.Flush()
		if err := t.w.Error(); err != nil {
			return fmt.Errorf("writing CSV row: %w", err)
		}
	}
	return nil
}

// Stop closes the files.
func (o *Sink) Stop(*pipeline.Summary) error {
	var first error
	for _, f := range o.files {
		if err := f.Close(); err != nil && first == nil {
			first = fmt.Errorf("closing %s: %w", f.Name(), err)
		}
	}
	o.files = nil
	return first
}

// Record formats the given fields of a cell row; a null (not measured)
// metric is an empty field.
func Record(c results.Cell, index []results.Column) []string {
	rec := make([]string, len(index))
	for i, col := range index {
		v := col.Value(&c)
		if notApplicable[col.Name] && (v == 0.0 || v == int64(0)) {
			continue // a closed loop has no rate, an open one no concurrency: empty, not 0
		}
		rec[i] = format(v)
	}
	return rec
}

// notApplicable marks the load columns whose zero means "not this kind of
// load": rate on a closed loop's row, concurrency on an open loop's.
var notApplicable = map[string]bool{results.ColRate: true, results.ColConcurrency: true}

// format writes a column's value (Column.Value: nil for a null).
func format(x any) string {
	if x == nil {
		return "" // not measured: an empty field, never 0
	}
	v := reflect.ValueOf(x)
	if t, ok := x.(time.Time); ok {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339Nano)
	}
	switch v.Kind() {
	case reflect.Float64, reflect.Float32:
		return strconv.FormatFloat(v.Float(), 'g', 8, 64)
	case reflect.Int64, reflect.Int, reflect.Int32:
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case reflect.String:
		return neutral(v.String())
	case reflect.Map:
		// A JSON object (keys sorted, so the text is reproducible): a
		// value may hold any character, ";" and "=" included.
		if v.Len() == 0 {
			return ""
		}
		b, err := json.Marshal(v.Interface())
		if err != nil {
			return ""
		}
		return neutral(string(b))
	}
	return fmt.Sprint(v.Interface())
}

// neutral keeps a spreadsheet from reading text as a formula
// (safetext.CSVField).
func neutral(s string) string { return safetext.CSVField(s) }
