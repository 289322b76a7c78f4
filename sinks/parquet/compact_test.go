package parquet_test

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/rundir"
	"github.com/benchrun/benchrun/internal/testbin"
	pqs "github.com/benchrun/benchrun/sinks/parquet"
)

// writeRealRuns runs the three plans of realRunsPlans against the
// built-in simulator into root, as TestDocumentedQueriesOnRealRuns does.
func writeRealRuns(t testing.TB, root string) {
	t.Helper()
	bin := testbin.Benchrun(t)
	dir := filepath.Dir(root)
	for _, name := range []string{"ladder", "rates", "search"} {
		plan := filepath.Join(dir, name+".cue")
		if err := os.WriteFile(plan, []byte(realRunsPlans[name]), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, plan, "--out", root, "--quiet")
		cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); name == "ladder" && code != 1 || name != "ladder" && err != nil {
			t.Fatalf("%s: exit %d (%v)\n%s", name, code, err, out)
		}
	}
}

// partFilesUnder lists every *.parquet file under root, with its bytes.
func partFilesUnder(t testing.TB, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".parquet" {
			return err
		}
		b, err := os.ReadFile(path)
		out[path] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// answers runs every documented query, and reads every row of every
// table, on a fresh DuckDB; each answer's rows sorted (a query without
// ORDER BY may answer in any order).
func answers(t *testing.T, root string, qs map[string]string) map[string][]string {
	t.Helper()
	db := duck(t)
	out := map[string][]string{}
	all := map[string]string{}
	for name, q := range qs {
		all[name] = q
	}
	for _, table := range pqs.Tables {
		all["table "+table] = `SELECT * FROM read_parquet(` + sqlPath(filepath.Join(root, "**", table, "*.parquet")) + `, hive_partitioning = true, union_by_name = true)`
	}
	for name, q := range all {
		var rows []string
		for _, r := range query(t, db, q) {
			rows = append(rows, strings.Join(r, "|"))
		}
		slices.Sort(rows)
		out[name] = rows
	}
	return out
}

// TestCompactKeepsEveryDocumentedAnswer compacts real runs (a ladder, a
// rate ladder, an SLO search, written by benchrun against its simulator)
// with `benchrun compact` and checks that every query of docs/RESULTS.md,
// and every row of every table, answers the same before and after, as
// benchrun's own reader does; that the part files are one per table;
// and that compacting again changes no byte.
func TestCompactKeepsEveryDocumentedAnswer(t *testing.T) {
	root := filepath.Join(t.TempDir(), "runs")
	writeRealRuns(t, root)
	runs, err := rundir.Find(root, rundir.Filter{})
	if err != nil || len(runs) != 3 {
		t.Fatalf("%d runs, %v", len(runs), err)
	}
	rowsBefore := map[string]*rundir.Rows{}
	for _, e := range runs {
		rowsBefore[e.Dir] = readRunRows(t, e.Dir)
	}
	qs := docQueries(t, root)
	before := answers(t, root, qs)
	filesBefore := len(partFilesUnder(t, root))

	bin := testbin.Benchrun(t)
	out, err := exec.Command(bin, "compact", root).CombinedOutput()
	if err != nil {
		t.Fatalf("benchrun compact: %v\n%s", err, out)
	}
	if got := strings.Count(string(out), ": compacted "); got != 3 {
		t.Errorf("%d runs compacted, want 3:\n%s", got, out)
	}
	files := partFilesUnder(t, root)
	if len(files) > 3*len(pqs.Tables) || len(files) >= filesBefore {
		t.Errorf("%d part files after compaction (%d before), want at most one per table", len(files), filesBefore)
	}
	after := answers(t, root, qs)
	for name := range before {
		if !slices.Equal(before[name], after[name]) {
			t.Errorf("%s answers otherwise after compaction:\nbefore %v\nafter  %v", name, before[name], after[name])
		}
	}
	for _, e := range runs {
		if !reflect.DeepEqual(rowsBefore[e.Dir], readRunRows(t, e.Dir)) {
			t.Errorf("%s: benchrun reads other rows after compaction", e.Dir)
		}
	}

	out, err = exec.Command(bin, "compact", root).CombinedOutput()
	if err != nil || strings.Count(string(out), ": skipped: already compact\n") != 3 {
		t.Errorf("compacting again: %v\n%s", err, out)
	}
	if again := partFilesUnder(t, root); !reflect.DeepEqual(files, again) {
		t.Error("compacting again changed the part files")
	}
}

func readRunRows(t testing.TB, dir string) *rundir.Rows {
	t.Helper()
	r, err := rundir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := r.Rows()
	if err != nil {
		t.Fatal(err)
	}
	if rows.Requests, err = rundir.HoldRequests(rows.Requests); err != nil {
		t.Fatal(err)
	}
	return rows
}

// BenchmarkCompact300Runs measures what compaction is for: 300 runs
// (copies of three real ones under other run ids: queries care about
// files, not whose rows they hold), three documented queries timed on a
// fresh DuckDB each before and after compacting them all. Run it once:
//
//	go test -run '^$' -bench BenchmarkCompact300Runs -benchtime 1x ./sinks/parquet
func BenchmarkCompact300Runs(b *testing.B) {
	src := filepath.Join(b.TempDir(), "runs")
	writeRealRuns(b, src)
	real, err := rundir.Find(src, rundir.Filter{})
	if err != nil || len(real) != 3 {
		b.Fatalf("%d runs, %v", len(real), err)
	}
	root := filepath.Join(b.TempDir(), "runs")
	for i := range 100 {
		for _, e := range real {
			id := fmt.Sprintf("%s-%03d", strings.TrimPrefix(filepath.Base(e.Dir), "run="), i)
			dst := filepath.Join(root, filepath.Base(filepath.Dir(filepath.Dir(e.Dir))), filepath.Base(filepath.Dir(e.Dir)), "run="+id)
			if err := os.CopyFS(dst, os.DirFS(e.Dir)); err != nil {
				b.Fatal(err)
			}
		}
	}
	qs, err := documentedQueries(root)
	if err != nil {
		b.Fatal(err)
	}
	names := []string{"per-plan-cell", "requests-join-cells", "failed-assertions"}
	time3 := func() []time.Duration {
		var out []time.Duration
		for _, name := range names {
			best := time.Duration(1 << 62)
			for range 3 {
				db := duck(b)
				start := time.Now()
				query(b, db, qs[name])
				best = min(best, time.Since(start))
				db.Close()
			}
			out = append(out, best)
		}
		return out
	}
	filesBefore := len(partFilesUnder(b, root))
	before := time3()
	runs, err := rundir.Find(root, rundir.Filter{})
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	for _, e := range runs {
		if _, err := rundir.Compact(e.Dir, rundir.CompactOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	took := time.Since(start)
	filesAfter := len(partFilesUnder(b, root))
	after := time3()
	b.Logf("%d runs: %d part files before, %d after; compacting them all took %v", len(runs), filesBefore, filesAfter, took.Round(time.Millisecond))
	b.ReportMetric(float64(filesBefore), "files-before")
	b.ReportMetric(float64(filesAfter), "files-after")
	for i, name := range names {
		b.Logf("%-20s %8.1f ms before, %8.1f ms after (best of 3, a fresh DuckDB each)", name, ms(before[i]), ms(after[i]))
		b.ReportMetric(ms(before[i]), name+"-ms-before")
		b.ReportMetric(ms(after[i]), name+"-ms-after")
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// documentedQueries is docQueries for a benchmark.
func documentedQueries(root string) (map[string]string, error) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "RESULTS.md"))
	if err != nil {
		return nil, err
	}
	qs := map[string]string{}
	for _, m := range sqlBlock.FindAllStringSubmatch(string(b), -1) {
		qs[m[1]] = strings.ReplaceAll(m[2], "'runs/", "'"+filepath.ToSlash(root)+"/")
	}
	return qs, nil
}

// sqlBlock is a documented query, as docQueries finds them.
var sqlBlock = regexp.MustCompile("(?s)```sql\n-- query: ([a-z0-9-]+)\n(.*?)```")
