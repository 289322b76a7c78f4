package resultstest

import (
	"fmt"
	"path/filepath"

	pq "github.com/parquet-go/parquet-go"
)

// ReadTable reads every part file of one table of a run directory
// (<runDir>/<table>/*.parquet) in part order. Columns a file lacks (it was
// written by an older benchrun) read as zero values; a missing table reads
// as no rows. Tests read what a sink or a run wrote with it, whatever the
// directory holds besides; benchrun itself reads run directories through
// internal/rundir, which also wants the run's manifest.
func ReadTable[T any](runDir, table string) ([]T, error) {
	files, err := filepath.Glob(filepath.Join(runDir, table, "*.parquet"))
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", table, err)
	}
	var out []T
	for _, f := range files { // Glob sorts; part numbers are zero-padded
		rows, err := ReadFile[T](f)
		if err != nil {
			return nil, err
		}
		out = append(out, rows...)
	}
	return out, nil
}

// ReadFile reads every row of one Parquet file. Columns the file lacks (it
// was written by an older benchrun) read as zero values.
func ReadFile[T any](path string) ([]T, error) {
	rows, err := pq.ReadFile[T](path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return rows, nil
}
