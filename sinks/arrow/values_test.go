package arrow

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/rundir"
	pqs "github.com/benchrun/benchrun/sinks/parquet"
)

// TestValues writes the test cells with Tables and reads both files back
// with arrow-go's ipc.FileReader: every value of every row equals the
// value the Parquet output's files of the same rows read back as
// (resultstest.ReadTable), NULL metrics NULL and measured zeros 0 (-0 keeping
// its sign), strings byte for byte, maps entry for entry, times to the
// microsecond Parquet keeps; one record batch per cell for each table
// (none for a cell without requests).
func TestValues(t *testing.T) {
	cells := testCells()
	dir := t.TempDir()
	cellsPath, reqsPath := writeArrow(t, dir, cells)
	pqCells, pqReqs := writeParquet(t, filepath.Join(dir, "parquet"), cells)

	gotCells := decode[results.Cell](t, cellsPath)
	gotReqs := decode[results.Request](t, reqsPath)
	compareRows(t, "cells.arrow vs Parquet", canonAll(pqCells), canonAll(gotCells))
	compareRows(t, "requests.arrow vs Parquet", canonAll(pqReqs), canonAll(gotReqs))
	// And against the rows as written: the test's canon form of the Go rows
	// is what both formats must hold (Parquet agreeing is not enough).
	wantCells, wantReqs := flatten(cells)
	compareRows(t, "cells.arrow vs rows", canonAll(wantCells), canonAll(gotCells))
	compareRows(t, "requests.arrow vs rows", canonAll(wantReqs), canonAll(gotReqs))

	_, cellBatches := readIPC(t, cellsPath)
	_, reqBatches := readIPC(t, reqsPath)
	withReqs := 0
	for i, c := range cells {
		if len(c.reqs) > 0 {
			if withReqs < len(reqBatches) && reqBatches[withReqs].NumRows() != int64(len(c.reqs)) {
				t.Errorf("request batch %d has %d rows; cell %d has %d requests", withReqs, reqBatches[withReqs].NumRows(), i, len(c.reqs))
			}
			withReqs++
		}
	}
	if len(cellBatches) != len(cells) || len(reqBatches) != withReqs {
		t.Errorf("%d cell batches and %d request batches; want one per cell (%d) and one per cell with requests (%d)",
			len(cellBatches), len(reqBatches), len(cells), withReqs)
	}
}

// TestNullIsNotZero reads the arrays themselves, without the test's
// decoder: a metric not measured is NULL (validity bit clear), a measured
// 0 is a valid 0, and the columns that cannot be null have no nulls.
func TestNullIsNotZero(t *testing.T) {
	cells := testCells()
	cellsPath, reqsPath := writeArrow(t, t.TempDir(), cells)
	schema, recs := readIPC(t, cellsPath)
	col := func(rec arrow.RecordBatch, name string) arrow.Array {
		t.Helper()
		idx := schema.FieldIndices(name)
		if len(idx) != 1 {
			t.Fatalf("no column %s", name)
		}
		return rec.Column(idx[0])
	}
	for i, c := range cells {
		rec := recs[i]
		ttft := col(rec, "ttft_p99_ms").(*array.Float64)
		switch {
		case c.cell.TTFTP99Ms == nil && !ttft.IsNull(0):
			t.Errorf("cell %s: ttft_p99_ms not measured, yet not NULL (%v)", c.cell.CellID, ttft.Value(0))
		case c.cell.TTFTP99Ms != nil && (ttft.IsNull(0) || ttft.Value(0) != *c.cell.TTFTP99Ms):
			t.Errorf("cell %s: ttft_p99_ms = %v (null %v), want %v", c.cell.CellID, ttft.Value(0), ttft.IsNull(0), *c.cell.TTFTP99Ms)
		}
		mml := col(rec, "max_model_len").(*array.Int64)
		if (c.cell.MaxModelLen == nil) != mml.IsNull(0) {
			t.Errorf("cell %s: max_model_len null = %v, measured = %v", c.cell.CellID, mml.IsNull(0), c.cell.MaxModelLen != nil)
		}
		for j, f := range schema.Fields() {
			if !f.Nullable && rec.Column(j).NullN() != 0 {
				t.Errorf("cell %s: column %s is not nullable, yet has %d nulls", c.cell.CellID, f.Name, rec.Column(j).NullN())
			}
		}
	}
	// The unmeasured cell (every request failed): its throughputs are
	// measured zeros, its latencies NULL.
	u := recs[len(cells)-3]
	if v := col(u, "req_s").(*array.Float64); v.IsNull(0) || v.Value(0) != 0 {
		t.Errorf("unmeasured cell: req_s is a measured 0; read null=%v value=%v", v.IsNull(0), v.Value(0))
	}
	if v := col(u, "ttft_ms").(*array.Float64); !v.IsNull(0) {
		t.Errorf("unmeasured cell: ttft_ms not measured, read %v", v.Value(0))
	}
	// The edge cell: measured zeros, -0, extremes.
	e := recs[len(cells)-2]
	for name, want := range map[string]float64{"ttft_ms": 0, "first_call_ms": 0, "cost_usd": 0, "itl_p50_ms": math.Copysign(0, -1), "decode_tok_s": math.MaxFloat64, "prefill_tok_s": math.SmallestNonzeroFloat64} {
		v := col(e, name).(*array.Float64)
		if v.IsNull(0) || math.Float64bits(v.Value(0)) != math.Float64bits(want) {
			t.Errorf("edge cell: %s = %v (null %v), want %v", name, v.Value(0), v.IsNull(0), want)
		}
	}
	if v := col(e, "max_model_len").(*array.Int64); v.IsNull(0) || v.Value(0) != 0 {
		t.Errorf("edge cell: max_model_len is a measured 0; read null=%v value=%v", v.IsNull(0), v.Value(0))
	}

	// Requests: a failed request's ttft is NULL.
	rschema, rrecs := readIPC(t, reqsPath)
	var failed, ok int
	for _, rec := range rrecs {
		ttft := rec.Column(rschema.FieldIndices("ttft_ms")[0]).(*array.Float64)
		status := rec.Column(rschema.FieldIndices("status")[0]).(*array.String)
		for i := 0; i < int(rec.NumRows()); i++ {
			if status.Value(i) == results.StatusError {
				failed++
				if !ttft.IsNull(i) {
					t.Errorf("a failed request's ttft_ms = %v, want NULL", ttft.Value(i))
				}
			} else {
				ok++
				if ttft.IsNull(i) {
					t.Error("an ok request's ttft_ms is NULL")
				}
			}
		}
	}
	if failed == 0 || ok == 0 {
		t.Fatalf("the test rows should hold failed (%d) and ok (%d) requests", failed, ok)
	}
}

