// Package parquet writes rows to Parquet in the run directory, one part
// file per finished cell and table (cells/, requests/, assertions/;
// samples/ per batch of telemetry), each streamed to a temporary name that
// does not end in ".parquet" and renamed into place after an fsync, so a run
// killed at any moment leaves every finished cell readable by DuckDB and no
// partial file matched by `*.parquet`.
package parquet

import (
	"bufio"
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"

	pq "github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
)

// What this sink implements, checked by the compiler (the runner finds
// the optional interfaces by type assertion, so a renamed method would
// silently drop the capability).
var (
	_ pipeline.Sink        = (*Output)(nil)
	_ pipeline.VerdictSink = (*Output)(nil)
	_ pipeline.SampleSink  = (*Output)(nil)
)

//go:embed schema.cue
var schemaSource string

// Kind registers the sink: part of every run, and the durable one (every
// row is stored here before any other sink sees it).
var Kind = pipeline.SinkKind{
	Name:    "parquet",
	Doc:     "cells, requests, assertions and samples tables, one part file per finished cell (DuckDB: runs/**/cells/*.parquet)",
	Schema:  schema.KindSchema{Def: "#Parquet", Source: schemaSource},
	Default: true,
	Durable: true,
	Writes:  "the Parquet tables (cells/, requests/, assertions/, samples/)",
	New: func(spec pipeline.SinkSpec) (pipeline.Sink, error) {
		var cfg struct{}
		if err := spec.Decode(&cfg); err != nil {
			return nil, err
		}
		return New(), nil
	},
}

// Tables are the folders this output writes, in a run directory.
var Tables = []string{results.TableCells, results.TableRequests, results.TableAssertions, results.TableSamples}

// Output is the Parquet sink.
type Output struct {
	dir        string
	attempt    int
	part       int // the last cell part number used
	samplePart int
}

// New returns a Parquet output.
func New() *Output { return &Output{} }

// Name implements pipeline.Sink.
func (o *Output) Name() string { return "parquet" }

// Start creates the table directories. Part files are named with the
// run's attempt (part-<attempt>-<n>.parquet), and numbers continue after
// any part already there, so a resumed run never overwrites a finished
// cell, nor one attempt another's.
func (o *Output) Start(env *pipeline.SinkEnv) error {
	run := env.Run
	o.dir = run.Dir
	o.attempt = max(run.Attempt, 1)
	for _, d := range Tables {
		if err := os.MkdirAll(filepath.Join(run.Dir, d), 0o755); err != nil {
			return fmt.Errorf("creating %s: %w", d, err)
		}
	}
	o.part = max(lastPart(filepath.Join(run.Dir, results.TableCells)), lastPart(filepath.Join(run.Dir, results.TableRequests)))
	o.samplePart = lastPart(filepath.Join(run.Dir, results.TableSamples))
	// Hash the model file now, in the background, so the first cell's
	// identity stamp finds the digest cached instead of waiting for it.
	go pipeline.RunIdentity(run)
	return nil
}

// partRE matches part file names: part-<attempt>-<n>.parquet, and the
// part-<n>.parquet of runs written before part names carried the attempt.
var partRE = regexp.MustCompile(`^part-(?:\d+-)?(\d+)\.parquet$`)

func lastPart(dir string) int {
	entries, _ := os.ReadDir(dir)
	n := 0
	for _, e := range entries {
		if m := partRE.FindStringSubmatch(e.Name()); m != nil {
			if v, err := strconv.Atoi(m[1]); err == nil && v > n {
				n = v
			}
		}
	}
	return n
}

// PartName is the file name of part n of an attempt: part-001-00003.parquet.
// Names sort by attempt, then part, after those of older runs
// (part-00003.parquet).
func PartName(attempt, n int) string { return fmt.Sprintf("part-%03d-%05d.parquet", attempt, n) }

func (o *Output) partName(n int) string { return PartName(o.attempt, n) }

// Cell writes the cell's request rows, then its cell row, as new part files
// with the same number.
func (o *Output) Cell(c results.Cell, reqs []results.Request) error {
	o.part++
	name := o.partName(o.part)
	// Requests first: a cells row whose requests are missing would be worse
	// than requests without their (reproducible) summary row.
	if len(reqs) > 0 {
		if err := WriteFile(filepath.Join(o.dir, results.TableRequests, name), reqs); err != nil {
			return err
		}
	}
	return WriteFile(filepath.Join(o.dir, results.TableCells, name), []results.Cell{c})
}

// Verdicts writes the cell's assertion verdicts under the cell's part
// number; verdicts of no one cell (a stage's rows, the run's) get a part
// number of their own.
func (o *Output) Verdicts(c results.Cell, rows []results.Verdict) error {
	if len(rows) == 0 {
		return nil
	}
	if c.CellID == "" {
		o.part++
	}
	for i := range rows {
		if rows[i].Attempt == 0 {
			rows[i].Attempt = c.Attempt // the judged row's attempt
		}
	}
	return WriteFile(filepath.Join(o.dir, results.TableAssertions, o.partName(o.part)), rows)
}

// Samples writes a batch of telemetry rows as a new part file.
func (o *Output) Samples(rows []results.Sample) error {
	if len(rows) == 0 {
		return nil
	}
	o.samplePart++
	return WriteFile(filepath.Join(o.dir, results.TableSamples, o.partName(o.samplePart)), rows)
}

// Stop implements pipeline.Sink.
func (o *Output) Stop(*pipeline.Summary) error { return nil }

// WriteFile writes rows to path atomically: it streams them to a temporary
// file beside path (".part-001-00001.parquet.tmp-123", which no `*.parquet`
// glob matches), syncs it and renames it into place.
func WriteFile[T any](path string, rows []T) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	bw := bufio.NewWriterSize(tmp, 1<<20)
	w := pq.NewGenericWriter[T](bw,
		pq.Compression(&zstd.Codec{Level: zstd.SpeedFastest}),
		// Byte-stream-split doubles: latencies share exponents and high
		// mantissa bytes, which zstd then finds; every reader decodes it.
		pq.DefaultEncodingFor(pq.Double, &pq.ByteStreamSplit),
		pq.CreatedBy("benchrun", pipeline.Version(), ""),
		pq.KeyValueMetadata("benchrun.schema_version", strconv.Itoa(results.SchemaVersion)),
		pq.KeyValueMetadata("benchrun.table", filepath.Base(filepath.Dir(path))),
	)
	if _, err := w.Write(rows); err != nil {
		return fmt.Errorf("encoding %s: %w", path, err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("encoding %s: %w", path, err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	// CreateTemp makes the file private; results are for every analyst.
	if err := tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// ReadFile reads every row of a Parquet file. Columns the file lacks (it
// was written by an older benchrun) read as zero values.
func ReadFile[T any](path string) ([]T, error) {
	rows, err := pq.ReadFile[T](path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return rows, nil
}

// ReadTable reads every part file of one table of a run directory, in
// part order. A missing table reads as no rows.
func ReadTable[T any](runDir, table string) ([]T, error) {
	return results.ReadTable[T](runDir, table)
}
