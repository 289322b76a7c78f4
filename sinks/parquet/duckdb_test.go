package parquet_test

import (
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/results/resultstest"
)

// docQueries returns the SQL examples of docs/RESULTS.md by name, with
// 'runs/ pointed at root, so the documented queries are the tested ones.
func docQueries(t *testing.T, root string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "RESULTS.md"))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?s)```sql\n-- query: ([a-z0-9-]+)\n(.*?)```")
	out := map[string]string{}
	for _, m := range re.FindAllStringSubmatch(string(b), -1) {
		out[m[1]] = strings.ReplaceAll(m[2], "'runs/", "'"+filepath.ToSlash(root)+"/")
	}
	return out
}

// threeRuns writes two runs of plan llama-q4 (quant Q4_K_M, then Q8_0, on
// different days) and one of plan llama-q8, in the hive layout.
func threeRuns(t *testing.T) string {
	root := filepath.Join(t.TempDir(), "runs")
	day := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	writeRun(t, root, "llama-q4", "20261130T010000Z-aaaaaa", day, map[string]string{"quant": "Q4_K_M", "gpu": "h100"})
	writeRun(t, root, "llama-q4", "20261201T010000Z-bbbbbb", day.AddDate(0, 0, 1), map[string]string{"quant": "Q8_0", "gpu": "h100"})
	writeRun(t, root, "other", "20261201T020000Z-cccccc", day.AddDate(0, 0, 1), nil)
	return root
}

func atof(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return f
}

func TestDocumentedQueries(t *testing.T) {
	root := threeRuns(t)
	qs := docQueries(t, root)
	for _, name := range []string{"per-plan-cell", "requests-join-cells", "recompute-p99-ttft", "recompute-itl", "metadata-filter", "failed-assertions", "slices-shape"} {
		if qs[name] == "" {
			t.Fatalf("docs/RESULTS.md has no ```sql block starting with -- query: %s", name)
		}
	}
	db := duck(t)
	n := len(resultstest.Points())

	t.Run("per-plan-cell", func(t *testing.T) {
		rows := query(t, db, qs["per-plan-cell"])
		if len(rows) != 2*n {
			t.Fatalf("%d groups, want %d (2 plans × %d cells): %v", len(rows), 2*n, n, rows)
		}
		for _, r := range rows {
			want := "1"
			if r[0] == "llama-q4" {
				want = "2"
			}
			if r[5] != want {
				t.Errorf("plan %s cell %s:%s c=%s: %s runs, want %s", r[0], r[1], r[2], r[3], r[5], want)
			}
		}
	})
	t.Run("requests-join-cells", func(t *testing.T) {
		rows := query(t, db, qs["requests-join-cells"])
		if len(rows) != 3*n {
			t.Fatalf("%d cells joined, want %d", len(rows), 3*n)
		}
		for _, r := range rows {
			if r[2] != r[3] || r[3] != r[4] {
				t.Errorf("run %s cell %s: requests column %s, %s request rows, %s ok", r[0], r[1], r[2], r[3], r[4])
			}
		}
	})
	t.Run("recompute-p99-ttft", func(t *testing.T) {
		rows := query(t, db, qs["recompute-p99-ttft"])
		if len(rows) != 3*n {
			t.Fatalf("%d cells, want %d", len(rows), 3*n)
		}
		for _, r := range rows {
			if d := atof(t, r[4]); d > 1e-9 {
				t.Errorf("%s %s: cell p99 %s, recomputed %s", r[0], r[1], r[2], r[3])
			}
		}
	})
	t.Run("recompute-itl", func(t *testing.T) {
		rows := query(t, db, qs["recompute-itl"])
		want := map[string][2]float64{}
		for _, p := range resultstest.Points() {
			want[p.Cell.CellID] = [2]float64{*p.Cell.ITLP50Ms, *p.Cell.ITLP99Ms}
		}
		for _, r := range rows {
			w := want[r[1]]
			if d0, d1 := atof(t, r[2])-w[0], atof(t, r[4])-w[1]; d0*d0 > 1e-18 || d1*d1 > 1e-18 {
				t.Errorf("%s: itl p50/p99 from chunk gaps %s/%s, cell row %v", r[1], r[2], r[4], w)
			}
		}
	})
	t.Run("metadata-filter", func(t *testing.T) {
		rows := query(t, db, qs["metadata-filter"])
		if len(rows) != n {
			t.Fatalf("%d rows with quant=Q8_0, want %d", len(rows), n)
		}
		for _, r := range rows {
			if r[0] != "20261201T010000Z-bbbbbb" || r[2] != "Q8_0" {
				t.Errorf("row %v: want run 20261201T010000Z-bbbbbb, quant Q8_0", r)
			}
		}
	})
	t.Run("slices-shape", func(t *testing.T) {
		// Every measured cell (one pass each in the fixtures) has windows,
		// numbered from 0, whose sends and tokens add up to the cell's
		// requests and output tokens.
		rows := query(t, db, qs["slices-shape"])
		type sum struct {
			windows, sent int
			tokens        float64
		}
		got := map[string]*sum{}
		for _, r := range rows {
			k := r[0] + " " + r[1]
			if got[k] == nil {
				got[k] = &sum{}
			}
			if r[4] != strconv.Itoa(got[k].windows) {
				t.Errorf("%s: window %s after %d windows", k, r[4], got[k].windows)
			}
			got[k].windows++
			got[k].sent += int(atof(t, r[12]))
			got[k].tokens += atof(t, r[7]) * atof(t, r[6])
		}
		for _, p := range resultstest.Points() {
			var outTok float64
			for _, q := range p.Requests {
				if q.Status == results.StatusOK {
					outTok += float64(q.OutputTokens)
				}
			}
			for _, run := range []string{"20261130T010000Z-aaaaaa", "20261201T010000Z-bbbbbb", "20261201T020000Z-cccccc"} {
				g := got[run+" "+p.Cell.CellID]
				if len(p.Requests) == 0 {
					if g != nil {
						t.Errorf("%s %s: %d windows for a cell without requests", run, p.Cell.CellID, g.windows)
					}
					continue
				}
				if g == nil || g.sent != len(p.Requests) || math.Abs(g.tokens-outTok) > 1e-6 {
					t.Errorf("%s %s: windows %+v, want %d sends and %g tokens", run, p.Cell.CellID, g, len(p.Requests), outTok)
				}
			}
		}
	})
	t.Run("failed-assertions", func(t *testing.T) {
		rows := query(t, db, qs["failed-assertions"])
		if len(rows) != 3 {
			t.Fatalf("%d failed verdicts, want one per run: %v", len(rows), rows)
		}
		if rows[0][0] != "2026-12-01" || rows[0][3] != "sweep 256:32 c=16" || rows[0][6] != "fail" {
			t.Errorf("first row %v", rows[0])
		}
		// What did not fail is not listed, however it ended: a baseline
		// check with too little history, a comparison that cannot decide,
		// a check the machine or too few samples left inconclusive.
		undecided := filepath.Join(t.TempDir(), "runs")
		writeRunWith(t, undecided, "nightly", "20261202T010000Z-dddddd", time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC), func(v *results.Verdict) {
			v.Outcome, v.Passed = map[string]string{"pass": "insufficient data", "fail": "inconclusive", "error": "unknown"}[v.Outcome], false
		})
		if rows := query(t, db, docQueries(t, undecided)["failed-assertions"]); len(rows) != 0 {
			t.Errorf("failed-assertions lists %d verdicts of a run where nothing failed: %v", len(rows), rows)
		}
	})
}

