package e2e

import (
	"context"
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"
)

// A server that answers every request with HTTP 500, measured by the real
// binary with `ttft_p99_ms < 500`: nothing was measured, so nothing reads
// as measured. The verdict is an error naming the null metric (before: 0 <
// 500 passed), the run exits 3 (before: 0), the sweep is not "ok", and
// the null is NULL in Parquet (read by DuckDB), an empty CSV field, null
// in result.json; the measured zeros (req/s) stay 0.
func TestEveryRequestFailsIsNeverGreen(t *testing.T) {
	model := uniqueModel()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	r := run(t, ctx, "testdata/errors.cue", "-t", "model="+model, "-t", "assert=ttft_p99_ms < 500")
	waitGone(t, model)
	if r.code != 3 {
		t.Fatalf("exit %d, want 3 (a cell measured nothing)\nstderr:\n%s", r.code, r.stderr)
	}
	for _, want := range []string{
		`✗ assertion "ttft_p99_ms < 500" could not be evaluated: ttft_p99_ms is null: not measured (every request failed) on sweep 16:4 c=1`,
		"✗ sweep ended with errors",
		"2 of 2 cells error; first: sweep 16:4 c=1: 4 of 4 requests failed; first: HTTP 500",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if strings.Contains(r.stderr, "✓ sweep ok") {
		t.Errorf("stderr says the sweep is ok:\n%s", r.stderr)
	}

	// CSV on stdout (the seed's columns): the nulls are empty fields.
	rows := parseCSV(t, r.stdout)
	if len(rows) != 2 {
		t.Fatalf("%d CSV rows, want 2:\n%s", len(rows), r.stdout)
	}
	for i, row := range rows {
		if row["status"] != "error" {
			t.Errorf("row %d: status %q", i, row["status"])
		}
		for _, col := range []string{"first_call_ms", "ttft_ms", "prefill_tok_s", "itl_p50_ms", "itl_p99_ms", "speedup_vs_c1", "batching_efficiency"} {
			if row[col] != "" {
				t.Errorf("row %d: %s = %q, want an empty field (not measured)", i, col, row[col])
			}
		}
		if row["decode_tok_s"] != "0" {
			t.Errorf("row %d: decode_tok_s = %q, want the measured 0", i, row["decode_tok_s"])
		}
	}
	dir := runDir(t, r.out)
	f, err := os.Open(filepath.Join(dir, "cells.csv"))
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil || len(recs) != 3 {
		t.Fatalf("cells.csv: %d records, %v", len(recs), err)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	for _, rec := range recs[1:] {
		if rec[col["ttft_p99_ms"]] != "" || rec[col["req_s"]] != "0" || rec[col["requests"]] != "4" || rec[col["failed"]] != "4" {
			t.Errorf("cells.csv: ttft_p99_ms %q req_s %q requests %q failed %q", rec[col["ttft_p99_ms"]], rec[col["req_s"]], rec[col["requests"]], rec[col["failed"]])
		}
	}

	// Parquet, as an analyst reads it.
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	glob := func(table string) string { return "'" + filepath.Join(dir, table, "*.parquet") + "'" }
	var n, ttft, lat, speedup int
	var reqS float64
	if err := db.QueryRow(`SELECT count(*), count(ttft_p99_ms), count(itl_p50_ms) + count(tpot_ms) + count(e2el_p99_ms) + count(first_call_ms),
		count(speedup_vs_c1) + count(batching_efficiency), max(req_s) FROM read_parquet(`+glob("cells")+`)`).Scan(&n, &ttft, &lat, &speedup, &reqS); err != nil {
		t.Fatal(err)
	}
	if n != 2 || ttft != 0 || lat != 0 || speedup != 0 || reqS != 0 {
		t.Errorf("DuckDB: %d rows, %d non-null ttft_p99_ms, %d non-null latencies, %d non-null speedups, max req_s %v; want 2 rows, every latency and speedup NULL, req_s 0", n, ttft, lat, speedup, reqS)
	}
	var reqs, reqTTFT int
	if err := db.QueryRow(`SELECT count(*), count(ttft_ms) FROM read_parquet(`+glob("requests")+`)`).Scan(&reqs, &reqTTFT); err != nil {
		t.Fatal(err)
	}
	if reqs != 8 || reqTTFT != 0 {
		t.Errorf("DuckDB requests: %d rows, %d non-null ttft_ms; want 8 and 0", reqs, reqTTFT)
	}
	var outcome, verr, val string
	if err := db.QueryRow(`SELECT outcome, error, "values"['ttft_p99_ms'] FROM read_parquet(`+glob("assertions")+`) ORDER BY cell LIMIT 1`).Scan(&outcome, &verr, &val); err != nil {
		t.Fatal(err)
	}
	if outcome != "error" || verr != "ttft_p99_ms is null: not measured (every request failed)" || val != "null" {
		t.Errorf("assertions row: outcome %q error %q value %q", outcome, verr, val)
	}

	// result.json and the manifest.
	var res struct {
		Status   string `json:"status"`
		ExitCode *int   `json:"exit_code"`
		Cells    []map[string]any
		Stages   []struct{ Name, Status, Reason string }
	}
	b, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if res.Status != "failed" || res.ExitCode == nil || *res.ExitCode != 3 || len(res.Cells) != 2 {
		t.Fatalf("result.json: status %q exit %v, %d cells", res.Status, res.ExitCode, len(res.Cells))
	}
	for _, c := range res.Cells {
		if v, ok := c["p99_ttft_ms"]; !ok || v != nil {
			t.Errorf("result.json p99_ttft_ms = %v (present %v), want null", v, ok)
		}
		if v, ok := c["request_throughput"].(float64); !ok || v != 0 {
			t.Errorf("result.json request_throughput = %v, want the measured 0", c["request_throughput"])
		}
	}
	var man struct {
		Status   string `json:"status"`
		ExitCode *int   `json:"exit_code"`
		Stages   []struct{ Name, Status, Reason string }
	}
	b, _ = os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err := json.Unmarshal(b, &man); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range man.Stages {
		if s.Name == "sweep" {
			found = true
			if s.Status != "error" || !strings.HasPrefix(s.Reason, "2 of 2 cells error") {
				t.Errorf("manifest: sweep %q %q, want error with the count", s.Status, s.Reason)
			}
		}
	}
	if !found || man.Status != "failed" || man.ExitCode == nil || *man.ExitCode != 3 {
		t.Errorf("manifest: status %q exit %v stages %+v", man.Status, man.ExitCode, man.Stages)
	}
	// The report shows the nulls as not measured.
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	if !strings.Contains(string(md), "– not measured") {
		t.Errorf("report.md does not say what is not measured:\n%s", md)
	}
}

// Without any assertion, a sweep whose every cell is error is not "✓
// sweep ok" and the run does not exit 0 (before: both).
func TestEveryCellErrorWithoutAssertionsFails(t *testing.T) {
	model := uniqueModel()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	r := run(t, ctx, "testdata/errors.cue", "-t", "model="+model)
	waitGone(t, model)
	if r.code == 0 || r.code != 3 {
		t.Fatalf("exit %d, want 3\nstderr:\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "✓ sweep ok") || !strings.Contains(r.stderr, "✗ sweep ended with errors") || !strings.Contains(r.stderr, "0 assertion checks") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
}
