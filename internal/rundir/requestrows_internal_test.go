package rundir

import (
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
)

// requestRowsRun writes a run whose request parts hold several cell rows
// each (two measurements of one attempt, a resume's attempt, rows older
// than the attempt and measurement columns), spread over parts of more
// than one read batch, as a compaction or a merge leaves them. It returns
// the rows in part order, as the whole table's reader reads them.
func requestRowsRun(t *testing.T) (string, []results.Request) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run=20261207T000000Z-abcdef")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeTestManifest(t, dir, RunOK)
	start := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	keys := []RowKey{{"sweep/c1", 1, 1}, {"sweep/c1", 1, 2}, {"sweep/c2", 0, 0}, {"sweep/c2", 2, 1}, {"sweep/c3", 1, 1}}
	var all []results.Request
	for part := range 3 {
		var rows []results.Request
		for i := range 700 { // past readBatch, interleaved
			k := keys[(i+part)%len(keys)]
			rows = append(rows, results.Request{RunID: "r", Stage: "sweep", CellID: k.CellID, Attempt: k.Attempt, Measurement: k.Measurement,
				Seq: int64(part*1000 + i), SentAt: start.Add(time.Duration(part*1000+i) * time.Millisecond), ChunkGapsMs: []float64{float64(i), 1}})
		}
		writeTestPart(t, dir, results.TableRequests, PartName(1, part+1), rows)
		all = append(all, rows...)
	}
	// A part of one cell only: the other cells' readings skip it.
	only := []results.Request{{RunID: "r", Stage: "sweep", CellID: "sweep/c4", Attempt: 1, Measurement: 1, Seq: 9000, SentAt: start}}
	writeTestPart(t, dir, results.TableRequests, PartName(1, 4), only)
	// The rows as the table reader holds them (lists and times as stored).
	stored, err := readTable[results.Request](dir, results.TableRequests)
	if err != nil || len(stored) != len(all)+len(only) {
		t.Fatalf("%d rows stored, %v", len(stored), err)
	}
	return dir, stored
}

// StoredRequests gives each cell row's requests, and all of them, as the
// part files hold them, in part order, at every reading; a key of no rows
// is nil; the index reads each part once, and a cell row's readings open
// only its parts.
func TestStoredRequestsByCellRow(t *testing.T) {
	dir, all := requestRowsRun(t)
	rr := (&Run{Dir: dir}).StoredRequests()
	if rr.Len() != len(all) {
		t.Fatalf("Len %d, want %d", rr.Len(), len(all))
	}
	held, err := HoldRequests(rr)
	if err != nil || !reflect.DeepEqual([]results.Request(held), all) {
		t.Fatalf("All: %d rows, %v; want the %d rows stored", len(held), err, len(all))
	}
	want := map[RowKey][]results.Request{}
	for _, r := range all {
		k := RequestKeyOf(&r)
		want[k] = append(want[k], r)
	}
	if len(want) != 6 { // c2's rows without the columns are its attempt 1, measurement 1
		t.Fatalf("%d cell rows in the fixture, want 6", len(want))
	}
	for k, rows := range want {
		got := rr.Of(k)
		for reading := range 2 {
			var read []results.Request
			for r := range got.All() {
				read = append(read, *r)
			}
			if got.Err() != nil || got.Len() != len(rows) || !reflect.DeepEqual(read, rows) {
				t.Errorf("%+v reading %d: %d rows (Len %d), %v; want %d", k, reading, len(read), got.Len(), got.Err(), len(rows))
			}
		}
		if list := RequestList(all).Of(k); !reflect.DeepEqual(list, results.AsRequests(rows)) {
			t.Errorf("%+v: RequestList.Of differs from the stored rows", k)
		}
	}
	if c4 := rr.Of(RowKey{"sweep/c4", 1, 1}).(*cellRequests); len(c4.kp.parts) != 1 {
		t.Errorf("sweep/c4's rows are in one part, its reading opens %d", len(c4.kp.parts))
	}
	if rr.Of(RowKey{"sweep/none", 1, 1}) != nil || RequestList(all).Of(RowKey{"sweep/none", 1, 1}) != nil {
		t.Errorf("a cell row without requests is not nil")
	}
	if (&Run{Dir: t.TempDir()}).StoredRequests().Len() != 0 {
		t.Errorf("a run without a requests table has rows")
	}
}

