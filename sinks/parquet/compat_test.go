package parquet_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pq "github.com/parquet-go/parquet-go"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/results/resultstest"
	pqs "github.com/benchrun/benchrun/sinks/parquet"
)

// writeV1 regenerates testdata/v1. Never use it after schema version 1 has
// shipped: those files stand for what an earlier benchrun wrote.
var writeV1 = flag.Bool("write-v1", false, "write testdata/v1 from the current schema (only when creating schema version 1)")

const v1Dir = "testdata/v1"

func v1Rows() ([]results.Cell, []results.Request, []results.Verdict, []results.Sample) {
	var cells []results.Cell
	var reqs []results.Request
	var vs []results.Verdict
	for _, p := range resultstest.Points() {
		cells = append(cells, p.Cell)
		reqs = append(reqs, p.Requests...)
		vs = append(vs, p.Verdicts...)
	}
	samples := []results.Sample{
		{RunID: resultstest.RunID, Plan: "fixture", Stage: "sweep", CellID: "sweep/64:32/c1", At: resultstest.T0.Add(time.Second),
			Source: "nvml", Device: "gpu0", Metric: "gpu_util_pct", Unit: "%", Value: 87.5, Labels: map[string]string{"uuid": "GPU-1"}},
		{RunID: resultstest.RunID, Plan: "fixture", Stage: "sweep", CellID: "sweep/64:32/c1", At: resultstest.T0.Add(time.Second),
			Source: "prometheus", Device: "http://127.0.0.1:8000/metrics", Metric: "vllm:num_requests_running", Unit: "requests", Value: 1},
	}
	return cells, reqs, vs, samples
}

