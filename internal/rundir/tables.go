package rundir

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"time"

	pq "github.com/parquet-go/parquet-go"

	"github.com/benchrun/benchrun/internal/results"
)

// Rows are a run's table rows, every attempt's, in part order. The
// request rows, one per request, are read when asked (RequestRows); the
// others are a few per cell.
type Rows struct {
	Cells    []results.Cell
	Requests RequestRows
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

// Rows reads the cells, verdicts and samples tables, and indexes the
// requests table (StoredRequests: its rows are read when asked).
func (r *Run) Rows() (*Rows, error) {
	rows := Rows{Requests: r.StoredRequests()}
	var err error
	if rows.Cells, err = r.Cells(); err != nil {
		return nil, err
	}
	if rows.Requests.Len(); rows.Requests.Err() != nil {
		return nil, rows.Requests.Err()
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
//
// A `benchrun compact` beside the reader swaps the table's folder for a
// compacted one: each try reads one folder (opened once, its parts
// opened relative to it), and a part gone from it, or a table folder
// missing while a compaction's folder is there, means the folder was
// swapped: the table is read again, never half of each, never failed
// (a baseline's history exited 1 with advice to move files away).
func readTable[T any](dir, table string) ([]T, error) {
	for try := 1; ; try++ {
		rows, err := readTableOnce[T](dir, table)
		if !errors.Is(err, errTableSwapped) || try == tableSwapTries {
			return rows, err
		}
		time.Sleep(time.Duration(try) * 10 * time.Millisecond)
	}
}

// tableSwapTries bounds the reads of a table a compaction keeps swapping:
// each compaction swaps it once, then it is compact.
const tableSwapTries = 20

// errTableSwapped marks a table folder swapped while it was read.
var errTableSwapped = errors.New("the table's folder was swapped by a compaction while it was read")

func readTableOnce[T any](dir, table string) ([]T, error) {
	tableDir := filepath.Join(dir, table)
	root, err := os.OpenRoot(tableDir)
	if errors.Is(err, fs.ErrNotExist) {
		if exists(compactTmp(dir, table)) || exists(compactOld(dir, table)) {
			// Between the two renames of a compaction that could not
			// exchange the folders: the table is there again in a moment.
			return nil, fmt.Errorf("reading %s: %w", tableDir, errTableSwapped)
		}
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", tableDir, err)
	}
	defer root.Close()
	d, err := root.Open(".")
	if err == nil {
		var entries []fs.DirEntry
		entries, err = d.ReadDir(-1)
		d.Close()
		if err == nil {
			return readTableParts[T](root, tableDir, entries)
		}
	}
	if errors.Is(err, fs.ErrNotExist) {
		// The folder opened was swapped out and removed before it was
		// listed (TestReaderBesideCompactions: 1 read in 200).
		return nil, fmt.Errorf("listing %s: %w", tableDir, errTableSwapped)
	}
	return nil, fmt.Errorf("listing %s: %w", tableDir, err)
}

// readTableParts reads the part files among entries of the folder root holds.
func readTableParts[T any](root *os.Root, tableDir string, entries []fs.DirEntry) ([]T, error) {
	var out []T
	for _, name := range partNames(entries) {
		rows, err := readPart[T](root, name)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("reading %s: %w", filepath.Join(tableDir, name), errTableSwapped)
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w (a part file benchrun wrote is complete; this one was changed or truncated since: move it away to read the rest)", filepath.Join(tableDir, name), err)
		}
		out = append(out, rows...)
	}
	return out, nil
}

// readPart reads one part file of the folder root holds.
func readPart[T any](root *os.Root, name string) ([]T, error) {
	f, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return pq.Read[T](f, st.Size())
}

// partRE matches part file names: part-<attempt>-<n>.parquet, and the
// part-<n>.parquet of runs written before part names carried the attempt.
var partRE = regexp.MustCompile(`^part-(?:(\d+)-)?(\d+)\.parquet$`)

// partFiles lists a table's part files in the order they were written
// (partNames).
func partFiles(tableDir string) ([]string, error) {
	entries, err := os.ReadDir(tableDir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", tableDir, err)
	}
	names := partNames(entries)
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = filepath.Join(tableDir, n)
	}
	return out, nil
}

// partNames are the part files among a table folder's entries, in the
// order they were written. Part numbers go on across attempts (a resume
// numbers its parts after every part already there), so the number
// orders them, whatever the attempt and whether the name carries one;
// names of another shape come last, by name.
func partNames(entries []fs.DirEntry) []string {
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
		out[i] = p.name
	}
	return out
}
