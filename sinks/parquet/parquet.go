// Package parquet writes rows to Parquet in the run directory, one part
// file per finished cell (cells/part-<n>.parquet, requests/part-<n>.parquet),
// each written under a temporary name and renamed into place, so a run
// killed at any moment leaves every finished cell readable by DuckDB and no
// partial file in the glob.
package parquet

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	pq "github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/pipeline"
)

// Output is the Parquet output.
type Output struct {
	dir  string
	part int
}

// New returns a Parquet output.
func New() *Output { return &Output{} }

// Name implements pipeline.Output.
func (o *Output) Name() string { return "parquet" }

// Start creates the table directories.
func (o *Output) Start(run *pipeline.RunInfo) error {
	o.dir = run.Dir
	for _, d := range []string{"cells", "requests"} {
		if err := os.MkdirAll(filepath.Join(run.Dir, d), 0o755); err != nil {
			return fmt.Errorf("creating %s: %w", d, err)
		}
	}
	return nil
}

// Cell writes the cell's row and its request rows as new part files.
func (o *Output) Cell(c results.Cell, reqs []results.Request) error {
	o.part++
	name := fmt.Sprintf("part-%05d.parquet", o.part)
	// Requests first: a cells row whose requests are missing would be worse
	// than requests without their (reproducible) summary row.
	if len(reqs) > 0 {
		if err := WriteFile(filepath.Join(o.dir, "requests", name), reqs); err != nil {
			return err
		}
	}
	return WriteFile(filepath.Join(o.dir, "cells", name), []results.Cell{c})
}

// Stop implements pipeline.Output.
func (o *Output) Stop(*pipeline.Summary) error { return nil }

// WriteFile writes rows to path atomically (temporary file, then rename).
func WriteFile[T any](path string, rows []T) error {
	var buf bytes.Buffer
	w := pq.NewGenericWriter[T](&buf, pq.Compression(&zstd.Codec{}))
	if _, err := w.Write(rows); err != nil {
		return fmt.Errorf("encoding %s: %w", path, err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("encoding %s: %w", path, err)
	}
	return pipeline.WriteFileAtomic(path, buf.Bytes())
}

// ReadFile reads every row of a Parquet file.
func ReadFile[T any](path string) ([]T, error) {
	rows, err := pq.ReadFile[T](path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return rows, nil
}