func TestWriteV1(t *testing.T) {
	if !*writeV1 {
		t.Skip("only with -write-v1")
	}
	cells, reqs, vs, samples := v1Rows()
	if err := os.MkdirAll(v1Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(pqs.WriteFile(filepath.Join(v1Dir, "cells.parquet"), cells))
	must(pqs.WriteFile(filepath.Join(v1Dir, "requests.parquet"), reqs))
	must(pqs.WriteFile(filepath.Join(v1Dir, "assertions.parquet"), vs))
	must(pqs.WriteFile(filepath.Join(v1Dir, "samples.parquet"), samples))
}

// Every column a v1 file has still exists in the current schema, with the
// same type: columns are added, never renamed, retyped or removed; a
// required column may only become optional (nullable).
func TestV1ColumnsStillExist(t *testing.T) {
	for table, current := range map[string]*pq.Schema{
		"cells": pq.SchemaOf(results.Cell{}), "requests": pq.SchemaOf(results.Request{}),
		"assertions": pq.SchemaOf(results.Verdict{}), "samples": pq.SchemaOf(results.Sample{}),
	} {
		f, err := os.Open(filepath.Join(v1Dir, table+".parquet"))
		if err != nil {
			t.Fatal(err)
		}
		st, _ := f.Stat()
		pf, err := pq.OpenFile(f, st.Size())
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range pf.Schema().Columns() {
			old, _ := pf.Schema().Lookup(path...)
			now, ok := current.Lookup(path...)
			name := strings.Join(path, ".")
			if !ok {
				t.Errorf("%s: column %s of schema v1 is gone from the current schema: never rename or remove a column (docs/RESULTS.md)", table, name)
				continue
			}
			if o, n := old.Node.Type().String(), now.Node.Type().String(); o != n {
				t.Errorf("%s: column %s was %s in v1 and is %s now: never retype a column", table, name, o, n)
			}
			if !repetitionKept(old.Node, now.Node) {
				t.Errorf("%s: column %s changed its repetition since v1", table, name)
			}
		}
		if kv, _ := pf.Lookup("benchrun.schema_version"); kv != "1" {
			t.Errorf("%s: benchrun.schema_version = %q, want 1", table, kv)
		}
		f.Close()
	}
}

// The current reader reads v1 files.
func TestReadV1WithCurrentReader(t *testing.T) {
	wantCells, wantReqs, wantVs, wantSamples := v1Rows()
	cells, err := resultstest.ReadFile[results.Cell](filepath.Join(v1Dir, "cells.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != len(wantCells) {
		t.Fatalf("%d cells, want %d", len(cells), len(wantCells))
	}
	for i, c := range cells {
		w := wantCells[i]
		if c.CellID != w.CellID || val(c.TTFTP99Ms) != val(w.TTFTP99Ms) || val(c.OutputTokS) != val(w.OutputTokS) || c.Metadata["quant"] != "Q4_K_M" || !c.StartedAt.Equal(w.StartedAt) {
			t.Errorf("cell %d read back as %s p99 %v tok/s %v md %v at %v", i, c.CellID, val(c.TTFTP99Ms), val(c.OutputTokS), c.Metadata, c.StartedAt)
		}
	}
	reqs, err := resultstest.ReadFile[results.Request](filepath.Join(v1Dir, "requests.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != len(wantReqs) || len(reqs[0].ChunkGapsMs) != len(wantReqs[0].ChunkGapsMs) || val(reqs[5].TTFTMs) != val(wantReqs[5].TTFTMs) || reqs[5].TTFTMs == nil {
		t.Errorf("requests read back wrong: %d rows", len(reqs))
	}
	vs, err := resultstest.ReadFile[results.Verdict](filepath.Join(v1Dir, "assertions.parquet"))
	if err != nil || len(vs) != len(wantVs) {
		t.Fatalf("assertions: %d rows, %v", len(vs), err)
	}
	samples, err := resultstest.ReadFile[results.Sample](filepath.Join(v1Dir, "samples.parquet"))
	if err != nil || len(samples) != len(wantSamples) || samples[0].Value != 87.5 {
		t.Fatalf("samples: %v, %v", samples, err)
	}
}

// olderCell stands for a cell row of a schema older than the reader's: a
// few columns only. DuckDB reads it beside current files with NULLs.
type olderCell struct {
	RunID      string  `parquet:"run_id"`
	Plan       string  `parquet:"plan"`
	CellID     string  `parquet:"cell_id"`
	OutputTokS float64 `parquet:"output_tok_s"`
	Status     string  `parquet:"status"`
}

// DuckDB reads a v1 file, an older file and a file written now together.
func TestDuckDBReadsAcrossVersions(t *testing.T) {
	root := filepath.Join(t.TempDir(), "runs")
	v1Run := filepath.Join(root, "plan=fixture", "date=2026-12-01", "run="+resultstest.RunID, "cells")
	if err := os.MkdirAll(v1Run, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(v1Dir, "cells.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(v1Run, "part-00001.parquet"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	oldRun := filepath.Join(root, "plan=fixture", "date=2026-11-01", "run=old", "cells")
	if err := os.MkdirAll(oldRun, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := pqs.WriteFile(filepath.Join(oldRun, "part-00001.parquet"), []olderCell{{RunID: "old", Plan: "fixture", CellID: "sweep/64:32/c1", OutputTokS: 100, Status: "ok"}}); err != nil {
		t.Fatal(err)
	}
	writeRun(t, root, "fixture", "20261202T000000Z-dddddd", time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC), map[string]string{"quant": "Q8_0"})

	db := duck(t)
	glob := sqlPath(filepath.Join(root, "**", "cells", "*.parquet"))
	rows := query(t, db, `SELECT run, count(*), count(ttft_p99_ms), count(metadata), min(output_tok_s) > 0
		FROM read_parquet(`+glob+`, hive_partitioning = true, union_by_name = true) GROUP BY run ORDER BY run`)
	got := make([]string, len(rows))
	for i, r := range rows {
		got[i] = strings.Join(r, " ")
	}
	want := []string{"20261201T040000Z-a1b2c3 6 6 6 true", "20261202T000000Z-dddddd 6 6 6 true", "old 1 0 0 true"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("per run (rows, ttft_p99 non-null, metadata non-null, tok/s > 0):\n got %q\nwant %q", got, want)
	}
}