// The hive keys plan, date and run sit beside the in-file columns. DuckDB
// (1.5) lets a hive key replace a file column of the same name, so `plan`
// must be, and is, the same value in both; the run id lives in the file as
// run_id and in the path as run, so neither hides the other.
func TestHivePartitionsMatchFileColumns(t *testing.T) {
	root := threeRuns(t)
	db := duck(t)
	glob := sqlPath(filepath.Join(root, "**", "cells", "*.parquet"))
	rows := query(t, db, `
		SELECT count(*), count(*) FILTER (WHERE h.plan = f.plan AND h.run = f.run_id)
		FROM read_parquet(`+glob+`, hive_partitioning = true, filename = true) h
		JOIN read_parquet(`+glob+`, hive_partitioning = false, filename = true) f USING (filename, cell_id)`)
	if rows[0][0] != "18" {
		t.Fatalf("joined %s rows, want 18", rows[0][0])
	}
	types := query(t, db, `SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM read_parquet(`+glob+`, hive_partitioning = true))
		WHERE column_name IN ('plan', 'run', 'run_id', 'date', 'metadata') ORDER BY column_name`)
	want := "date DATE|metadata MAP(VARCHAR, VARCHAR)|plan VARCHAR|run VARCHAR|run_id VARCHAR"
	var got []string
	for _, r := range types {
		got = append(got, r[0]+" "+r[1])
	}
	if strings.Join(got, "|") != want {
		t.Errorf("column types %q, want %q", strings.Join(got, "|"), want)
	}
	if dup := query(t, db, `SELECT count(*) FROM (DESCRIBE SELECT * FROM read_parquet(`+glob+`, hive_partitioning = true)) WHERE column_name = 'plan'`); dup[0][0] != "1" {
		t.Errorf("%s columns named plan, want 1", dup[0][0])
	}
}
