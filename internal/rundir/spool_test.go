package rundir_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	pq "github.com/parquet-go/parquet-go"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/results/resultstest"
	"github.com/benchrun/benchrun/internal/rundir"
)

// spoolRows are rows of every shape a sweep spools: the fixture's
// streamed rows, a failed one, one with every optional column set, one
// of one token (no gaps), at sub-microsecond send times.
func spoolRows(n int) []results.Request {
	var base []results.Request
	for _, p := range resultstest.Points() {
		base = append(base, p.Requests...)
	}
	base = append(base, resultstest.Unmeasured().Requests...)
	full := base[0]
	full.SentAt = full.SentAt.Add(1234 * time.Nanosecond)
	full.TTFOMs, full.TTFRMs, full.TTFTCMs = results.Some(1.5), results.Some(0.5), results.Some(2.5)
	full.ReasoningTokens, full.AnswerTokens, full.Answered = results.Some(int64(3)), results.Some(int64(4)), results.Some(true)
	full.ToolCalls, full.AnswerJSON, full.Model, full.ISL = results.Some(int64(1)), results.Some(false), "lora-a", results.Some(int64(16))
	full.ChunkTokens, full.StampDelaysMs = []int64{1, 2, 1}, []float64{0.01, 0.02}
	one := base[0]
	one.ChunkGapsMs, one.OutputTokens = []float64{}, 1
	base = append(base, full, one)
	out := make([]results.Request, 0, n)
	for len(out) < n {
		r := base[len(out)%len(base)]
		r.Seq = int64(len(out))
		out = append(out, r)
	}
	return out
}

// TestSpoolGivesBackTheStoredRows: a spool's rows read back are the rows
// added as the requests table stores them (results.Stored), in send order
// (seq) though they were added as they finished (each window of 100 in
// reverse), on every reading, across row groups and read batches; the
// file is gone after Remove, and a consumer may stop early.
func TestSpoolGivesBackTheStoredRows(t *testing.T) {
	for _, n := range []int{0, 1, 4095, 4096, 10001} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			dir := t.TempDir()
			rows := spoolRows(n)
			s, err := rundir.NewRequestSpool(dir, "sweep/16:8/c1", 0)
			if err != nil {
				t.Fatal(err)
			}
			for w := 0; w < n; w += 100 {
				for k := min(w+100, n) - 1; k >= w; k-- {
					s.Add(rows[k])
				}
			}
			reqs, err := s.Finish()
			if err != nil {
				t.Fatal(err)
			}
			if reqs.Len() != n {
				t.Fatalf("Len %d, want %d", reqs.Len(), n)
			}
			for reading := range 2 {
				i := 0
				for r := range reqs.All() {
					want, got := emptyLists(results.Stored(rows[i])), emptyLists(*r)
					if !reflect.DeepEqual(got, want) {
						t.Fatalf("reading %d, row %d:\n got %+v\nwant %+v", reading, i, *r, want)
					}
					i++
				}
				if err := reqs.Err(); err != nil || i != n {
					t.Fatalf("reading %d: %d rows, err %v", reading, i, err)
				}
			}
			if n > 1 {
				for range reqs.All() {
					break
				}
				if reqs.Err() != nil {
					t.Fatal(reqs.Err())
				}
			}
			s.Remove()
			if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
				t.Errorf("left %v", left)
			}
		})
	}
}

// A request that never reported holds back the rows sent after it until
// the spool finishes (then they go on in send order), and no more than
// MaxEarly of them (past that, rows go on as they come: every row is
// still stored).
func TestSpoolGap(t *testing.T) {
	for _, n := range []int{10, rundir.MaxEarly + 10} {
		s, err := rundir.NewRequestSpool(t.TempDir(), "gap", 0)
		if err != nil {
			t.Fatal(err)
		}
		rows := spoolRows(n)
		for k := n - 1; k >= 1; k-- { // seq 0 never comes
			s.Add(rows[k])
		}
		reqs, err := s.Finish()
		if err != nil {
			t.Fatal(err)
		}
		prev, got := int64(0), 0
		for r := range reqs.All() {
			if r.Seq <= prev && got > 0 && n <= rundir.MaxEarly {
				t.Fatalf("n %d: seq %d after %d", n, r.Seq, prev)
			}
			prev = r.Seq
			got++
		}
		if got != n-1 || reqs.Err() != nil {
			t.Errorf("n %d: %d rows, %v", n, got, reqs.Err())
		}
		s.Remove()
	}
}

