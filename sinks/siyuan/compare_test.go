package siyuan

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/golden"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/results/resultstest"
	"github.com/benchrun/benchrun/internal/rundir"
	pqs "github.com/benchrun/benchrun/sinks/parquet"
)

// writeRunDir writes a run directory in the hive layout under root, as a
// run leaves it: manifest.json with the status, plan.json naming the
// model (when model is set), and the cells as a Parquet part file written
// by the Parquet sink's own writer.
func writeRunDir(t *testing.T, root, plan, id string, start time.Time, status, model string, cells []results.Cell) {
	t.Helper()
	dir := filepath.Join(root, "plan="+plan, "date="+start.UTC().Format(time.DateOnly), "run="+id)
	if err := os.MkdirAll(filepath.Join(dir, results.TableCells), 0o755); err != nil {
		t.Fatal(err)
	}
	fin := start.Add(time.Minute)
	code := 0
	if status != rundir.RunOK {
		code = 1
	}
	m := rundir.Manifest{RunID: id, Plan: plan, StartedAt: start, FinishedAt: &fin, Status: status, ExitCode: &code, Benchrun: "v0.test"}
	write := func(name string, v any) {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(rundir.ManifestFile, m)
	if model != "" {
		write(rundir.ResolvedFile, map[string]any{"name": plan, "model": map[string]string{"name": model}})
	}
	for i := range cells {
		cells[i].RunID, cells[i].Plan, cells[i].Attempt, cells[i].StartedAt = id, plan, 1, start
	}
	if err := pqs.WriteFile(filepath.Join(dir, results.TableCells, "part-001-00001.parquet"), cells); err != nil {
		t.Fatal(err)
	}
}

// scaled is the fixture's cells with throughput × f and the compared
// latencies ÷ f: a run f times as fast.
func scaled(f float64) []results.Cell {
	var out []results.Cell
	for _, p := range resultstest.Points() {
		c := p.Cell
		c.OutputTokS = someF(*c.OutputTokS * f)
		for _, m := range []**float64{&c.TTFTP50Ms, &c.TTFTP99Ms, &c.ITLP50Ms, &c.TPOTP50Ms} {
			*m = someF(**m / f)
		}
		out = append(out, c)
	}
	return out
}

var novDay = func(d, h int) time.Time { return time.Date(2026, 11, d, h, 0, 0, 0, time.UTC) }

// historyRoot is a runs folder with earlier runs of plan "fixture"
// (model sim-llama) and of other plans: A1-A6 ok (A6's 64:32 c=1 cell
// errored), F failed, M another plan whose cells are sim-llama's under
// other ids (and a qwen cell of the same shape first), Q another plan
// whose plan.json names sim-llama while its cells call it "served", X a
// qwen run, the current run itself, and one started after it. Throughput
// factors: A1 0.9, A2 0.95, A3 1, A4 1.05, M 0.97, Q 0.99, A5 1.1, A6
// 1.08; the runs that must not be read are 2-5× (F, X, the later one).
func historyRoot(t *testing.T, root string) {
	id := func(t time.Time, s string) string { return t.Format("20060102T150405Z") + "-" + s }
	for i, f := range []float64{0.9, 0.95, 1, 1.05} {
		writeRunDir(t, root, "fixture", id(novDay(20+i, 4), "a"), novDay(20+i, 4), rundir.RunOK, "sim-llama", scaled(f))
	}
	writeRunDir(t, root, "fixture", id(novDay(24, 4), "f"), novDay(24, 4), rundir.RunFailed, "sim-llama", scaled(3))
	m := scaled(0.97)
	for i := range m {
		m[i].Stage, m[i].CellID = "bench", strings.Replace(m[i].CellID, "sweep/", "bench/", 1)+"/x"
	}
	qwen := scaled(4)[0]
	qwen.Model, qwen.Stage, qwen.CellID = "qwen", "bench", "bench/qwen/64:32/c1"
	writeRunDir(t, root, "other", id(novDay(25, 4), "m"), novDay(25, 4), rundir.RunOK, "", append([]results.Cell{qwen}, m...))
	q := scaled(0.99)
	for i := range q {
		q[i].Model = "served"
	}
	writeRunDir(t, root, "other2", id(novDay(25, 12), "q"), novDay(25, 12), rundir.RunOK, "sim-llama", q)
	x := scaled(2)
	for i := range x {
		x[i].Model = "qwen"
	}
	writeRunDir(t, root, "unrelated", id(novDay(26, 4), "x"), novDay(26, 4), rundir.RunOK, "qwen", x)
	writeRunDir(t, root, "fixture", id(novDay(27, 4), "a"), novDay(27, 4), rundir.RunOK, "sim-llama", scaled(1.1))
	a6 := scaled(1.08)
	a6[0].Status, a6[0].Reason = results.StatusError, "3 of 4 requests failed"
	writeRunDir(t, root, "fixture", id(novDay(28, 4), "a"), novDay(28, 4), rundir.RunOK, "sim-llama", a6)
	writeRunDir(t, root, "fixture", resultstest.RunID, resultstest.T0, rundir.RunOK, "sim-llama", scaled(1))
	later := resultstest.T0.AddDate(0, 0, 1)
	writeRunDir(t, root, "fixture", id(later, "z"), later, rundir.RunOK, "sim-llama", scaled(5))
}

func currentCells() []results.Cell {
	var cur []results.Cell
	for _, p := range resultstest.Points() {
		cur = append(cur, p.Cell)
	}
	return cur
}

func comparedIDs(c *Comparison) []string {
	var out []string
	for _, r := range c.Runs {
		out = append(out, r.RunID)
	}
	return out
}

func compRow(t *testing.T, c *Comparison, cell, metric string) ComparisonRow {
	t.Helper()
	for _, r := range c.Rows {
		if r.CellID == cell && r.Metric == metric {
			return r
		}
	}
	t.Fatalf("no row for %s %s", cell, metric)
	return ComparisonRow{}
}

func nearly(p *float64, want float64) bool {
	return p != nil && math.Abs(*p-want) < 1e-9*math.Max(1, math.Abs(want))
}

// Runs of the plan or of the model, ok ones only, the newest `last`,
// never the run itself nor a later one; cells matched by id or shape.
func TestComparisonLoad(t *testing.T) {
	root := t.TempDir()
	historyRoot(t, root)
	cur := currentCells()

	c, err := LoadComparison(root, "fixture", cur, resultstest.RunID, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := "[20261121T040000Z-a 20261122T040000Z-a 20261123T040000Z-a 20261127T040000Z-a 20261128T040000Z-a]"
	if got := comparedIDs(c); strings.Join(got, " ") != strings.Trim(want, "[]") {
		t.Fatalf("runs of plan fixture = %v, want %s", got, want)
	}
	if c.ByShape || c.Note != "" || len(c.Skipped) > 0 {
		t.Errorf("ByShape %v, Note %q, Skipped %v; want none", c.ByShape, c.Note, c.Skipped)
	}
	if len(c.Rows) != 6*len(comparedMetrics) {
		t.Errorf("%d rows, want %d", len(c.Rows), 6*len(comparedMetrics))
	}
	// 64:32 c=4's throughput: the earlier runs' values as written, the
	// changes from A6 (1.08×) and from the median (A4, 1.05×).
	base := *cur[1].OutputTokS
	r := compRow(t, c, "sweep/64:32/c4", "output_tok_s")
	for i, f := range []float64{0.95, 1, 1.05, 1.1, 1.08} {
		if !nearly(r.Earlier[i], base*f) {
			t.Errorf("earlier[%d] = %v, want %v", i, r.Earlier[i], base*f)
		}
	}
	if !nearly(r.VsLast, 1/1.08-1) || !nearly(r.VsMedian, 1/1.05-1) {
		t.Errorf("vs last %v, vs median %v; want %v, %v", *r.VsLast, *r.VsMedian, 1/1.08-1, 1/1.05-1)
	}
	// A6's error cell is no value: the last value is A5's, the median of four.
	r = compRow(t, c, "sweep/64:32/c1", "ttft_p50_ms")
	if r.Earlier[4] != nil || !nearly(r.VsLast, 1.1-1) || !nearly(r.VsMedian, 1/((1/1.0+1/1.05)/2)-1) {
		t.Errorf("row with an errored earlier cell: earlier %v, vs last %v, vs median %v", r.Earlier, *r.VsLast, *r.VsMedian)
	}

	// By model: the plan's runs and the other plans' runs of sim-llama
	// (by their cells' model, or by plan.json), only that model's cells.
	c, err = LoadComparison(root, "sim-llama", cur, resultstest.RunID, 5)
	if err != nil {
		t.Fatal(err)
	}
	want = "20261123T040000Z-a 20261125T040000Z-m 20261125T120000Z-q 20261127T040000Z-a 20261128T040000Z-a"
	if got := strings.Join(comparedIDs(c), " "); got != want {
		t.Fatalf("runs of model sim-llama = %s, want %s", got, want)
	}
	if !c.ByShape {
		t.Error("M's cells matched without ByShape")
	}
	r = compRow(t, c, "sweep/64:32/c1", "output_tok_s")
	if !nearly(r.Earlier[1], *cur[0].OutputTokS*0.97) || !nearly(r.Earlier[2], *cur[0].OutputTokS*0.99) {
		t.Errorf("M, Q values %v, %v; want %v, %v (the qwen cell of M's shape is not sim-llama's)", *r.Earlier[1], *r.Earlier[2], *cur[0].OutputTokS*0.97, *cur[0].OutputTokS*0.99)
	}

	c, err = LoadComparison(root, "fixture", cur, resultstest.RunID, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(comparedIDs(c), " "); got != "20261127T040000Z-a 20261128T040000Z-a" {
		t.Errorf("last 2 = %s", got)
	}

	// A cell this run did not finish ok is not compared, and said so.
	bad := currentCells()
	bad[5].Status = results.StatusError
	c, err = LoadComparison(root, "fixture", bad, resultstest.RunID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Rows) != 5*len(comparedMetrics) || c.Note != "1 cells of this run did not end ok and are not compared." {
		t.Errorf("%d rows, note %q", len(c.Rows), c.Note)
	}
}

// No earlier run: a Comparison that says so, which the document prints.
func TestComparisonNoEarlierRuns(t *testing.T) {
	root := t.TempDir()
	writeRunDir(t, root, "fixture", resultstest.RunID, resultstest.T0, rundir.RunOK, "sim-llama", scaled(1))
	writeRunDir(t, root, "fixture", "20261130T040000Z-f", novDay(30, 4), rundir.RunInterrupted, "sim-llama", scaled(1))
	for _, tc := range []struct{ root, want string }{
		{root, "No earlier runs of fixture under " + root + "."},
		{filepath.Join(root, "nowhere"), "No earlier runs of fixture under " + filepath.Join(root, "nowhere") + ": the folder does not exist."},
	} {
		c, err := LoadComparison(tc.root, "fixture", currentCells(), resultstest.RunID, 0)
		if err != nil {
			t.Fatal(err)
		}
		if c.Note != tc.want || len(c.Runs) != 0 || len(c.Rows) != 0 {
			t.Errorf("note %q (runs %v, %d rows), want %q", c.Note, c.Runs, len(c.Rows), tc.want)
		}
		md := Document{Run: resultstest.Run(), Status: "ok", Compare: c}.Markdown()
		if !strings.Contains(md, "## Compared with earlier runs of fixture\n\n"+mdText(tc.want)+"\n") {
			t.Errorf("the document does not print the note:\n%s", md)
		}
	}
	// A damaged earlier run is skipped and named, not fatal.
	writeRunDir(t, root, "fixture", "20261129T040000Z-d", novDay(29, 4), rundir.RunOK, "sim-llama", scaled(1))
	part := filepath.Join(root, "plan=fixture", "date=2026-11-29", "run=20261129T040000Z-d", "cells", "part-001-00001.parquet")
	if err := os.WriteFile(part, []byte("not parquet"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := LoadComparison(root, "fixture", currentCells(), resultstest.RunID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Skipped) != 1 || !strings.HasPrefix(c.Skipped[0], "20261129T040000Z-d: ") || len(c.Runs) != 0 {
		t.Errorf("skipped %q, runs %v", c.Skipped, c.Runs)
	}
}

// The comparison in the document: five earlier runs make the table too
// wide, so it is split (cell and metric repeated); the run's regression
// verdict stands beside its row.
func TestComparisonGolden(t *testing.T) {
	root := t.TempDir()
	historyRoot(t, root)
	d := failedRun()
	d.Cells = d.Cells[:3]
	var vs []results.Verdict
	for _, v := range d.Verdicts {
		if v.Level == levelRegression {
			vs = append(vs, v)
		}
	}
	d.Verdicts, d.Status, d.Reason = vs, "failed", "output_tok_s regressed"
	c, err := LoadComparison(root, "fixture", d.Cells, d.Run.RunID, 0)
	if err != nil {
		t.Fatal(err)
	}
	c.Root = "runs" // as a user gives it; the golden file holds no temporary path
	d.Compare = c
	md := d.Markdown()
	golden.Check(t, "compare.md", []byte(md))
	sec := md[strings.Index(md, "## Compared with"):]
	if n := strings.Count(sec, "| cell | metric |"); n != 2 {
		t.Errorf("the comparison has %d tables, want 2 (split)", n)
	}
	if !strings.Contains(sec, "| sweep 64:32 c=4 | output tok/s | 477 | -7.4% | -4.8% | regressed, confirmed |") {
		t.Error("the regression verdict is not beside its row")
	}
}
