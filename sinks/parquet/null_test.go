package parquet_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	pq "github.com/parquet-go/parquet-go"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/results/resultstest"
	"github.com/benchrun/benchrun/internal/rundir"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/pipeline/pipelinetest"
	"github.com/benchrun/benchrun/schema"
	pqs "github.com/benchrun/benchrun/sinks/parquet"
)

// Zero is a measurement; "not measured" is NULL. A cell whose every
// request failed goes through the Parquet output and comes back NULL in
// DuckDB and nil from benchrun's reader where nothing was measured, and 0
// where a zero was measured (0 req/s over its window); its failed
// requests have NULL ttft and e2el. Every nullable column is an optional
// Parquet column; counts stay required.
func TestNullRoundTrip(t *testing.T) {
	dir := t.TempDir()
	o := pqs.New()
	if err := o.Start(pipelinetest.LiveEnv(&pipeline.RunInfo{ID: resultstest.RunID, Plan: &schema.Plan{Name: "fixture"}, Dir: dir, StartedAt: resultstest.T0})); err != nil {
		t.Fatal(err)
	}
	ok, bad := resultstest.Points()[0], resultstest.Unmeasured()
	for _, p := range []resultstest.Point{ok, bad} {
		if err := o.Cell(p.Cell, results.AsRequests(p.Requests)); err != nil {
			t.Fatal(err)
		}
		if err := o.Verdicts(p.Cell, p.Verdicts); err != nil {
			t.Fatal(err)
		}
	}

	// benchrun's reader.
	cells, err := resultstest.ReadTable[results.Cell](dir, results.TableCells)
	if err != nil || len(cells) != 2 {
		t.Fatalf("read %d cells: %v", len(cells), err)
	}
	got := cells[1]
	for _, col := range resultstest.NullableColumns() {
		if have, want := fieldByColumn(got, col), fieldByColumn(bad.Cell, col); have != want {
			t.Errorf("reader: %s = %s, want %s", col, have, want)
		}
	}
	if got.TTFTP99Ms != nil || got.SpeedupVsC1 != nil || got.MaxModelLen != nil || got.CostUSD != nil || got.ReqS == nil || *got.ReqS != 0 ||
		got.Requests != 8 || got.Failed != 8 || got.Completed != 0 {
		t.Errorf("reader: ttft p99 %v speedup %v max_model_len set %v cost %v req_s %v (requests %d failed %d completed %d); want nulls, a measured 0 req/s and the counts",
			show(got.TTFTP99Ms), show(got.SpeedupVsC1), got.MaxModelLen != nil, show(got.CostUSD), show(got.ReqS), got.Requests, got.Failed, got.Completed)
	}
	if m := cells[0]; m.TTFTP99Ms == nil || *m.TTFTP99Ms != *ok.Cell.TTFTP99Ms || m.SpeedupVsC1 == nil {
		t.Errorf("reader: the measured row lost its values: ttft p99 %v speedup %v", show(m.TTFTP99Ms), show(m.SpeedupVsC1))
	}
	reqs, err := resultstest.ReadTable[results.Request](dir, results.TableRequests)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range reqs {
		if q.CellID == bad.Cell.CellID && (q.TTFTMs != nil || q.E2ELMs != nil || q.TTFTSchedMs != nil || q.E2ELSchedMs != nil) {
			t.Errorf("reader: failed request %d has ttft %v e2el %v; want null", q.Seq, show(q.TTFTMs), show(q.E2ELMs))
		}
		if q.CellID == ok.Cell.CellID && q.TTFTMs == nil {
			t.Errorf("reader: ok request %d lost its ttft", q.Seq)
		}
	}

	// DuckDB.
	db := duck(t)
	cellsGlob := sqlPath(filepath.Join(dir, "cells", "*.parquet"))
	rows := query(t, db, `SELECT cell_id, ttft_p99_ms IS NULL, itl_p50_ms IS NULL, tpot_ms IS NULL, first_call_ms IS NULL,
		speedup_vs_c1 IS NULL, batching_efficiency IS NULL, effective_isl IS NULL, max_model_len IS NULL,
		cost_usd IS NULL, client_cpu_util IS NULL, req_s, goodput, requests, failed, completed
		FROM read_parquet(`+cellsGlob+`) ORDER BY started_at`)
	if len(rows) != 2 {
		t.Fatalf("DuckDB read %d cell rows", len(rows))
	}
	if g, w := strings.Join(rows[1], " "), bad.Cell.CellID+" true true true true true true true true true true 0 0 8 8 0"; g != w {
		t.Errorf("DuckDB, the failed cell:\n got %s\nwant %s", g, w)
	}
	if g := strings.Join(rows[0][1:6], " "); g != "false false false false false" {
		t.Errorf("DuckDB, the measured cell: nulls %s; want none", g)
	}
	// Aggregates skip NULL: the failed cell does not drag a p99 to 0.
	agg := query(t, db, `SELECT count(ttft_p99_ms), min(ttft_p99_ms) > 0 FROM read_parquet(`+cellsGlob+`)`)
	if g := strings.Join(agg[0], " "); g != "1 true" {
		t.Errorf("DuckDB count/min over ttft_p99_ms = %s, want 1 true", g)
	}
	reqRows := query(t, db, `SELECT count(*), count(ttft_ms), count(e2el_ms), count(send_lag_ms) FROM read_parquet(`+
		sqlPath(filepath.Join(dir, "requests", "*.parquet"))+`) WHERE status = 'error'`)
	if g := strings.Join(reqRows[0], " "); g != "8 0 0 8" {
		t.Errorf("DuckDB failed requests (rows, ttft, e2el, send_lag non-null) = %s, want 8 0 0 8", g)
	}

	// The file's schema: nullable metrics optional, counts required.
	f, err := os.Open(filepath.Join(dir, "cells", rundir.PartName(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	pf, err := pq.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	for _, col := range []string{"ttft_p99_ms", "speedup_vs_c1", "max_model_len", "req_s", "cost_usd", "client_cpu_util"} {
		if c, ok := pf.Schema().Lookup(col); !ok || !c.Node.Optional() {
			t.Errorf("column %s is not optional in the file", col)
		}
	}
	for _, col := range []string{"requests", "completed", "failed", "duration_s", "status"} {
		if c, ok := pf.Schema().Lookup(col); !ok || !c.Node.Required() {
			t.Errorf("column %s is not required in the file", col)
		}
	}
}

// fieldByColumn returns a nullable column of a cell row as text, "null"
// when it is null.
func fieldByColumn(c results.Cell, column string) string {
	rv := reflect.ValueOf(c)
	for i := 0; i < rv.NumField(); i++ {
		name, _, _ := strings.Cut(rv.Type().Field(i).Tag.Get("parquet"), ",")
		if name != column {
			continue
		}
		if f := rv.Field(i); f.Kind() == reflect.Pointer {
			if f.IsNil() {
				return "null"
			}
			return fmt.Sprint(f.Elem().Interface())
		}
	}
	panic("no nullable column " + column)
}

func show(p *float64) any {
	if p == nil {
		return "null"
	}
	return *p
}

// docs/RESULTS.md says which columns can be NULL and when: a column's
// definition carries **NULL** exactly when the column is optional in the
// files benchrun writes.
func TestNullableColumnsDocumented(t *testing.T) {
	docs := docTables(t)
	for table, row := range map[string]any{results.TableCells: results.Cell{}, results.TableRequests: results.Request{}, results.TableAssertions: results.Verdict{}, results.TableSamples: results.Sample{}} {
		s := pq.SchemaOf(row)
		for _, name := range columnsOf(row) {
			col, ok := s.Lookup(name)
			if !ok {
				continue // a list or map column: its leaves have other paths
			}
			d, documented := docs[table][name]
			if !documented {
				continue // TestEveryColumnDocumented names it
			}
			switch says := strings.Contains(d.def, "**NULL**"); {
			case col.Node.Optional() && !says:
				t.Errorf("docs/RESULTS.md: %s.%s can be NULL; say when with **NULL** in its definition", table, name)
			case !col.Node.Optional() && says:
				t.Errorf("docs/RESULTS.md: %s.%s is never NULL, yet its definition says **NULL**", table, name)
			}
		}
	}
	if n := len(resultstest.NullableColumns()); n < 60 {
		t.Errorf("%d nullable cell columns; every metric that can lack samples is one", n)
	}
}
