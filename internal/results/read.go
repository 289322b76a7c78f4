package results

import (
	"fmt"
	"path/filepath"
	"time"

	pq "github.com/parquet-go/parquet-go"
)

// ReadTable reads every part file of one table of a run directory
// (<runDir>/<table>/*.parquet) in part order. Columns a file lacks (it was
// written by an older benchrun) read as zero values; a missing table reads
// as no rows.
func ReadTable[T any](runDir, table string) ([]T, error) {
	files, err := filepath.Glob(filepath.Join(runDir, table, "*.parquet"))
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", table, err)
	}
	var out []T
	for _, f := range files { // Glob sorts; part numbers are zero-padded
		rows, err := pq.ReadFile[T](f)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", f, err)
		}
		out = append(out, rows...)
	}
	return out, nil
}

// LatestCells keeps the last row of each cell id (a resumed run re-measures
// cells that failed), in the order the cells first appeared.
func LatestCells(cells []Cell) []Cell {
	idx := map[string]int{}
	var out []Cell
	for _, c := range cells {
		if i, ok := idx[c.CellID]; ok && c.CellID != "" {
			out[i] = c
			continue
		}
		idx[c.CellID] = len(out)
		out = append(out, c)
	}
	return out
}

// LatestVerdicts keeps, for each cell id, the verdicts of its last judging
// (all verdicts of one cell row share their judged_at).
func LatestVerdicts(vs []Verdict) []Verdict {
	latest := map[string]time.Time{}
	for _, v := range vs {
		if t, ok := latest[v.CellID]; !ok || v.JudgedAt.After(t) {
			latest[v.CellID] = v.JudgedAt
		}
	}
	var out []Verdict
	for _, v := range vs {
		if v.JudgedAt.Equal(latest[v.CellID]) {
			out = append(out, v)
		}
	}
	return out
}
