package rundir

import (
	"bufio"
	"container/heap"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	pq "github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/snappy"

	"github.com/benchrun/benchrun/internal/results"
)

// A RequestSpool keeps a cell's request rows on disk as its requests
// finish, so that nothing held grows with the cell's length (issue 50: a
// soak of 900,000 streamed requests held 1.8-3.0 KB of rows a request).
// Rows go to Parquet files (the requests table's own encoding, so what is
// read back is what the table stores) a row group at a time, written by a
// goroutine of its own off the requests' path. The files are chunks in the
// run directory's live folder (LiveDir), each complete when it appears
// there (written under a hidden name, then renamed): a new chunk starts
// every RollEvery of the cell, so during a long cell its finished rows can
// be queried (`read_parquet('RUN/live/*.parquet')`) and a kill -9 loses
// at most the last chunk's. Finish returns the rows as results.Requests,
// read back a batch at a time as often as the cell's consumers ask;
// Remove deletes the chunks (the cell's rows are then in its requests
// part), and RemoveSpools what a killed run left.
//
// Rows are stored in send order (their seq, from 0): a row that finishes
// before an earlier-sent one waits for it in a heap, which holds at most
// the requests in flight when it finished (MaxEarly beyond that: then the
// earliest goes on, and the chunks are in send order only nearly).
//
// Add is not safe for concurrent use: the sweep adds under its lock.
type RequestSpool struct {
	dir, name string
	own       bool // dir's parent is the spool's own temporary folder
	every     time.Duration
	chunkAt   time.Time // when the open chunk took its first row
	chunks    []string  // complete chunk files, in order
	batch     []results.Request
	rolls     int // chunks ended so far
	n         int
	next      int64   // the seq the file takes next
	early     seqHeap // rows whose earlier-sent rows have not finished yet

	// The writer goroutine's: the open chunk.
	f    *os.File
	bw   *bufio.Writer
	w    *pq.GenericWriter[results.Request]
	rows int // rows in the open chunk

	full chan spoolBatch // batches for the writer goroutine
	free chan []results.Request
	done chan struct{}
	mu   sync.Mutex
	err  error // the writer's first failure
}

// spoolBatch is a batch for the writer, and whether its chunk ends with it.
type spoolBatch struct {
	rows []results.Request
	roll bool
}

// spoolRows is how many rows the spool hands its writer at once: one row
// group. Its buffers are what the spool holds (two batches, the writer's
// column buffers: about 3 MB of streamed rows of 64 tokens); at 4,096
// they were 14 MB, which the collector's goal during a load multiplies by
// four. The requests table's part is rewritten in larger groups.
const spoolRows = 1024

// MaxChunks bounds a spool's chunk files: past it, the last one takes
// the rest of the cell's rows (a pass of 10 million requests with no
// duration never makes more files than this).
const MaxChunks = 100

// LiveDir is the run directory's folder of spooled request rows.
const LiveDir = "live"

// NewRequestSpool opens a spool in run directory dir (a temporary folder
// of its own when dir is ""), its chunks named after name (a cell id), a
// new chunk every every (0: one chunk).
func NewRequestSpool(dir, name string, every time.Duration) (*RequestSpool, error) {
	own := dir == ""
	if own {
		// A spool of its own: a folder in the system's temporary one.
		d, err := os.MkdirTemp("", "benchrun-spool-")
		if err != nil {
			return nil, fmt.Errorf("opening a spool for request rows: %w", err)
		}
		dir = d
	}
	live := filepath.Join(dir, LiveDir)
	if err := os.MkdirAll(live, 0o755); err != nil {
		return nil, fmt.Errorf("opening a spool for request rows: %w", err)
	}
	s := &RequestSpool{
		dir: live, name: safeName(name), every: every, own: own,
		full: make(chan spoolBatch, 1), free: make(chan []results.Request, 2), done: make(chan struct{}),
	}
	s.free <- make([]results.Request, 0, spoolRows)
	s.free <- make([]results.Request, 0, spoolRows)
	s.batch = <-s.free
	go s.write()
	return s, nil
}

// safeName is name with what a file name should not hold replaced.
func safeName(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		return "cell"
	}
	return string(b)
}

// write writes the batches Add hands it, each as a row group, closing a
// chunk where a batch says so.
func (s *RequestSpool) write() {
	defer close(s.done)
	for b := range s.full {
		if s.failed() == nil && len(b.rows) > 0 {
			s.fail(s.writeRows(b.rows))
		}
		if b.roll && s.failed() == nil {
			s.fail(s.closeChunk())
		}
		clear(b.rows) // the rows' slices are garbage now
		if b.rows != nil {
			s.free <- b.rows[:0]
		}
	}
}