// A request part damaged after the index read it stops the reading with
// an error that names the file and says what to do; a damaged part the
// index meets fails Rows the same way.
func TestStoredRequestsDamagedPart(t *testing.T) {
	dir, _ := requestRowsRun(t)
	rr := (&Run{Dir: dir}).StoredRequests()
	c1 := rr.Of(RowKey{"sweep/c1", 1, 1})
	part := filepath.Join(dir, results.TableRequests, PartName(1, 2))
	if err := os.WriteFile(part, []byte("PAR1 not a part"), 0o644); err != nil {
		t.Fatal(err)
	}
	n := 0
	for range c1.All() {
		n++
	}
	if err := c1.Err(); err == nil || !strings.Contains(err.Error(), part) || n >= c1.Len() {
		t.Errorf("read %d of %d rows past a damaged part, err %v", n, c1.Len(), err)
	}
	if _, err := (&Run{Dir: dir}).Rows(); err == nil || !strings.Contains(err.Error(), "move it away") {
		t.Errorf("Rows over a damaged part: %v", err)
	}
}

// Indexing a run's stored requests and reading a cell row's hold what the
// Parquet reader buffers (a row group's pages) and a read batch, not the
// rows: holding them takes 1 KB a streamed row of 64 tokens (and the
// index, reading its three columns of a part at once, held 1.8 KB a row
// for a moment). What does grow is the open part's footer, parquet-go's
// decoded metadata of each row group's column chunks: about 23 bytes a
// row (3.3–3.7 MB from 20,000 to 180,000 rows), held while that part is
// read. The test allows 100 bytes a row from 20,000 to 180,000 rows: a
// tenth of what holding them takes.
func TestStoredRequestsHoldABatch(t *testing.T) {
	var grew []int64
	for _, n := range []int{20_000, 60_000, 180_000} {
		grew = append(grew, readingGrowth(t, n))
	}
	if perRow := float64(grew[2]-grew[0]) / 160_000; perRow > 100 {
		t.Errorf("the live heap grew %d, %d and %d bytes reading 20,000, 60,000 and 180,000 rows: %.0f bytes a row more, it grows with the rows", grew[0], grew[1], grew[2], perRow)
	}
	t.Logf("live heap growth while indexing and reading 20,000 / 60,000 / 180,000 rows: %d / %d / %d bytes", grew[0], grew[1], grew[2])
}

// readingGrowth writes n streamed rows in one part and reads them back
// as a cell row's requests: the most the live heap grew meanwhile.
func readingGrowth(t *testing.T, n int) int64 {
	dir := filepath.Join(t.TempDir(), "run=20261207T000000Z-abcdef")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	rows := make([]results.Request, n)
	for i := range rows {
		gaps := make([]float64, 63)
		for k := range gaps {
			gaps[k] = 1 + float64((i+k)%7)/100
		}
		rows[i] = results.Request{RunID: "r", Stage: "sweep", CellID: "sweep/c1", Attempt: 1, Measurement: 1, Seq: int64(i),
			OutputTokens: 64, ChunkGapsMs: gaps, StampDelaysMs: gaps}
	}
	writeTestPart(t, dir, results.TableRequests, PartName(1, 1), rows)
	rows = nil
	live := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	runtime.GC() // the writer's pooled buffers: a pool's victims go at the second
	base, most, read := live(), uint64(0), 0
	// The index is one call: its moment is caught by sampling beside it.
	stop, sampled := make(chan struct{}), make(chan uint64)
	go func() {
		most := uint64(0)
		for {
			select {
			case <-stop:
				sampled <- most
				return
			case <-time.After(5 * time.Millisecond):
				most = max(most, live())
			}
		}
	}()
	reqs := (&Run{Dir: dir}).StoredRequests().Of(RowKey{"sweep/c1", 1, 1})
	close(stop)
	most = max(<-sampled, live())
	for range reqs.All() {
		if read++; read%2000 == 0 {
			most = max(most, live())
		}
	}
	if reqs.Err() != nil || read != n {
		t.Fatalf("read %d of %d: %v", read, n, reqs.Err())
	}
	return int64(most) - int64(base)
}
