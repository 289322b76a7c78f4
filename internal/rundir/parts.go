package rundir

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"

	pq "github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"

	"github.com/benchrun/benchrun/internal/results"
)

// Version is benchrun's version, from the build info: what a part file's
// created_by and a run's manifest record.
func Version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// LastPart is the highest part number among dir's part files (0 for none):
// a writer continues after it, so that it never overwrites a part.
func LastPart(dir string) int {
	entries, _ := os.ReadDir(dir)
	n := 0
	for _, e := range entries {
		if m := partRE.FindStringSubmatch(e.Name()); m != nil {
			if v, err := strconv.Atoi(m[2]); err == nil && v > n {
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

// WriteCell writes a finished cell's parts under one part name: its request
// rows, its time slices (the caller's measure.Slices of them: the run
// directory stores what it is given), then its cell row. Requests go
// first: a cell row whose requests are missing would be worse than
// requests without their (reproducible) summary rows.
func WriteCell(dir, name string, c results.Cell, reqs results.Requests, slices []results.Slice) error {
	if reqs != nil && reqs.Len() > 0 {
		if err := WriteRequests(filepath.Join(dir, results.TableRequests, name), reqs); err != nil {
			return err
		}
	}
	if len(slices) > 0 {
		if err := WriteFile(filepath.Join(dir, results.TableSlices, name), slices); err != nil {
			return err
		}
	}
	return WriteFile(filepath.Join(dir, results.TableCells, name), []results.Cell{c})
}

// WriteFile writes rows to path atomically: it streams them to a temporary
// file beside path (".part-001-00001.parquet.tmp-123", which no `*.parquet`
// glob matches), syncs it and renames it into place. The file's
// benchrun.table key is the name of the folder it is written in.
func WriteFile[T any](path string, rows []T) error {
	return writeTablePart(path, filepath.Base(filepath.Dir(path)), func(w *pq.GenericWriter[T]) error {
		// A row group at a time: the writer holds what one call gives it.
		for len(rows) > 0 {
			n := min(len(rows), partRowGroup)
			if _, err := w.Write(rows[:n]); err != nil {
				return err
			}
			rows = rows[n:]
		}
		return nil
	})
}

// WriteRequests writes request rows to path as WriteFile does, a row
// group at a time as they are read: a long cell's rows are never all in
// memory here.
func WriteRequests(path string, reqs results.Requests) error {
	return writeTablePart(path, filepath.Base(filepath.Dir(path)), func(w *pq.GenericWriter[results.Request]) error {
		batch := make([]results.Request, 0, min(reqs.Len(), partRowGroup))
		flush := func() error {
			_, err := w.Write(batch)
			clear(batch) // drop the rows' slices before the next batch
			batch = batch[:0]
			return err
		}
		for r := range reqs.All() {
			if batch = append(batch, *r); len(batch) == cap(batch) {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		if err := reqs.Err(); err != nil {
			return fmt.Errorf("reading the rows: %w", err)
		}
		if len(batch) > 0 {
			return flush()
		}
		return nil
	})
}

// partRowGroup is the most rows a part file's row group holds: the
// writer buffers a group whole (1.2 KB a streamed request row, besides
// the batch of rows it is handed), so this is what a cell's end holds to
// write its requests part, times the collector's goal. 2,048 rows keep
// that to about 5 MB; DuckDB reads a group per thread, so a long cell's
// part still reads in parallel.
const partRowGroup = 2048

// writeTablePart writes a part file of table atomically as WriteFile
// does, its rows written by write; the folder it is written in may have
// another name (Compact builds a table beside the one it replaces).
func writeTablePart[T any](path, table string, write func(*pq.GenericWriter[T]) error) (err error) {
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
		// A row group at most this long (partRowGroup): a cell of a
		// million requests is written in bounded memory.
		pq.MaxRowsPerRowGroup(partRowGroup),
		pq.CreatedBy("benchrun", Version(), ""),
		pq.KeyValueMetadata("benchrun.schema_version", strconv.Itoa(results.SchemaVersion)),
		pq.KeyValueMetadata("benchrun.table", table),
	)
	if err := write(w); err != nil {
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
