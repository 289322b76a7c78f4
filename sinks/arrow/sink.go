package arrow

import (
	"fmt"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
)

// The sink's capabilities, checked by the compiler: it takes cells and
// requests only (no verdicts, no samples).
var _ pipeline.Sink = (*Sink)(nil)

// Kind registers the sink (sinks/builtin.go).
var Kind = pipeline.SinkKind{
	Name:   "arrow",
	Doc:    "cells.arrow and requests.arrow: the cells and requests tables as Arrow IPC files (pandas read_feather, polars read_ipc), written when the run ends",
	Schema: schema.KindSchema{Def: "#Arrow", Source: schemaSource},
	Writes: CellsFile + " and " + RequestsFile,
	New:    New,
}

// New decodes a sink entry: the kind takes no parameters of its own.
func New(spec pipeline.SinkSpec) (pipeline.Sink, error) {
	var cfg struct{}
	if err := spec.Decode(&cfg); err != nil {
		return nil, err
	}
	return &Sink{}, nil
}

// Sink writes cells.arrow and requests.arrow in the run directory (see
// the package doc: they appear at Stop, never half-written).
type Sink struct {
	t *Tables
}

// Name implements pipeline.Sink.
func (s *Sink) Name() string { return "arrow" }

// Start opens both files in the run directory. A resumed run's earlier
// attempts' rows go in first, so the files hold every row the Parquet
// tables hold, in their order; a new run and a replay start empty.
func (s *Sink) Start(env *pipeline.SinkEnv) error {
	t, err := Open(env.Run.Dir)
	if err != nil {
		return err
	}
	if env.Prior != nil {
		prior, err := env.Prior()
		if err != nil {
			t.Abort()
			return fmt.Errorf("arrow: the earlier attempts' rows: %w", err)
		}
		if prior != nil {
			if err := t.Rows(prior.Cells, prior.Requests); err != nil {
				t.Abort()
				return err
			}
		}
	}
	s.t = t
	return nil
}

// Cell writes the cell's requests and its row, a record batch each.
func (s *Sink) Cell(c results.Cell, reqs results.Requests) error {
	if s.t == nil {
		return fmt.Errorf("arrow: %s and %s were not started", CellsFile, RequestsFile)
	}
	return s.t.Cell(c, reqs)
}

// Stop writes the files' footers and puts them in place.
func (s *Sink) Stop(*pipeline.Summary) error {
	if s.t == nil {
		return nil
	}
	t := s.t
	s.t = nil
	return t.Close()
}
