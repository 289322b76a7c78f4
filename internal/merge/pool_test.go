package merge

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/rundir"
)

// TestPooledIsStableSort: the pooled rows of three shards whose send
// times a busy client swapped by up to 3 ms, with ties within and across
// shards and a shard without rows, come in exactly the order sorting
// them all by send time stably gives, numbered 0, 1, …, and a second
// reading gives them again.
func TestPooledIsStableSort(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(4, 2))
	var all []results.Request
	p := &pooled{runID: "merged"}
	for shard, n := range []int{500, 0, 800, 300} {
		var rows []results.Request
		for i := range n {
			at := t0.Add(time.Duration(i) * 2 * time.Millisecond)
			if rng.IntN(4) == 0 {
				at = at.Add(-time.Duration(rng.IntN(3_000_000))) // sent a little before an earlier row
			}
			if rng.IntN(10) == 0 {
				at = at.Truncate(10 * time.Millisecond) // ties
			}
			rows = append(rows, results.Request{Stage: "s", CellID: fmt.Sprintf("%d/%d", shard, i), SentAt: at})
		}
		all = append(all, rows...)
		p.shards = append(p.shards, heldRows("s", rows))
	}
	want := slices.Clone(all)
	slices.SortStableFunc(want, func(a, b results.Request) int { return a.SentAt.Compare(b.SentAt) })
	if p.shards[0].disorder == 0 || p.Len() != len(want) {
		t.Fatalf("shard 0's disorder %v, %d rows of %d: the test does not swap sends", p.shards[0].disorder, p.Len(), len(want))
	}
	for reading := range 2 {
		i := 0
		for q := range p.All() {
			if q.CellID != want[i].CellID || q.Seq != int64(i) || q.RunID != "merged" || q.Attempt != 1 {
				t.Fatalf("reading %d, row %d: %s (seq %d, run %q), want %s", reading, i, q.CellID, q.Seq, q.RunID, want[i].CellID)
			}
			i++
		}
		if i != len(want) || p.Err() != nil {
			t.Fatalf("reading %d: %d rows of %d (%v)", reading, i, len(want), p.Err())
		}
	}
}

// TestPooledHoldsNoRows: reading a merged cell's pooled rows from two
// shards' run directories of 20,000 and of 60,000 streamed rows of 64
// tokens each holds what the readers buffer (a read batch a shard, the
// rows within the shards' disorder), not the rows: the live heap, read
// every 2,000 rows, grows by under 100 bytes a row more from 40,000 to
// 120,000 rows (the open parts' footers: about 23 bytes a row, as
// rundir's TestStoredRequestsHoldABatch), where the pooled rows held were
// over 900 bytes a row (93 MB at 2 × 60,000). What the merge's cell row
// needs beside it is a cell end's (docs/METRICS.md, "Memory per finished
// request"), and Merge's result is checked whole at both sizes.
func TestPooledHoldsNoRows(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 160,000 rows")
	}
	live := func() uint64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	var grew []int64
	for _, n := range []int{20_000, 60_000} {
		dir := t.TempDir()
		t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		var dirs []string
		for shard := range 2 {
			d := filepath.Join(dir, fmt.Sprint(shard))
			writeStreamedShard(t, d, int64(shard), t0, n)
			dirs = append(dirs, d)
		}
		res, err := Merge(dirs, filepath.Join(dir, "out"), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Requests["s\x00s/32:64/c8"]; got != 2*n || *res.Cells[0].ITLP50Ms <= 0 || res.Cells[0].Completed != int64(2*n) {
			t.Fatalf("merged %d rows of %d, itl p50 %v, %d completed", got, 2*n, res.Cells[0].ITLP50Ms, res.Cells[0].Completed)
		}

		runtime.GC() // the writers' pooled buffers: a pool's victims go at the second
		base := live()
		p := &pooled{runID: "m"}
		for _, d := range dirs {
			run, err := rundir.Open(d)
			if err != nil {
				t.Fatal(err)
			}
			s := &shardRows{stored: run.StoredRequests().Of(rundir.RowKey{CellID: "s/32:64/c8", Attempt: 1, Measurement: 1}), stage: "s"}
			if err := s.scan(); err != nil {
				t.Fatal(err)
			}
			p.shards = append(p.shards, s)
		}
		var most uint64
		read := 0
		for range p.All() {
			if read++; read%2000 == 0 {
				most = max(most, live())
			}
		}
		if read != 2*n || p.Err() != nil {
			t.Fatalf("read %d pooled rows of %d: %v", read, 2*n, p.Err())
		}
		grew = append(grew, int64(most)-int64(base))
	}
	perRow := float64(grew[1]-grew[0]) / 80_000
	t.Logf("the live heap grew %.1f MB reading 2 × 20,000 pooled streamed rows, %.1f MB reading 2 × 60,000: %.0f bytes a row more", float64(grew[0])/1e6, float64(grew[1])/1e6, perRow)
	if perRow > 100 {
		t.Errorf("the live heap grew %d bytes reading 2 × 20,000 pooled rows and %d reading 2 × 60,000: %.0f bytes a row more, it holds the rows", grew[0], grew[1], perRow)
	}
}

// writeStreamedShard writes shard's run directory of one cell of n
// streamed requests of 64 tokens, closed loop of 8, in send order.
func writeStreamedShard(t *testing.T, dir string, shard int64, start time.Time, n int) {
	t.Helper()
	for _, d := range []string{results.TableCells, results.TableRequests} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	id := fmt.Sprintf("run%d", shard)
	if err := rundir.WriteManifest(dir, &rundir.Manifest{RunID: id, Plan: "p", StartedAt: start, Status: rundir.RunOK}); err != nil {
		t.Fatal(err)
	}
	cell := results.Cell{RunID: id, Plan: "p", Stage: "s", CellID: "s/32:64/c8", Attempt: 1, Measurement: 1,
		Concurrency: 8, Shard: shard, Shards: 2, Status: results.StatusOK, SendLagP99: results.Some(0.1)}
	rows := make([]results.Request, 0, n)
	for i := range n {
		gaps := make([]float64, 63)
		for k := range gaps {
			gaps[k] = 1 + float64((i+k)%7)/100
		}
		q := results.Request{RunID: id, Stage: "s", CellID: cell.CellID, Attempt: 1, Measurement: 1, Seq: int64(i),
			SentAt: start.Add(time.Duration(i)*time.Millisecond + time.Duration(shard)*500*time.Microsecond), TTFTMs: results.Some(2.0), E2ELMs: results.Some(66.0),
			InputTokens: 32, OutputTokens: 64, Chunks: 64, ChunkGapsMs: gaps, Status: results.StatusOK}
		rows = append(rows, q)
	}
	if err := rundir.WriteFile(filepath.Join(dir, results.TableRequests, rundir.PartName(1, 1)), rows); err != nil {
		t.Fatal(err)
	}
	if err := rundir.WriteFile(filepath.Join(dir, results.TableCells, rundir.PartName(1, 1)), []results.Cell{cell}); err != nil {
		t.Fatal(err)
	}
}
