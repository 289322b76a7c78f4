package rundir

import (
	"bufio"
	"container/heap"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"sync"

	pq "github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"

	"github.com/benchrun/benchrun/internal/results"
)

// A RequestSpool keeps a cell's request rows on disk as its requests
// finish, so that nothing held grows with the cell's length (issue 50: a
// soak of 900,000 streamed requests held 1.8-3.0 KB of rows a request).
// Rows go to a Parquet file (the requests table's own encoding, so what
// is read back is what the table stores) a row group at a time, written
// by a goroutine of its own off the requests' path; Finish closes it and
// returns the rows as results.Requests, read back a batch at a time as
// often as the cell's consumers ask. The file is named ".spool-*" in the
// run directory (no table's glob matches it) and removed by Remove; one a
// killed run left behind is removed by RemoveSpools.
//
// Rows are stored in send order (their seq, from 0): a row that finishes
// before an earlier-sent one waits for it in a heap, which holds at most
// the requests in flight when it finished (MaxEarly beyond that: then the
// earliest goes on, and the file is in send order only nearly).
//
// Add is not safe for concurrent use: the sweep adds under its lock.
type RequestSpool struct {
	path  string
	f     *os.File
	bw    *bufio.Writer
	w     *pq.GenericWriter[results.Request]
	batch []results.Request
	n     int
	next  int64   // the seq the file takes next
	early seqHeap // rows whose earlier-sent rows have not finished yet

	full chan []results.Request // batches for the writer goroutine
	free chan []results.Request // batches it has written, to fill again
	done chan struct{}
	mu   sync.Mutex
	err  error // the writer's first failure
}

// spoolBatch is how many rows the spool hands its writer at once: one
// row group of the spool file.
const spoolBatch = 4096

// spoolPrefix names a spool file in a run directory.
const spoolPrefix = ".spool-"

// NewRequestSpool opens a spool in dir (a run directory; the system's
// temporary folder when dir is "").
func NewRequestSpool(dir string) (*RequestSpool, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	f, err := os.CreateTemp(dir, spoolPrefix+"*.parquet")
	if err != nil {
		return nil, fmt.Errorf("opening a spool for request rows: %w", err)
	}
	s := &RequestSpool{
		path: f.Name(), f: f, bw: bufio.NewWriterSize(f, 1<<20),
		full: make(chan []results.Request, 1), free: make(chan []results.Request, 2), done: make(chan struct{}),
	}
	s.w = pq.NewGenericWriter[results.Request](s.bw,
		// The fastest level: the spool is written while the cell's
		// requests are measured, on the client's cores.
		pq.Compression(&zstd.Codec{Level: zstd.SpeedFastest}),
		pq.DefaultEncodingFor(pq.Double, &pq.ByteStreamSplit),
		pq.MaxRowsPerRowGroup(spoolBatch),
	)
	s.free <- make([]results.Request, 0, spoolBatch)
	s.free <- make([]results.Request, 0, spoolBatch)
	s.batch = <-s.free
	go s.write()
	return s, nil
}

// write writes the batches Add hands it, each as a row group.
func (s *RequestSpool) write() {
	defer close(s.done)
	for b := range s.full {
		if s.failed() == nil {
			if _, err := s.w.Write(b); err != nil {
				s.fail(err)
			} else if err := s.w.Flush(); err != nil {
				s.fail(err)
			}
		}
		clear(b) // the rows' slices are garbage now
		s.free <- b[:0]
	}
}

func (s *RequestSpool) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = fmt.Errorf("writing request rows to %s: %w", s.path, err)
	}
}

func (s *RequestSpool) failed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// MaxEarly bounds the rows a spool holds back for an earlier-sent one.
const MaxEarly = 1 << 16

// Add spools one finished request's row.
func (s *RequestSpool) Add(row results.Request) {
	s.n++
	if row.Seq != s.next {
		heap.Push(&s.early, &row)
		if s.early.Len() <= MaxEarly {
			return
		}
		// A request that never reports holds back no more than this.
		s.put(*heap.Pop(&s.early).(*results.Request))
	} else {
		s.put(row)
	}
	for s.early.Len() > 0 && s.early[0].Seq <= s.next {
		s.put(*heap.Pop(&s.early).(*results.Request))
	}
}

// put stores the next row in the file's order.
func (s *RequestSpool) put(row results.Request) {
	s.next = max(s.next, row.Seq+1)
	s.batch = append(s.batch, row)
	if len(s.batch) == spoolBatch {
		s.full <- s.batch
		s.batch = <-s.free
	}
}

// seqHeap orders held-back rows by seq.
type seqHeap []*results.Request

func (h seqHeap) Len() int           { return len(h) }
func (h seqHeap) Less(i, j int) bool { return h[i].Seq < h[j].Seq }
func (h seqHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *seqHeap) Push(x any)        { *h = append(*h, x.(*results.Request)) }
func (h *seqHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return x
}

// Len is how many rows were added.
func (s *RequestSpool) Len() int { return s.n }

// Finish writes what is left and closes the file; the rows are then read
// back through the Requests it returns (until Remove). A spool that
// could not be written returns the error, and Remove still cleans up.
func (s *RequestSpool) Finish() (results.Requests, error) {
	for s.early.Len() > 0 { // rows after a request that never reported
		s.put(*heap.Pop(&s.early).(*results.Request))
	}
	if len(s.batch) > 0 {
		s.full <- s.batch
		s.batch = nil
	}
	close(s.full)
	<-s.done
	err := s.failed()
	if cerr := s.w.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if ferr := s.bw.Flush(); err == nil && ferr != nil {
		err = ferr
	}
	if cerr := s.f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("spooling request rows to %s: %w", s.path, err)
	}
	return &spooledRows{path: s.path, n: s.n}, nil
}

// Remove deletes the spool's file.
func (s *RequestSpool) Remove() { os.Remove(s.path) }

// RemoveSpools deletes the spool files a killed run left in dir.
func RemoveSpools(dir string) {
	files, _ := filepath.Glob(filepath.Join(dir, spoolPrefix+"*.parquet"))
	for _, f := range files {
		os.Remove(f)
	}
}

// spooledRows are a finished spool's rows as results.Requests: each All
// reads the file from its start, readBatch rows at a time (a batch of its
// own each time, so a row's slices stay valid for a consumer that keeps
// them).
type spooledRows struct {
	path string
	n    int
	mu   sync.Mutex
	err  error
}

// readBatch is how many rows a spool's reader decodes at once.
const readBatch = 1024

func (s *spooledRows) Len() int { return s.n }

func (s *spooledRows) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *spooledRows) setErr(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = err
}

func (s *spooledRows) All() iter.Seq[*results.Request] {
	return func(yield func(*results.Request) bool) {
		s.setErr(nil)
		f, err := os.Open(s.path)
		if err != nil {
			s.setErr(fmt.Errorf("reading spooled request rows: %w", err))
			return
		}
		defer f.Close()
		r := pq.NewGenericReader[results.Request](f)
		defer r.Close()
		read := 0
		for read < s.n {
			batch := make([]results.Request, min(readBatch, s.n-read))
			n, err := r.Read(batch)
			for k := range n {
				if !yield(&batch[k]) {
					return
				}
			}
			read += n
			if err != nil {
				if !errors.Is(err, io.EOF) || read < s.n {
					s.setErr(fmt.Errorf("reading spooled request rows from %s: %d of %d read: %w", s.path, read, s.n, err))
				}
				return
			}
		}
	}
}
