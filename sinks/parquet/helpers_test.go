package parquet_test

import (
	"database/sql"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/results/resultstest"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/pipeline/pipelinetest"
	"github.com/benchrun/benchrun/schema"
	pqs "github.com/benchrun/benchrun/sinks/parquet"
)

// duck opens an in-memory DuckDB: the real engine analysts use.
func duck(t testing.TB) *sql.DB {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// query runs q and returns every row as strings (NULL as "NULL").
func query(t testing.TB, db *sql.DB, q string, args ...any) [][]string {
	t.Helper()
	rows, err := db.Query(q, args...)
	if err != nil {
		t.Fatalf("%s\n%v", q, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out [][]string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		rec := make([]string, len(cols))
		for i, v := range vals {
			switch v := v.(type) {
			case nil:
				rec[i] = "NULL"
			case time.Time:
				rec[i] = v.UTC().Format("2006-01-02")
			default:
				rec[i] = fmt.Sprint(v)
			}
		}
		out = append(out, rec)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s\n%v", q, err)
	}
	return out
}

// sqlPath quotes a path for a DuckDB string literal.
// val reads a nullable metric, -1 when it is null: no metric is
// negative, so a null fails every check that wants a measured value.
func val[T int64 | float64](p *T) T {
	if p == nil {
		return -1
	}
	return *p
}

func sqlPath(p string) string { return "'" + strings.ReplaceAll(filepath.ToSlash(p), "'", "''") + "'" }

// writeRun writes the fixture's rows as one run of plan into root through
// the Parquet output, exactly as a run does, and returns the run directory.
func writeRun(t testing.TB, root, plan, runID string, day time.Time, metadata map[string]string) string {
	t.Helper()
	return writeRunWithMeta(t, root, plan, runID, day, metadata, nil)
}

// writeRunWith is writeRun with each verdict changed by edit first.
func writeRunWith(t testing.TB, root, plan, runID string, day time.Time, edit func(*results.Verdict)) string {
	t.Helper()
	return writeRunWithMeta(t, root, plan, runID, day, nil, edit)
}

func writeRunWithMeta(t testing.TB, root, plan, runID string, day time.Time, metadata map[string]string, edit func(*results.Verdict)) string {
	t.Helper()
	dir := filepath.Join(root, "plan="+plan, "date="+day.Format("2006-01-02"), "run="+runID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	o := pqs.New()
	if err := o.Start(pipelinetest.LiveEnv(&pipeline.RunInfo{ID: runID, Plan: &schema.Plan{Name: plan}, Dir: dir, StartedAt: day})); err != nil {
		t.Fatal(err)
	}
	for _, p := range resultstest.Points() {
		c := p.Cell
		c.RunID, c.Plan, c.Metadata = runID, plan, maps.Clone(metadata)
		reqs := make([]results.Request, len(p.Requests))
		for i, q := range p.Requests {
			q.RunID, q.Plan = runID, plan
			reqs[i] = q
		}
		vs := make([]results.Verdict, len(p.Verdicts))
		for i, v := range p.Verdicts {
			v.RunID, v.Plan = runID, plan
			if edit != nil {
				edit(&v)
			}
			vs[i] = v
		}
		if err := o.Cell(c, results.AsRequests(reqs)); err != nil {
			t.Fatal(err)
		}
		if err := o.Verdicts(c, vs); err != nil {
			t.Fatal(err)
		}
	}
	if err := o.Stop(nil); err != nil {
		t.Fatal(err)
	}
	return dir
}
