package parquet_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pq "github.com/parquet-go/parquet-go"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/results/resultstest"
)

// skeletonRun is a real run directory written by an earlier benchrun: the
// walking skeleton (commit 5aa2dd7), running plans/quickstart.cue against
// its simulator. Its cell rows have 48 of today's 94 columns and its
// request rows 15 of 20, so it stands for every file an older release left
// in runs/.
// Never regenerate it: it is what an earlier version wrote.
const skeletonRun = "testdata/skeleton/plan=quickstart/date=2026-12-01/run=20261201T052532Z-d8734b"

// checkColumnsKept fails for a column of the file that the current schema
// lost, renamed, retyped or changed the repetition of (a required column
// may become optional: a metric that can be "not measured" became
// nullable in schema version 3, and every reader reads a required column
// as an optional one), and returns how many columns the file has.
func checkColumnsKept(t *testing.T, path string, current *pq.Schema) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	pf, err := pq.OpenFile(f, st.Size())
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	cols := pf.Schema().Columns()
	for _, col := range cols {
		old, _ := pf.Schema().Lookup(col...)
		now, ok := current.Lookup(col...)
		name := strings.Join(col, ".")
		if !ok {
			t.Errorf("%s: column %s is gone from the current schema: never rename or remove a column (docs/RESULTS.md)", path, name)
			continue
		}
		if o, n := old.Node.Type().String(), now.Node.Type().String(); o != n {
			t.Errorf("%s: column %s was %s and is %s now: never retype a column", path, name, o, n)
		}
		if !repetitionKept(old.Node, now.Node) {
			t.Errorf("%s: column %s changed its repetition", path, name)
		}
	}
	return len(cols)
}

// repetitionKept: a column kept its repetition, or a required column
// became optional (nullable), the one change every reader takes.
func repetitionKept(old, now pq.Node) bool {
	if old.Repeated() != now.Repeated() {
		return false
	}
	return old.Optional() == now.Optional() || old.Required() && now.Optional()
}

// The current schema keeps every column the skeleton wrote, and it has
// grown since, so the rest of this file tests reading fewer columns.
func TestSkeletonColumnsStillExist(t *testing.T) {
	for table, current := range map[string]*pq.Schema{
		results.TableCells: pq.SchemaOf(results.Cell{}), results.TableRequests: pq.SchemaOf(results.Request{}),
	} {
		files, _ := filepath.Glob(filepath.Join(skeletonRun, table, "*.parquet"))
		if len(files) != 4 {
			t.Fatalf("%s: %d part files, want 4", table, len(files))
		}
		for _, f := range files {
			if n, now := checkColumnsKept(t, f, current), len(current.Columns()); n >= now {
				t.Errorf("%s has %d columns, the current schema %d: the fixture no longer stands for an older schema", f, n, now)
			}
		}
	}
}

// benchrun's own reader (reports, result.json, history) reads the
// skeleton's files: the old columns with their values (a metric written
// as a required column reads as measured), the new ones zero, or null
// for a nullable one.
func TestReadSkeletonWithCurrentReader(t *testing.T) {
	cells, err := resultstest.ReadTable[results.Cell](skeletonRun, results.TableCells)
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 4 {
		t.Fatalf("%d cell rows, want 4", len(cells))
	}
	for _, c := range cells {
		if c.RunID != "20261201T052532Z-d8734b" || c.Plan != "quickstart" || !strings.HasPrefix(c.CellID, "sweep/") ||
			c.StartedAt.Before(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)) || c.Metadata["mode"] != "fixed" ||
			val(c.OutputTokS) <= 0 || val(c.TTFTP99Ms) <= 0 || val(c.ITLP50Ms) <= 0 || c.Requests != 8 || c.Status != results.StatusOK {
			t.Errorf("old cell row read back wrong: %+v", c)
		}
		if c.AdmittedTok != 0 || c.ITLTokP50Ms != nil || c.TTFTSchedP99Ms != nil || c.Arrival != "" {
			t.Errorf("%s: columns the skeleton did not write read as %d, %v, %v, %q; want zero values (null for a nullable metric)", c.CellID, c.AdmittedTok, val(c.ITLTokP50Ms), val(c.TTFTSchedP99Ms), c.Arrival)
		}
	}
	reqs, err := resultstest.ReadTable[results.Request](skeletonRun, results.TableRequests)
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 32 {
		t.Fatalf("%d request rows, want 32", len(reqs))
	}
	for _, q := range reqs {
		if val(q.TTFTMs) <= 0 || q.OutputTokens != 32 || len(q.ChunkGapsMs) == 0 || len(q.ChunkTokens) != 0 || q.UsageReported {
			t.Errorf("old request row read back wrong: cell %s seq %d ttft %v out %d gaps %d chunk_tokens %v usage %v",
				q.CellID, q.Seq, val(q.TTFTMs), q.OutputTokens, len(q.ChunkGapsMs), q.ChunkTokens, q.UsageReported)
		}
	}
}