// TestResumeOrder: rows stored by earlier attempts (Rows), then the new
// attempt's cells, read back in that order: the files hold every row the
// Parquet tables hold, in part order.
func TestResumeOrder(t *testing.T) {
	cells := testCells()
	prior, fresh := cells[:4], cells[4:]
	dir := t.TempDir()
	tb, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	pc, pr := flatten(prior)
	if err := tb.Rows(pc, rundir.RequestList(pr)); err != nil {
		t.Fatal(err)
	}
	for _, c := range fresh {
		if err := tb.Cell(c.cell, results.AsRequests(c.reqs)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	wantCells, wantReqs := flatten(cells)
	compareRows(t, "cells", canonAll(wantCells), canonAll(decode[results.Cell](t, filepath.Join(dir, CellsFile))))
	compareRows(t, "requests", canonAll(wantReqs), canonAll(decode[results.Request](t, filepath.Join(dir, RequestsFile))))
}

// TestRowsIsReplay: rows stored earlier, written with Rows, make the
// same bytes as the cells written one Cell call each with their requests,
// which is how a replay of the run directory drives the sink; a request
// row without its cell row is left out, as the replay leaves it out.
func TestRowsIsReplay(t *testing.T) {
	cells := testCells()
	pc, pr := flatten(cells)
	pr = append(pr, results.Request{CellID: "orphan", Attempt: 3, Seq: 0}) // its cell row never stored
	viaRows := t.TempDir()
	tb, err := Open(viaRows)
	if err != nil {
		t.Fatal(err)
	}
	if err := tb.Rows(pc, rundir.RequestList(pr)); err != nil {
		t.Fatal(err)
	}
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	viaCells := t.TempDir()
	writeArrow(t, viaCells, cells)
	for _, f := range []string{CellsFile, RequestsFile} {
		a, errA := os.ReadFile(filepath.Join(viaRows, f))
		b, errB := os.ReadFile(filepath.Join(viaCells, f))
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			t.Errorf("%s written by Rows differs from the one written cell by cell (%d and %d bytes; %v %v)", f, len(a), len(b), errA, errB)
		}
	}
}

// TestNoCells: a run without cells still gets both files, readable, with
// the schema and no batch.
func TestNoCells(t *testing.T) {
	dir := t.TempDir()
	writeArrow(t, dir, nil)
	for _, f := range []string{CellsFile, RequestsFile} {
		s, recs := readIPC(t, filepath.Join(dir, f))
		if len(recs) != 0 || s.NumFields() == 0 {
			t.Errorf("%s of no cells: %d batches, %d fields; want 0 and the schema", f, len(recs), s.NumFields())
		}
	}
}

// TestZeroTime: a zero time.Time (year 1) is the Parquet file's value,
// -62135596800000000 µs, as pqarrow (and DuckDB) read the file. parquet-go's
// own reader (resultstest.ReadTable) turns that value into 1754-08-30: it
// converts through nanoseconds, which overflow int64 outside 1678-2262.
// The Arrow file holds what the Parquet file holds, not that misreading.
func TestZeroTime(t *testing.T) {
	dir := t.TempDir()
	reqs := []results.Request{{CellID: "c", SentAt: time.Time{}}}
	_, reqsPath := writeArrow(t, dir, []cellOf{{results.Cell{CellID: "c"}, reqs}})
	pq := filepath.Join(dir, "part.parquet")
	if err := pqs.WriteFile(pq, reqs); err != nil {
		t.Fatal(err)
	}
	r, err := file.OpenParquetFile(pq, false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fr, err := pqarrow.NewFileReader(r, pqarrow.ArrowReadProperties{}, memory.NewGoAllocator())
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	inParquet := tbl.Column(tbl.Schema().FieldIndices("sent_at")[0]).Data().Chunk(0).(*array.Timestamp).Value(0)

	schema, recs := readIPC(t, reqsPath)
	inArrow := recs[0].Column(schema.FieldIndices("sent_at")[0]).(*array.Timestamp).Value(0)
	want := time.Time{}.UnixMicro()
	if inArrow != inParquet || int64(inArrow) != want {
		t.Errorf("zero sent_at: Arrow holds %d, the Parquet file %d; want both %d", inArrow, inParquet, want)
	}
}