func (s *RequestSpool) writeRows(rows []results.Request) error {
	if s.w == nil {
		f, err := os.CreateTemp(s.dir, "."+s.name+"-*.tmp")
		if err != nil {
			return err
		}
		s.f, s.bw = f, bufio.NewWriterSize(f, 256<<10)
		s.w = pq.NewGenericWriter[results.Request](s.bw,
			// Snappy: the spool is written while the cell's requests are
			// measured, on the client's cores, and zstd's encoders held
			// 16 MB of history a spool (the table's part is zstd).
			pq.Compression(&snappy.Codec{}),
			pq.DefaultEncodingFor(pq.Double, &pq.ByteStreamSplit),
			pq.MaxRowsPerRowGroup(spoolRows),
			// Pages of 32 KB, not parquet-go's 256 KB: each of the table's
			// columns holds a page buffer while the cell runs.
			pq.PageBufferSize(32<<10),
		)
	}
	if _, err := s.w.Write(rows); err != nil {
		return err
	}
	s.rows += len(rows)
	return s.w.Flush()
}

// closeChunk completes the open chunk and puts it in place (none open:
// nothing to do).
func (s *RequestSpool) closeChunk() error {
	if s.w == nil {
		return nil
	}
	w, f, bw := s.w, s.f, s.bw
	s.w, s.f, s.bw, s.rows = nil, nil, nil, 0
	err := w.Close()
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Chmod(0o644)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	path := filepath.Join(s.dir, fmt.Sprintf("%s-%05d.parquet", s.name, len(s.chunks)+1))
	if err == nil {
		for {
			// Another spool of the same name (a cell measured again):
			// the next free number.
			if _, serr := os.Stat(path); serr != nil {
				break
			}
			path = strings.TrimSuffix(path, ".parquet") + "-1.parquet"
		}
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return err
	}
	s.mu.Lock()
	s.chunks = append(s.chunks, path)
	s.mu.Unlock()
	return nil
}

func (s *RequestSpool) fail(err error) {
	if err == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = fmt.Errorf("writing request rows to %s: %w", s.dir, err)
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

// put stores the next row in the chunks' order.
func (s *RequestSpool) put(row results.Request) {
	s.next = max(s.next, row.Seq+1)
	now := time.Now()
	if len(s.batch) == 0 && s.chunkAt.IsZero() {
		s.chunkAt = now
	}
	s.batch = append(s.batch, row)
	roll := s.every > 0 && now.Sub(s.chunkAt) >= s.every && s.rolls < MaxChunks-1
	if len(s.batch) == spoolRows || roll {
		s.full <- spoolBatch{rows: s.batch, roll: roll}
		s.batch = <-s.free
		if roll {
			s.chunkAt = time.Time{}
			s.rolls++
		}
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

// Finish writes what is left and completes the last chunk; the rows are
// then read back through the Requests it returns (until Remove). A spool
// that could not be written returns the error, and Remove still cleans up.
func (s *RequestSpool) Finish() (results.Requests, error) {
	for s.early.Len() > 0 { // rows after a request that never reported
		s.put(*heap.Pop(&s.early).(*results.Request))
	}
	s.full <- spoolBatch{rows: s.batch, roll: true}
	s.batch = nil
	close(s.full)
	<-s.done
	if err := s.failed(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return &spooledRows{chunks: slices.Clone(s.chunks), n: s.n}, nil
}

// Remove deletes the spool's chunks (and the live folder when it is
// left empty).
func (s *RequestSpool) Remove() {
	s.mu.Lock()
	chunks := s.chunks
	s.chunks = nil
	s.mu.Unlock()
	for _, c := range chunks {
		os.Remove(c)
	}
	os.Remove(s.dir) // only when empty
	if s.own {
		os.Remove(filepath.Dir(s.dir))
	}
}

// RemoveSpools deletes the spooled rows a killed run left in run
// directory dir.
func RemoveSpools(dir string) {
	os.RemoveAll(filepath.Join(dir, LiveDir))
}

// spooledRows are a finished spool's rows as results.Requests: each All
// reads the chunks from the first, readBatch rows at a time (a batch of
// its own each time, so a row's slices stay valid for a consumer that
// keeps them).
type spooledRows struct {
	chunks []string
	n      int
	mu     sync.Mutex
	err    error
}

// readBatch is how many rows a spool's reader decodes at once: parquet-go
// reads them as rows of values first (24 bytes a value: 5 KB a streamed
// row of 64 tokens), so 1,024 held 10 MB while a cell's end read.
const readBatch = 256

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
		read := 0
		for _, c := range s.chunks {
			more, err := readPartRows(c, nil, func(r *results.Request) bool { read++; return yield(r) })
			if err != nil {
				s.setErr(fmt.Errorf("reading spooled request rows from %s: %d of %d read: %w", c, read, s.n, err))
				return
			}
			if !more {
				return
			}
		}
		if read != s.n {
			s.setErr(fmt.Errorf("reading spooled request rows: %d of %d read", read, s.n))
		}
	}
}