// A spool whose file is gone says so through Err, with what it read.
func TestSpoolUnreadable(t *testing.T) {
	dir := t.TempDir()
	s, err := rundir.NewRequestSpool(dir, "sweep/16:8/c1", 0)
	if err != nil {
		t.Fatal(err)
	}
	s.Add(spoolRows(1)[0])
	reqs, err := s.Finish()
	if err != nil {
		t.Fatal(err)
	}
	s.Remove()
	n := 0
	for range reqs.All() {
		n++
	}
	if n != 0 || reqs.Err() == nil || !errors.Is(reqs.Err(), fs.ErrNotExist) {
		t.Errorf("%d rows, err %v", n, reqs.Err())
	}
}

// emptyLists is r with its empty lists nil: a list column reads back
// an empty list as either (no reader tells them apart by more than len).
func emptyLists(r results.Request) results.Request {
	if len(r.ChunkGapsMs) == 0 {
		r.ChunkGapsMs = nil
	}
	if len(r.ChunkTokens) == 0 {
		r.ChunkTokens = nil
	}
	if len(r.StampDelaysMs) == 0 {
		r.StampDelaysMs = nil
	}
	return r
}

// TestSpoolLiveChunks: a spool that rolls makes complete chunk files in
// the run directory's live folder while it is written (DuckDB, or any
// Parquet reader, reads them during the cell), each with the rows of its
// stretch, and Remove takes them and the folder away.
func TestSpoolLiveChunks(t *testing.T) {
	dir := t.TempDir()
	s, err := rundir.NewRequestSpool(dir, "sweep/16:8/c1", 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	rows := spoolRows(300)
	for i, r := range rows {
		s.Add(r)
		if i%100 == 99 {
			time.Sleep(30 * time.Millisecond)
		}
	}
	// Before Finish: the chunks of the first stretches are complete.
	var live int64
	deadline := time.Now().Add(5 * time.Second)
	for live < 200 && time.Now().Before(deadline) {
		live = 0
		files, _ := filepath.Glob(filepath.Join(dir, rundir.LiveDir, "*.parquet"))
		for _, f := range files {
			got, err := pq.ReadFile[results.Request](f)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			live += int64(len(got))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if live < 200 {
		t.Errorf("%d rows readable in the live chunks before the spool finished, want at least 200", live)
	}
	reqs, err := s.Finish()
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, rundir.LiveDir, "*.parquet"))
	n := 0
	for r := range reqs.All() {
		if r.Seq != int64(n) {
			t.Fatalf("row %d has seq %d", n, r.Seq)
		}
		n++
	}
	if n != 300 || len(files) < 3 || reqs.Err() != nil {
		t.Errorf("%d rows from %d chunks, %v; want 300 from at least 3", n, len(files), reqs.Err())
	}
	s.Remove()
	if _, err := os.Stat(filepath.Join(dir, rundir.LiveDir)); !os.IsNotExist(err) {
		t.Errorf("the live folder is still there: %v", err)
	}
}

// A spool with no run directory has a temporary folder of its own, gone
// with Remove.
func TestSpoolWithoutRunDir(t *testing.T) {
	s, err := rundir.NewRequestSpool("", "sweep/1:1/c1", 0)
	if err != nil {
		t.Fatal(err)
	}
	s.Add(spoolRows(1)[0])
	reqs, err := s.Finish()
	if err != nil || reqs.Len() != 1 {
		t.Fatal(reqs, err)
	}
	var dir string
	for r := range reqs.All() {
		dir = r.CellID // read once
	}
	if dir == "" || reqs.Err() != nil {
		t.Fatalf("no row read back: %v", reqs.Err())
	}
	before, _ := filepath.Glob(filepath.Join(os.TempDir(), "benchrun-spool-*"))
	s.Remove()
	after, _ := filepath.Glob(filepath.Join(os.TempDir(), "benchrun-spool-*"))
	if len(after) != len(before)-1 {
		t.Errorf("temporary spool folders %d before Remove, %d after", len(before), len(after))
	}
}
