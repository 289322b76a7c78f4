// Package arrow writes the cells and requests tables of a run as Arrow IPC
// files in the run directory, cells.arrow and requests.arrow: the file
// format (with its footer) that pandas.read_feather, polars.read_ipc and
// pyarrow open, memory-mapped and zero-copy, uncompressed.
//
// The columns are the Parquet tables' (sinks/parquet): the same names in
// the same order, typed as pqarrow reads the Parquet files (Schema), NULL
// where Parquet has NULL (a metric not measured), with the Parquet files'
// benchrun.schema_version and benchrun.table in the schema's metadata.
// Rows are in the Parquet tables' order: every row of every attempt of a
// resumed run, earlier attempts first.
//
// Durability: each file is streamed, one record batch per finished cell
// (its requests in one batch, its cell row in another), to a hidden
// temporary name in the run directory that does not end in ".arrow"
// (".cells.arrow.tmp-123456"), and only when the run ends is the IPC footer
// written, the file fsynced and renamed into place. A run killed at any
// moment therefore leaves no partial .arrow file: the temporary files are
// removed by whoever opens the run directory next, and a replay of the
// run directory from its Parquet files (which are durable cell by cell)
// writes the .arrow files again. A run that ends normally replaces the
// files an earlier attempt left.
package arrow

import (
	"errors"
	"path/filepath"

	"github.com/benchrun/benchrun/internal/results"
)

// File names of the tables in a run directory.
const (
	CellsFile    = "cells.arrow"
	RequestsFile = "requests.arrow"
)

// batchRows caps the rows of one record batch when many rows are written
// at once (an earlier attempt's requests): bounded builder memory, and
// batches a reader can take one at a time.
const batchRows = 1 << 16

// Tables writes cells.arrow and requests.arrow of one run directory.
type Tables struct {
	cells *File[results.Cell]
	reqs  *File[results.Request]
}

// Open starts both files in the run directory dir (see File: nothing
// appears under their names before Close).
func Open(dir string) (*Tables, error) {
	cells, err := Create[results.Cell](filepath.Join(dir, CellsFile), results.TableCells)
	if err != nil {
		return nil, err
	}
	reqs, err := Create[results.Request](filepath.Join(dir, RequestsFile), results.TableRequests)
	if err != nil {
		cells.Abort()
		return nil, err
	}
	return &Tables{cells: cells, reqs: reqs}, nil
}

// Cell writes one finished cell: its requests as one record batch, then
// its cell row as another (requests first, as in the Parquet tables).
func (t *Tables) Cell(c results.Cell, reqs []results.Request) error {
	if err := t.reqs.Write(reqs); err != nil {
		return err
	}
	return t.cells.Write([]results.Cell{c})
}

// Rows writes rows stored earlier (the Parquet tables of a resumed run's
// earlier attempts), in batches of at most batchRows rows.
func (t *Tables) Rows(cells []results.Cell, reqs []results.Request) error {
	if err := writeBatches(t.reqs, reqs); err != nil {
		return err
	}
	return writeBatches(t.cells, cells)
}

func writeBatches[T any](f *File[T], rows []T) error {
	for len(rows) > 0 {
		n := min(len(rows), batchRows)
		if err := f.Write(rows[:n]); err != nil {
			return err
		}
		rows = rows[n:]
	}
	return nil
}

// Close finishes both files and puts them in place (see File.Close).
// If either failed to be written, neither is put in place.
func (t *Tables) Close() error {
	rerr, cerr := t.reqs.finish(), t.cells.finish()
	if rerr != nil || cerr != nil {
		t.reqs.discard()
		t.cells.discard()
		return errors.Join(rerr, cerr)
	}
	return errors.Join(t.reqs.commit(), t.cells.commit())
}

// Abort gives both files up, leaving no file under their names.
func (t *Tables) Abort() {
	t.reqs.Abort()
	t.cells.Abort()
}