// copySkeleton copies the skeleton run into root, in its hive path.
func copySkeleton(t *testing.T, root string) string {
	t.Helper()
	rel, _ := filepath.Rel("testdata/skeleton", skeletonRun)
	dst := filepath.Join(root, rel)
	if err := os.CopyFS(dst, os.DirFS(skeletonRun)); err != nil {
		t.Fatal(err)
	}
	return dst
}

// The documented analyst queries run over the skeleton's run next to runs
// written now: the old run's cells and requests take part, and its missing
// columns read as NULL.
func TestDocumentedQueriesAcrossVersions(t *testing.T) {
	root := threeRuns(t)
	copySkeleton(t, root)
	qs := docQueries(t, root)
	db := duck(t)

	found := false
	for _, r := range query(t, db, qs["per-plan-cell"]) {
		if r[0] == "quickstart" {
			found = true
			if r[5] != "1" || atof(t, r[6]) <= 0 {
				t.Errorf("quickstart group %v: want 1 run and its output tok/s", r)
			}
		}
	}
	if !found {
		t.Error("per-plan-cell: the skeleton's run is missing")
	}
	old := 0
	for _, r := range query(t, db, qs["requests-join-cells"]) {
		if r[0] == "20261201T052532Z-d8734b" {
			old++
			if r[2] != "8" || r[3] != "8" || r[4] != "8" {
				t.Errorf("skeleton cell %s: requests %s, %s request rows, %s ok; want 8 each", r[1], r[2], r[3], r[4])
			}
		}
	}
	if old != 4 {
		t.Errorf("requests-join-cells: %d skeleton cells, want 4", old)
	}
	for _, r := range query(t, db, qs["recompute-p99-ttft"]) {
		if d := atof(t, r[4]); d > 1e-6 {
			t.Errorf("%s %s: cell p99 %s, recomputed %s", r[0], r[1], r[2], r[3])
		}
	}
	glob := sqlPath(filepath.Join(root, "**", "cells", "*.parquet"))
	rows := query(t, db, `SELECT plan, count(*), count(admitted_tok), count(itl_tok_p99_ms)
		FROM read_parquet(`+glob+`, hive_partitioning = true, union_by_name = true) GROUP BY plan ORDER BY plan`)
	var got []string
	for _, r := range rows {
		got = append(got, strings.Join(r, " "))
	}
	if want := "llama-q4 12 12 12|other 6 6 6|quickstart 4 0 0"; strings.Join(got, "|") != want {
		t.Errorf("per plan (rows, admitted_tok non-null, itl_tok_p99_ms non-null): %q, want %q", strings.Join(got, "|"), want)
	}
}

// `benchrun report` rebuilds the reports and result.json of a run an
// earlier benchrun wrote.
func TestReportOnSkeletonRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the benchrun binary")
	}
	bin := buildBenchrun(t)
	root := t.TempDir()
	dir := copySkeleton(t, root)
	// A user who names the runs folder, or a file, is told what to give.
	for arg, want := range map[string]string{
		root:                                "(one is under it: " + dir + ")",
		filepath.Join(dir, "manifest.json"): "is a file, not a run directory",
	} {
		cmd := exec.Command(bin, "report", arg)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), want) {
			t.Errorf("benchrun report %s: %v, stderr %q; want exit 2 and %q", arg, err, stderr.String(), want)
		}
	}
	out, err := exec.Command(bin, "report", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("benchrun report on a skeleton run: %v\n%s", err, out)
	}
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	// The four load charts, and from the request rows each shape's three
	// latency distributions, two time-slice charts and a timeline.
	dists := strings.Count(string(page), `id="chart-dist-`)
	slices := strings.Count(string(page), `id="chart-slices-`)
	timelines := strings.Count(string(page), `id="chart-timeline-`)
	if n := strings.Count(string(page), "<svg") - dists - slices - timelines; n != 4 || timelines == 0 || dists != 3*timelines || slices != 2*timelines {
		t.Errorf("report.html of the skeleton run has %d load charts, %d distributions, %d slice charts and %d timelines, want 4, then 3, 2 and 1 a shape", n, dists, slices, timelines)
	}
	js, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil || strings.Count(string(js), `"output_throughput"`) != 4 {
		t.Errorf("result.json of the skeleton run (%v) lacks its 4 cells", err)
	}
}
