package rundir

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"sync"

	pq "github.com/parquet-go/parquet-go"

	"github.com/benchrun/benchrun/internal/results"
)

// RowKey names one cell row's requests: the cell, the attempt that sent
// them and the cell's measurement (a confirmation is a second row of one
// attempt, with its own requests), as results.AttemptOf and
// results.MeasurementOf read them (0 in rows older than the columns).
type RowKey struct {
	CellID               string
	Attempt, Measurement int64
}

// KeyOf is the key of cell row c's requests.
func KeyOf(c results.Cell) RowKey {
	return RowKey{c.CellID, results.AttemptOf(c.Attempt), results.MeasurementOf(c.Measurement)}
}

// RequestKeyOf is the key of the cell row that sent request r.
func RequestKeyOf(r *results.Request) RowKey {
	return RowKey{r.CellID, results.AttemptOf(r.Attempt), results.MeasurementOf(r.Measurement)}
}

// RequestRows are a run's request rows, every attempt's, as a consumer
// reads them: a cell row's at a time (Of), or all of them in part order.
// A run directory's are read from its part files at each reading, never
// held (a soak's 900,000 rows were 1.8 GB), so nothing a resume, a
// replay or a merge holds grows with a run's length.
type RequestRows interface {
	// Len is how many rows there are.
	Len() int
	// All yields every row, in part order; Err says why it stopped early.
	All() iter.Seq[*results.Request]
	Err() error
	// Of is the rows of one cell row, in part order: nil when it has none
	// (as results.AsRequests gives for no rows).
	Of(k RowKey) results.Requests
}

// RequestList is request rows held in memory as RequestRows (a test's, a
// recording sink's).
type RequestList []results.Request

func (l RequestList) Len() int { return len(l) }

func (l RequestList) All() iter.Seq[*results.Request] { return results.RequestSlice(l).All() }

func (RequestList) Err() error { return nil }

// Of copies k's rows out of the list.
func (l RequestList) Of(k RowKey) results.Requests {
	var out []results.Request
	for i := range l {
		if RequestKeyOf(&l[i]) == k {
			out = append(out, l[i])
		}
	}
	return results.AsRequests(out)
}

// storedRequests are a run directory's request rows read from its part
// files: an index of which parts hold which cell row's rows (read once,
// from four columns) and a reader per cell row that decodes only those
// parts, 256 rows at a time.
type storedRequests struct {
	dir  string
	once sync.Once
	// what the index read: the parts in part order, each key's parts and
	// count, the rows in all.
	parts []string
	keys  map[RowKey]*keyParts
	n     int
	err   error
	mu    sync.Mutex
	last  error // why the last reading stopped early
}

type keyParts struct {
	parts []string
	n     int
}

// requestKeyColumns are the columns the index reads of each request row.
type requestKeyColumns struct {
	CellID      string `parquet:"cell_id"`
	Attempt     int64  `parquet:"attempt"`
	Measurement int64  `parquet:"measurement"`
}

// StoredRequests are the run's request rows as RequestRows, read from
// its part files when asked. A part that cannot be read is Err's, and
// reading goes no further.
func (r *Run) StoredRequests() RequestRows { return &storedRequests{dir: r.Dir} }

// index lists the request parts and which cell rows each holds.
func (s *storedRequests) index() error {
	s.once.Do(func() {
		s.keys = map[RowKey]*keyParts{}
		tableDir := filepath.Join(s.dir, results.TableRequests)
		entries, err := os.ReadDir(tableDir)
		if errors.Is(err, fs.ErrNotExist) {
			return
		}
		if err != nil {
			s.err = fmt.Errorf("listing %s: %w", tableDir, err)
			return
		}
		root, err := os.OpenRoot(tableDir)
		if err != nil {
			s.err = fmt.Errorf("reading %s: %w", tableDir, err)
			return
		}
		defer root.Close()
		for _, name := range partNames(entries) {
			path := filepath.Join(tableDir, name)
			err := readKeys(root, name, func(c *requestKeyColumns) {
				k := RowKey{c.CellID, results.AttemptOf(c.Attempt), results.MeasurementOf(c.Measurement)}
				kp := s.keys[k]
				if kp == nil {
					kp = &keyParts{}
					s.keys[k] = kp
				}
				if len(kp.parts) == 0 || kp.parts[len(kp.parts)-1] != path {
					kp.parts = append(kp.parts, path)
				}
				kp.n++
				s.n++
			})
			if err != nil {
				s.err = fmt.Errorf("reading %s: %w (a part file benchrun wrote is complete; this one was changed or truncated since: move it away to read the rest)", path, err)
				return
			}
			s.parts = append(s.parts, path)
		}
	})
	return s.err
}

