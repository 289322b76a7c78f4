package rundir

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"

	pq "github.com/parquet-go/parquet-go"

	"github.com/benchrun/benchrun/internal/results"
)

// Rows are a run's table rows, every attempt's, in part order.
type Rows struct {
	Cells    []results.Cell
	Requests []results.Request
	Verdicts []results.Verdict
	Samples  []results.Sample
}

// Cells reads every cell row of the run, every attempt's, in part order
// (the order they were written). A cell re-measured by a resume has a row
// per attempt: LatestCells keeps the current one.
func (r *Run) Cells() ([]results.Cell, error) {
	return readTable[results.Cell](r.Dir, results.TableCells)
}

// Requests reads every request row of the run, in part order.
func (r *Run) Requests() ([]results.Request, error) {
	return readTable[results.Request](r.Dir, results.TableRequests)
}

// Verdicts reads every assertion verdict of the run, in part order.
func (r *Run) Verdicts() ([]results.Verdict, error) {
	return readTable[results.Verdict](r.Dir, results.TableAssertions)
}

// Samples reads every telemetry sample of the run, in part order.
func (r *Run) Samples() ([]results.Sample, error) {
	return readTable[results.Sample](r.Dir, results.TableSamples)
}

// LatestCells reads the current row of each cell: the one of its highest
// attempt (results.LatestCells, the latest rule of docs/RESULTS.md).
func (r *Run) LatestCells() ([]results.Cell, error) {
	cells, err := r.Cells()
	if err != nil {
		return nil, err
	}
	return results.LatestCells(cells), nil
}

// LatestVerdicts reads the verdicts of each cell's last judging
// (results.LatestVerdicts).
func (r *Run) LatestVerdicts() ([]results.Verdict, error) {
	vs, err := r.Verdicts()
	if err != nil {
		return nil, err
	}
	return results.LatestVerdicts(vs), nil
}

// Rows reads all four tables.
func (r *Run) Rows() (*Rows, error) {
	var rows Rows
	var err error
	if rows.Cells, err = r.Cells(); err != nil {
		return nil, err
	}
	if rows.Requests, err = r.Requests(); err != nil {
		return nil, err
	}
	if rows.Verdicts, err = r.Verdicts(); err != nil {
		return nil, err
	}
	if rows.Samples, err = r.Samples(); err != nil {
		return nil, err
	}
	return &rows, nil
}

// DoneCells returns the ids of the cells whose current row (the one of
// the highest attempt) has status ok: what a resume does not measure
// again. Error and skipped cells are not done. It reads three columns of
// the cells table, not the whole rows.
func (r *Run) DoneCells() (map[string]bool, error) {
	type cellStatus struct {
		CellID  string `parquet:"cell_id"`
		Attempt int64  `parquet:"attempt"`
		Status  string `parquet:"status"`
	}
	rows, err := readTable[cellStatus](r.Dir, results.TableCells)
	if err != nil {
		return nil, err
	}
	all := make([]results.Cell, len(rows))
	for i, c := range rows {
		all[i] = results.Cell{CellID: c.CellID, Attempt: c.Attempt, Status: c.Status}
	}
	done := map[string]bool{}
	for _, c := range results.LatestCells(all) {
		if c.Status == results.StatusOK && c.CellID != "" {
			done[c.CellID] = true
		}
	}
	return done, nil
}

// readTable reads every part file of one table in part order. Columns a
// file lacks (an older benchrun wrote it) read as zero values, and as nil
// for a nullable metric; a missing table reads as no rows. Temporary files
// of a write in progress or a killed writer (.part-….parquet.tmp-N) are
// not part files.
func readTable[T any](dir, table string) ([]T, error) {
	files, err := partFiles(filepath.Join(dir, table))
	if err != nil {
		return nil, err
	}
	var out []T
	for _, f := range files {
		rows, err := pq.ReadFile[T](f)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w (a part file benchrun wrote is complete; this one was changed or truncated since: move it away to read the rest)", f, err)
		}
		out = append(out, rows...)
	}
	return out, nil
}

// partRE matches part file names: part-<attempt>-<n>.parquet, and the
// part-<n>.parquet of runs written before part names carried the attempt.
var partRE = regexp.MustCompile(`^part-(?:(\d+)-)?(\d+)\.parquet$`)

// partFiles lists a table's part files in the order they were written.
// Part numbers go on across attempts (a resume numbers its parts after
// every part already there), so the number orders them, whatever the
// attempt and whether the name carries one; names of another shape come
// last, by name.
func partFiles(tableDir string) ([]string, error) {
	entries, err := os.ReadDir(tableDir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", tableDir, err)
	}
	type part struct {
		name       string
		numbered   bool
		n, attempt int
	}
	var parts []part
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || filepath.Ext(name) != ".parquet" || name[0] == '.' {
			continue
		}
		p := part{name: name}
		if m := partRE.FindStringSubmatch(name); m != nil {
			p.numbered = true
			p.n, _ = strconv.Atoi(m[2])
			p.attempt, _ = strconv.Atoi(m[1])
		}
		parts = append(parts, p)
	}
	slices.SortFunc(parts, func(a, b part) int {
		if a.numbered != b.numbered {
			if a.numbered {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(a.n, b.n), cmp.Compare(a.attempt, b.attempt), cmp.Compare(a.name, b.name))
	})
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = filepath.Join(tableDir, p.name)
	}
	return out, nil
}
