package parquet_test

import (
	"database/sql"
	"os"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/benchrun/benchrun/internal/results"
	pqs "github.com/benchrun/benchrun/sinks/parquet"
)

func TestX(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "plan=filedir", "date=2026-12-01", "run=R1", "cells")
	os.MkdirAll(p, 0o755)
	if err := pqs.WriteFile(filepath.Join(p, "part-00001.parquet"), []results.Cell{{RunID: "R1", Plan: "inside", StartedAt: time.Now(), Metadata: map[string]string{"quant": "Q4"}, ISL: 1}}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(p, ".part-00002.parquet.tmp-123"), []byte("garbage"), 0o644)
	db, _ := sql.Open("duckdb", "")
	for _, q := range []string{
		"describe select * from read_parquet('" + dir + "/**/cells/*.parquet', hive_partitioning=true)",
		"select plan, run, date, run_id, metadata['quant'], typeof(metadata['quant']) from read_parquet('" + dir + "/**/cells/*.parquet', hive_partitioning=true)",
		"select plan, metadata.quant from read_parquet('" + dir + "/**/cells/*.parquet', hive_partitioning=true)",
	} {
		rows, err := db.Query(q)
		if err != nil {
			t.Log(q, err)
			continue
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptr := make([]any, len(cols))
			for i := range vals {
				ptr[i] = &vals[i]
			}
			rows.Scan(ptr...)
			t.Logf("%v", vals)
		}
	}
}