func (s *storedRequests) Len() int {
	s.index()
	return s.n
}

func (s *storedRequests) Err() error {
	if err := s.index(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

func (s *storedRequests) setLast(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last = err
}

func (s *storedRequests) All() iter.Seq[*results.Request] {
	return func(yield func(*results.Request) bool) {
		if s.index() != nil {
			return
		}
		s.setLast(readParts(s.parts, nil, yield))
	}
}

func (s *storedRequests) Of(k RowKey) results.Requests {
	if s.index() != nil {
		return &cellRequests{s: s}
	}
	kp := s.keys[k]
	if kp == nil {
		return nil
	}
	return &cellRequests{s: s, key: k, kp: kp}
}

// cellRequests are one cell row's stored rows, read from the parts that
// hold them at each reading.
type cellRequests struct {
	s   *storedRequests
	key RowKey
	kp  *keyParts
	mu  sync.Mutex
	err error
}

func (c *cellRequests) Len() int {
	if c.kp == nil {
		return 0
	}
	return c.kp.n
}

func (c *cellRequests) Err() error {
	if c.kp == nil {
		return c.s.err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *cellRequests) All() iter.Seq[*results.Request] {
	return func(yield func(*results.Request) bool) {
		if c.kp == nil {
			return
		}
		err := readParts(c.kp.parts, func(r *results.Request) bool { return RequestKeyOf(r) == c.key }, yield)
		c.mu.Lock()
		c.err = err
		c.mu.Unlock()
	}
}

// readParts yields the rows of the part files at paths that keep holds
// for (every row for nil), readBatch rows at a time: the error that
// stopped it, nil when it read them all or the consumer stopped.
func readParts(paths []string, keep func(*results.Request) bool, yield func(*results.Request) bool) error {
	for _, path := range paths {
		more, err := readPartRows(path, keep, yield)
		if err != nil {
			return fmt.Errorf("reading %s: %w (a part file benchrun wrote is complete; this one was changed, truncated or compacted away since)", path, err)
		}
		if !more {
			return nil
		}
	}
	return nil
}

// readKeys calls f with the key columns of each row of one part, read
// readBatch rows at a time: parquet-go decodes whole rows to project
// them, 1.8 KB a streamed row of 64 tokens, so a part read at once (a
// soak's 900,000 rows) held gigabytes for a moment.
func readKeys(root *os.Root, name string, f func(*requestKeyColumns)) error {
	file, err := root.Open(name)
	if err != nil {
		return err
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil {
		return err
	}
	pf, err := pq.OpenFile(file, st.Size(), pq.SkipPageIndex(true), pq.SkipBloomFilters(true))
	if err != nil {
		return err
	}
	r := pq.NewGenericReader[requestKeyColumns](pf)
	defer r.Close()
	batch := make([]requestKeyColumns, readBatch)
	for total, n := int(r.NumRows()), 0; n < total; {
		k, err := r.Read(batch[:min(readBatch, total-n)])
		for i := range k {
			f(&batch[i])
		}
		n += k
		if err != nil {
			if errors.Is(err, io.EOF) && n == total {
				break
			}
			return err
		}
	}
	return nil
}

// readPartRows yields one part's rows that keep holds for; more is false
// when the consumer stopped.
func readPartRows(path string, keep func(*results.Request) bool, yield func(*results.Request) bool) (more bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return false, err
	}
	// Opened first: NewGenericReader panics on a file that is not
	// Parquet (a truncated spool chunk of a full disk).
	pf, err := pq.OpenFile(f, st.Size(), pq.SkipPageIndex(true), pq.SkipBloomFilters(true))
	if err != nil {
		return false, err
	}
	r := pq.NewGenericReader[results.Request](pf)
	defer r.Close()
	total, n := int(r.NumRows()), 0
	for n < total {
		batch := make([]results.Request, min(readBatch, total-n))
		k, err := r.Read(batch)
		for i := range k {
			if keep != nil && !keep(&batch[i]) {
				continue
			}
			if !yield(&batch[i]) {
				return false, nil
			}
		}
		n += k
		if err != nil {
			if errors.Is(err, io.EOF) && n == total {
				break
			}
			return false, err
		}
	}
	return true, nil
}

// HoldRequests reads every row of rr into memory: a comparison's (a
// test's), never a consumer's that could read them as they come.
func HoldRequests(rr RequestRows) (RequestList, error) {
	out := make(RequestList, 0, rr.Len())
	for r := range rr.All() {
		out = append(out, *r)
	}
	return out, rr.Err()
}
