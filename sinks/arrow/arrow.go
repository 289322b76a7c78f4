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
// resumed run, earlier attempts first, as a replay of the run directory
// writes them (request rows whose cell row was never stored, left by a
// kill between a cell's two part files, are left out, as there).
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
	"fmt"
	"path/filepath"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/rundir"
)

// File names of the tables in a run directory.
const (
	CellsFile    = "cells.arrow"
	RequestsFile = "requests.arrow"
)

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

// Cell writes one finished cell: its requests as record batches of up to
// batchRows rows, read as they come, then its cell row as another
// (requests first, as in the Parquet tables).
func (t *Tables) Cell(c results.Cell, reqs results.Requests) error {
	if reqs != nil && reqs.Len() > 0 {
		batch := make([]results.Request, 0, min(reqs.Len(), batchRows))
		for r := range reqs.All() {
			if batch = append(batch, *r); len(batch) == cap(batch) {
				if err := t.reqs.Write(batch); err != nil {
					return err
				}
				clear(batch)
				batch = batch[:0]
			}
		}
		if err := reqs.Err(); err != nil {
			return fmt.Errorf("reading the requests of %s: %w", c.CellID, err)
		}
		if len(batch) > 0 {
			if err := t.reqs.Write(batch); err != nil {
				return err
			}
		}
	}
	return t.cells.Write([]results.Cell{c})
}

// batchRows is the most request rows a record batch holds: its builders
// are what a cell's end holds here (rundir's partRowGroup says why 2,048).
const batchRows = 2048

// Rows writes rows stored earlier (the Parquet tables of a resumed run's
// earlier attempts, in part order) as a replay of the run directory
// drives a sink (engine.Replay): each cell row with the requests of its
// own attempt and measurement, read as they are written, through Cell.
// So a resumed run's files are, byte for byte, the ones `benchrun
// report` writes from the same directory. Like the replay, it leaves out
// request rows whose cell row was never stored (a run killed between a
// cell's two part files).
func (t *Tables) Rows(cells []results.Cell, reqs rundir.RequestRows) error {
	for _, c := range cells {
		var rows results.Requests
		if reqs != nil {
			rows = reqs.Of(rundir.KeyOf(c))
		}
		if err := t.Cell(c, rows); err != nil {
			return err
		}
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
