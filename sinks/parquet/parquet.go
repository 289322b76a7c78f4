// Package parquet writes rows to Parquet in the run directory, one part
// file per finished cell and table (cells/, requests/, assertions/;
// samples/ per batch of telemetry), each streamed to a temporary name that
// does not end in ".parquet" and renamed into place after an fsync, so a run
// killed at any moment leaves every finished cell readable by DuckDB and no
// partial file matched by `*.parquet`.
package parquet

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"

	"github.com/benchrun/benchrun/internal/measure"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/rundir"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
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

// Kind registers the sink: part of every run, and the durable one (every
// row is stored here before any other sink sees it).
var Kind = pipeline.SinkKind{
	Name:    "parquet",
	Doc:     "cells, requests, assertions and samples tables, one part file per finished cell (DuckDB: runs/**/cells/*.parquet)",
	Schema:  schema.KindSchema{Def: "#Parquet", Source: schemaSource},
	Default: true,
	Durable: true,
	Writes:  "the Parquet tables (cells/, requests/, slices/, assertions/, samples/)",
	New: func(spec pipeline.SinkSpec) (pipeline.Sink, error) {
		var cfg struct{}
		if err := spec.Decode(&cfg); err != nil {
			return nil, err
		}
		return New(), nil
	},
}

// Tables are the folders this output writes, in a run directory.
var Tables = results.Tables

// Sink is the Parquet sink.
type Sink struct {
	dir        string
	attempt    int
	part       int // the last cell part number used
	samplePart int
}

// New returns a Parquet output.
func New() *Sink { return &Sink{} }

// Name implements pipeline.Sink.
func (o *Sink) Name() string { return "parquet" }

// Start creates the table directories. Part files are named with the
// run's attempt (part-<attempt>-<n>.parquet), and numbers continue after
// any part already there, so a resumed run never overwrites a finished
// cell, nor one attempt another's.
func (o *Sink) Start(env *pipeline.SinkEnv) error {
	run := env.Run
	o.dir = run.Dir
	o.attempt = max(run.Attempt, 1)
	for _, d := range Tables {
		if err := os.MkdirAll(filepath.Join(run.Dir, d), 0o755); err != nil {
			return fmt.Errorf("creating %s: %w", d, err)
		}
	}
	o.part = max(rundir.LastPart(filepath.Join(run.Dir, results.TableCells)), rundir.LastPart(filepath.Join(run.Dir, results.TableRequests)))
	o.samplePart = rundir.LastPart(filepath.Join(run.Dir, results.TableSamples))
	// Hash the model file now, in the background, so the first cell's
	// identity stamp finds the digest cached instead of waiting for it.
	go pipeline.RunIdentity(run)
	return nil
}

func (o *Sink) partName(n int) string { return rundir.PartName(o.attempt, n) }

// Cell writes the cell's request rows, time slices (measure.Slices, cut
// from the requests) and cell row as new part files with the same number
// (rundir.WriteCell).
func (o *Sink) Cell(c results.Cell, reqs results.Requests) error {
	o.part++
	return rundir.WriteCell(o.dir, o.partName(o.part), c, reqs, measure.Slices(c, reqs))
}

// Verdicts writes the cell's assertion verdicts under the cell's part
// number; verdicts of no one cell (a stage's rows, the run's) get a part
// number of their own.
func (o *Sink) Verdicts(c results.Cell, rows []results.Verdict) error {
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
func (o *Sink) Samples(rows []results.Sample) error {
	if len(rows) == 0 {
		return nil
	}
	o.samplePart++
	return WriteFile(filepath.Join(o.dir, results.TableSamples, o.partName(o.samplePart)), rows)
}

// Stop implements pipeline.Sink.
func (o *Sink) Stop(*pipeline.Summary) error { return nil }

// WriteFile writes rows to path atomically (rundir.WriteFile).
func WriteFile[T any](path string, rows []T) error { return rundir.WriteFile(path, rows) }
