package rundir_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/results/resultstest"
	"github.com/benchrun/benchrun/internal/rundir"
	"github.com/benchrun/benchrun/pipeline/engine"
	"github.com/benchrun/benchrun/schema"
)

var t0 = time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC)

func okCell(id string, attempt int64) results.Cell {
	return results.Cell{RunID: "r", Plan: "p", Stage: "sweep", CellID: id, Attempt: attempt, StartedAt: t0, Status: results.StatusOK, TTFTMs: results.Some(12.5), Requests: 2}
}

// Open tells each kind of run directory apart, and says what to give
// when it is given something else; it changes nothing in the directory.
func TestOpen(t *testing.T) {
	stale := []byte(`{"pid":999999,"hostname":"gone","started_at":"2026-11-01T08:00:00Z","attempt":1}` + "\n")
	cases := []struct {
		name string
		// build makes the directory under root and returns the path to open.
		build      func(t *testing.T, root string) string
		status     string
		noManifest bool
		err        string // a substring of Open's error ("" for none)
		notRun     bool   // the error is a *NotRunError
	}{
		{name: "finished", status: rundir.RunOK, build: func(t *testing.T, root string) string {
			dir := filepath.Join(root, "run=ok")
			writeManifest(t, dir, manifest("ok", "p", t0, rundir.RunOK, 0))
			writePart(t, dir, results.TableCells, "part-001-00001.parquet", []results.Cell{okCell("sweep/a", 1)})
			writeFile(t, filepath.Join(dir, rundir.LockFile), nil) // released: truncated
			return dir
		}},
		{name: "failed", status: rundir.RunFailed, build: func(t *testing.T, root string) string {
			dir := filepath.Join(root, "run=failed")
			writeManifest(t, dir, manifest("failed", "p", t0, rundir.RunFailed, 3))
			return dir
		}},
		{name: "interrupted", status: rundir.RunInterrupted, build: func(t *testing.T, root string) string {
			dir := filepath.Join(root, "run=int")
			writeManifest(t, dir, manifest("int", "p", t0, rundir.RunInterrupted, 130))
			return dir
		}},
		{name: "killed: running, lock free", status: rundir.RunCrashed, build: func(t *testing.T, root string) string {
			dir := filepath.Join(root, "run=killed")
			writeManifest(t, dir, manifest("killed", "p", t0, rundir.RunRunning, 0))
			writePart(t, dir, results.TableCells, "part-001-00001.parquet", []results.Cell{okCell("sweep/a", 1)})
			writeFile(t, filepath.Join(dir, rundir.LockFile), stale)
			writeFile(t, filepath.Join(dir, "cells", ".part-001-00002.parquet.tmp-123"), []byte("half"))
			return dir
		}},
		{name: "killed: running, no lock file (older benchrun)", status: rundir.RunCrashed, build: func(t *testing.T, root string) string {
			dir := filepath.Join(root, "run=old")
			writeManifest(t, dir, manifest("old", "p", t0, rundir.RunRunning, 0))
			return dir
		}},
		{name: "killed before its manifest", status: rundir.RunIncomplete, noManifest: true, build: func(t *testing.T, root string) string {
			dir := filepath.Join(root, "run=early")
			writePart(t, dir, results.TableCells, "part-001-00001.parquet", []results.Cell{okCell("sweep/a", 1)})
			return dir
		}},
		{name: "killed before anything but its lock and plan", status: rundir.RunIncomplete, noManifest: true, build: func(t *testing.T, root string) string {
			dir := filepath.Join(root, "run=earlier")
			writeFile(t, filepath.Join(dir, rundir.LockFile), stale)
			writeFile(t, filepath.Join(dir, "plan.json"), []byte(`{"name":"p"}`))
			return dir
		}},
		{name: "a file", err: "is a file, not a run directory; give one like runs/plan=NAME/date=YYYY-MM-DD/run=ID", build: func(t *testing.T, root string) string {
			dir := filepath.Join(root, "run=x")
			writeManifest(t, dir, manifest("x", "p", t0, rundir.RunOK, 0))
			return filepath.Join(dir, "manifest.json")
		}},
		{name: "missing", notRun: true, err: "nowhere is not a run directory (it does not exist); give one like runs/plan=NAME/date=YYYY-MM-DD/run=ID", build: func(t *testing.T, root string) string {
			return filepath.Join(root, "nowhere")
		}},
		{name: "empty folder", notRun: true, err: "is not a run directory (it has neither manifest.json nor cells/); give one like runs/plan=NAME/date=YYYY-MM-DD/run=ID", build: func(t *testing.T, root string) string {
			mkdir(t, filepath.Join(root, "empty"))
			return filepath.Join(root, "empty")
		}},
		{name: "a plan's folder with one run", notRun: true, build: func(t *testing.T, root string) string {
			writeManifest(t, filepath.Join(root, "plan=p", "date=2026-11-01", "run=20261101T080000Z-aaaaaa"), manifest("a", "p", t0, rundir.RunOK, 0))
			return filepath.Join(root, "plan=p")
		}, err: "(one is under it: plan=p/date=2026-11-01/run=20261101T080000Z-aaaaaa)"},
		{name: "a runs folder", notRun: true, build: func(t *testing.T, root string) string {
			runs := filepath.Join(root, "runs")
			writeManifest(t, filepath.Join(runs, "plan=p", "date=2026-11-02", "run=20261102T080000Z-bbbbbb"), manifest("b", "p", t0, rundir.RunOK, 0))
			writeManifest(t, filepath.Join(runs, "plan=q", "date=2026-11-01", "run=20261101T080000Z-aaaaaa"), manifest("a", "q", t0, rundir.RunOK, 0))
			return runs
		}, err: "(2 run directories are under it; the newest is runs/plan=p/date=2026-11-02/run=20261102T080000Z-bbbbbb)"},
		{name: "unreadable manifest", err: "is not a manifest benchrun can read", build: func(t *testing.T, root string) string {
			dir := filepath.Join(root, "run=bad")
			writeFile(t, filepath.Join(dir, "manifest.json"), []byte(`{"run_id": "bad", "status": `))
			return dir
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			dir := tc.build(t, root)
			// Messages name paths as given: relative ones here.
			if rel, err := filepath.Rel(root, dir); err == nil {
				t.Chdir(root)
				dir = rel
			}
			before := snapshot(t, root)
			r, err := rundir.Open(dir)
			if tc.err != "" || tc.notRun {
				if err == nil {
					t.Fatalf("Open(%s) = %+v, want an error", dir, r)
				}
				if !strings.Contains(err.Error(), tc.err) {
					t.Errorf("Open(%s): %v\nwant it to say %q", dir, err, tc.err)
				}
				if got := errors.Is(err, rundir.ErrNotRun); got != tc.notRun {
					t.Errorf("errors.Is(%v, ErrNotRun) = %v, want %v", err, got, tc.notRun)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != tc.status {
				t.Errorf("Status = %q, want %q", r.Status, tc.status)
			}
			if r.Live || r.Holder != nil {
				t.Errorf("Live %v, Holder %v: nobody holds it", r.Live, r.Holder)
			}
			if (r.Manifest == nil) != tc.noManifest {
				t.Errorf("Manifest = %+v; want nil: %v", r.Manifest, tc.noManifest)
			}
			if rec := r.Record(); rec.Status != tc.status || rec.RunID != strings.TrimPrefix(filepath.Base(dir), "run=") {
				t.Errorf("Record() status %q run id %q; want %q and the directory's id", rec.Status, rec.RunID, tc.status)
			}
			if _, err := r.Rows(); err != nil {
				t.Errorf("Rows: %v", err)
			}
			if after := snapshot(t, root); !slices.Equal(before, after) {
				t.Errorf("Open and Rows changed the directory:\nbefore %q\n after %q", before, after)
			}
		})
	}
}

// A run whose writer is still at it is live and running, whatever its
// manifest says, and names its writer; once the writer lets go, the same
// manifest belongs to a crashed run. The writer here is pipeline's own
// lock taking (a --resume), so the probe is checked against the real one.
func TestOpenLiveRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "plan=p", "date=2026-11-01", "run=20261101T080000Z-aaaaaa")
	writeManifest(t, dir, manifest("20261101T080000Z-aaaaaa", "p", t0, rundir.RunRunning, 0))
	writePart(t, dir, results.TableCells, "part-001-00001.parquet", []results.Cell{okCell("sweep/a", 1)})

	ri, err := engine.ResumeRunInfo(dir, &schema.Plan{Name: "p"}, nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	defer ri.Close()
	r, err := rundir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Live || r.Status != rundir.RunRunning {
		t.Errorf("while a resume holds it: Live %v, Status %q; want live and running", r.Live, r.Status)
	}
	if r.Holder == nil || r.Holder.PID != os.Getpid() || r.Holder.Attempt != 2 {
		t.Errorf("Holder = %v; want this process, attempt 2", r.Holder)
	}
	if st, err := rundir.Inspect(dir); err != nil || !st.Live {
		t.Errorf("rundir.Inspect while held: %+v, %v; want live", st, err)
	}
	entries, err := rundir.Find(filepath.Dir(filepath.Dir(filepath.Dir(dir))), rundir.Filter{})
	if err != nil || len(entries) != 1 || entries[0].Status != rundir.RunRunning {
		t.Errorf("Find while held: %+v, %v; want the run, running", entries, err)
	}

	ri.Close()
	r, err = rundir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.Live || r.Status != rundir.RunCrashed || r.Holder != nil {
		t.Errorf("after the writer let go: Live %v, Status %q, Holder %v; want crashed, nobody", r.Live, r.Status, r.Holder)
	}
}

// Runs written by older benchruns read: the walking skeleton's run (an
// early manifest without attempts, cell rows with half of today's
// columns) and the schema version 1 files (no attempt column).
func TestOlderRunsRead(t *testing.T) {
	t.Run("skeleton", func(t *testing.T) {
		dir := copyDir(t, skeletonRun, filepath.Join(t.TempDir(), "run=20261201T052532Z-d8734b"))
		r, err := rundir.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != rundir.RunFailed || r.Manifest.RunID != "20261201T052532Z-d8734b" || len(r.Manifest.Stages) != 3 || len(r.Manifest.Verdicts) != 2 {
			t.Errorf("manifest read as %+v", r.Manifest)
		}
		if as := r.Manifest.AttemptRecords(); len(as) != 1 || as[0].Status != rundir.RunFailed || as[0].ExitCode == nil || *as[0].ExitCode != 1 {
			t.Errorf("attempts rebuilt as %+v; want one, failed, exit 1", as)
		}
		rows, err := r.Rows()
		if err != nil {
			t.Fatal(err)
		}
		if len(rows.Cells) != 4 || rows.Requests.Len() != 32 || len(rows.Verdicts) != 0 || len(rows.Samples) != 0 {
			t.Fatalf("rows: %d cells, %d requests, %d verdicts, %d samples; want 4, 32, 0, 0", len(rows.Cells), rows.Requests.Len(), len(rows.Verdicts), len(rows.Samples))
		}
		var ids []string
		for _, c := range rows.Cells {
			ids = append(ids, c.CellID)
			if c.TTFTP99Ms == nil || *c.TTFTP99Ms <= 0 || c.OutputTokS == nil || c.Metadata["mode"] != "fixed" || c.Attempt != 0 {
				t.Errorf("old cell row read back wrong: %+v", c)
			}
			if c.ITLTokP50Ms != nil || c.TTFTSchedP99Ms != nil {
				t.Errorf("%s: columns the skeleton did not write read as %v, %v; want nil", c.CellID, c.ITLTokP50Ms, c.TTFTSchedP99Ms)
			}
		}
		// part-00001 .. part-00004, in that order.
		if want := []string{"sweep/64:32/c1", "sweep/64:32/c4", "sweep/256:32/c1", "sweep/256:32/c4"}; !slices.Equal(ids, want) {
			t.Errorf("cells in order %v, want %v", ids, want)
		}
		done, err := r.DoneCells()
		if err != nil || len(done) != 4 {
			t.Errorf("DoneCells = %v, %v; want the 4 ok cells", done, err)
		}
		rec := r.Record()
		if rec.Plan != "quickstart" || rec.Hostname != "vm" || rec.ExitCode == nil || *rec.ExitCode != 1 || len(rec.Stages) != 3 || rec.Metadata["engine"] != "sim" || rec.FinishedAt == nil {
			t.Errorf("Record() = %+v", rec)
		}
		// The manifest's stages and failed checks, as its writer recorded them.
		pm, err := rundir.ReadManifest(dir)
		if err != nil || len(pm.Stages) != 3 || pm.Stages[2].Name != "sweep" || pm.Stages[2].Attempts != 1 || len(pm.Verdicts) != 2 || pm.Verdicts[0].CellID != "sweep/64:32/c4" {
			t.Errorf("rundir.ReadManifest = %+v, %v", pm, err)
		}
	})
	t.Run("schema v1", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "run=v1")
		for table, file := range map[string]string{
			results.TableCells: "cells.parquet", results.TableRequests: "requests.parquet",
			results.TableAssertions: "assertions.parquet", results.TableSamples: "samples.parquet",
		} {
			b, err := os.ReadFile(filepath.Join(v1Dir, file))
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(dir, table, "part-00001.parquet"), b)
		}
		r, err := rundir.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != rundir.RunIncomplete {
			t.Errorf("Status = %q, want incomplete (no manifest)", r.Status)
		}
		rows, err := r.Rows()
		if err != nil {
			t.Fatal(err)
		}
		if len(rows.Cells) != 6 || len(rows.Verdicts) == 0 || len(rows.Samples) != 2 || rows.Samples[0].Value != 87.5 {
			t.Fatalf("v1 rows: %d cells, %d verdicts, %d samples", len(rows.Cells), len(rows.Verdicts), len(rows.Samples))
		}
		reqs := 0
		for _, c := range rows.Cells {
			if c.Attempt != 0 || c.TTFTP99Ms == nil || c.Metadata["quant"] != "Q4_K_M" || c.Requests != 2*c.Concurrency {
				t.Errorf("v1 cell read back wrong: %s attempt %d p99 %v md %v", c.CellID, c.Attempt, c.TTFTP99Ms, c.Metadata)
			}
			reqs += int(c.Requests)
		}
		if rows.Requests.Len() != reqs {
			t.Errorf("%d request rows, want %d (the cells' request counts)", rows.Requests.Len(), reqs)
		}
		latest, err := r.LatestCells()
		if err != nil || len(latest) != 6 {
			t.Errorf("LatestCells: %d, %v; want all 6 (attempt 0 counts as 1)", len(latest), err)
		}
	})
}

// Zero is a measurement and nil is "not measured": every nullable metric
// of a cell row, and a request's, reads back exactly as written.
func TestNullsReadAsNil(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run=nulls")
	a, b := okCell("sweep/a", 1), okCell("sweep/b", 1)
	// a: the odd-numbered nullable metrics measured, the rest nil; b: the
	// opposite, its first measured as 0 (zero is a measurement).
	set := func(c *results.Cell, cols []string, odd bool) {
		for i, col := range cols {
			if err := setMetric(c, col, i, (i%2 == 1) != odd); err != nil {
				t.Fatal(err)
			}
		}
	}
	cols := resultstest.NullableColumns()
	if len(cols) < 10 {
		t.Fatalf("only %d nullable columns", len(cols))
	}
	set(&a, cols, false)
	set(&b, cols, true)
	writePart(t, dir, results.TableCells, "part-001-00001.parquet", []results.Cell{a})
	writePart(t, dir, results.TableCells, "part-001-00002.parquet", []results.Cell{b})
	writePart(t, dir, results.TableRequests, "part-001-00001.parquet", []results.Request{
		{CellID: "sweep/a", Attempt: 1, Seq: 0, Status: "error", TTFTMs: nil, E2ELMs: nil},
		{CellID: "sweep/a", Attempt: 1, Seq: 1, Status: "ok", TTFTMs: results.Some(0.0), E2ELMs: results.Some(3.5)},
	})
	r, err := rundir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	cells, err := r.Cells()
	if err != nil || len(cells) != 2 {
		t.Fatalf("Cells: %d, %v", len(cells), err)
	}
	for i, want := range []results.Cell{a, b} {
		for _, col := range cols {
			w, g := metric(want, col), metric(cells[i], col)
			if (w == nil) != (g == nil) || w != nil && *w != *g {
				t.Errorf("%s %s: wrote %v, read %v", want.CellID, col, show(w), show(g))
			}
		}
	}
	reqs, err := r.Requests()
	if err != nil || len(reqs) != 2 {
		t.Fatalf("Requests: %d, %v", len(reqs), err)
	}
	if reqs[0].TTFTMs != nil || reqs[0].E2ELMs != nil || reqs[1].TTFTMs == nil || *reqs[1].TTFTMs != 0 || *reqs[1].E2ELMs != 3.5 {
		t.Errorf("requests read back as ttft %v/%v, e2el %v/%v; want nil/0, nil/3.5", show(reqs[0].TTFTMs), show(reqs[1].TTFTMs), show(reqs[0].E2ELMs), show(reqs[1].E2ELMs))
	}
}

// A resumed run has rows of several attempts, in parts numbered on across
// attempts: the tables read in writing order (not name order: an old
// run's part-00201 was written before a resume's part-002-00202, though it
// sorts after it by name), the latest rule picks each cell's current row
// and judging, and the done cells are those whose current row is ok.
func TestAttemptsInPartOrder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run=resumed")
	writeManifest(t, dir, manifest("resumed", "p", t0, rundir.RunFailed, 3))
	row := func(id string, attempt int64, status string) []results.Cell {
		c := okCell(id, attempt)
		c.Status = status
		return []results.Cell{c}
	}
	verdict := func(id string, attempt int64, passed bool) []results.Verdict {
		return []results.Verdict{{CellID: id, Attempt: attempt, JudgedAt: t0, Assertion: "ttft_ms < 100", Passed: passed}}
	}
	// Written in this order by an old benchrun (attempt column 0) and two resumes.
	writePart(t, dir, results.TableCells, "part-00199.parquet", row("sweep/a", 0, results.StatusError))
	writePart(t, dir, results.TableAssertions, "part-00199.parquet", verdict("sweep/a", 0, false))
	writePart(t, dir, results.TableCells, "part-00200.parquet", row("sweep/b", 0, results.StatusError))
	writePart(t, dir, results.TableCells, "part-00201.parquet", row("sweep/b", 0, results.StatusOK)) // an old resume: same attempt, later
	writePart(t, dir, results.TableCells, "part-002-00202.parquet", row("sweep/a", 2, results.StatusOK))
	writePart(t, dir, results.TableAssertions, "part-002-00202.parquet", verdict("sweep/a", 2, true))
	writePart(t, dir, results.TableCells, "part-003-00203.parquet", row("sweep/c", 3, results.StatusSkipped))
	// What a killed writer left: never a part file.
	writeFile(t, filepath.Join(dir, "cells", ".part-003-00204.parquet.tmp-77"), []byte("half a file"))

	r, err := rundir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	cells, err := r.Cells()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cells {
		got = append(got, fmt.Sprintf("%s@%d:%s", c.CellID, c.Attempt, c.Status))
	}
	if want := []string{"sweep/a@0:error", "sweep/b@0:error", "sweep/b@0:ok", "sweep/a@2:ok", "sweep/c@3:skipped"}; !slices.Equal(got, want) {
		t.Errorf("Cells in order %v\nwant %v", got, want)
	}
	latest, err := r.LatestCells()
	if err != nil {
		t.Fatal(err)
	}
	got = nil
	for _, c := range latest {
		got = append(got, fmt.Sprintf("%s@%d:%s", c.CellID, c.Attempt, c.Status))
	}
	if want := []string{"sweep/a@2:ok", "sweep/b@0:ok", "sweep/c@3:skipped"}; !slices.Equal(got, want) {
		t.Errorf("LatestCells %v\nwant %v", got, want)
	}
	done, err := r.DoneCells()
	if err != nil || len(done) != 2 || !done["sweep/a"] || !done["sweep/b"] {
		t.Errorf("DoneCells = %v, %v; want sweep/a and sweep/b", done, err)
	}
	if pd, err := engine.DoneCells(dir); err != nil || len(pd) != 2 || !pd["sweep/a"] || !pd["sweep/b"] {
		t.Errorf("engine.DoneCells = %v, %v; want what rundir says", pd, err)
	}
	vs, err := r.LatestVerdicts()
	if err != nil || len(vs) != 1 || !vs[0].Passed || vs[0].Attempt != 2 {
		t.Errorf("LatestVerdicts = %+v, %v; want sweep/a's attempt-2 pass only", vs, err)
	}
	all, err := r.Verdicts()
	if err != nil || len(all) != 2 {
		t.Errorf("Verdicts = %d rows, %v; want both judgings", len(all), err)
	}
}

// A part file that cannot be read is an error naming it, not rows lost
// in silence.
func TestUnreadablePartIsAnError(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run=broken")
	writePart(t, dir, results.TableCells, "part-001-00001.parquet", []results.Cell{okCell("sweep/a", 1)})
	writeFile(t, filepath.Join(dir, "cells", "part-001-00002.parquet"), []byte("not parquet"))
	r, err := rundir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Cells(); err == nil || !strings.Contains(err.Error(), "part-001-00002.parquet") {
		t.Errorf("Cells: %v; want an error naming the broken part", err)
	}
	if _, err := r.DoneCells(); err == nil {
		t.Error("DoneCells read a broken part without an error")
	}
}

// Record is what the reports say about a run: the manifest's account,
// with the description and model from plan.json, and the status a reader
// found ("crashed" for a manifest left running).
func TestRecord(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "plan=p", "date=2026-11-01", "run=20261101T080000Z-aaaaaa")
	m := manifest("20261101T080000Z-aaaaaa", "p", t0, rundir.RunRunning, 0)
	m.Tags, m.Metadata, m.Hardware, m.ModelDigest = []string{"file=q8.gguf"}, map[string]string{"quant": "Q8_0"}, "linux/amd64, 16 CPUs, 1× NVIDIA H200", "sha256:abc"
	writeManifest(t, dir, m)
	writeFile(t, filepath.Join(dir, "plan.json"), []byte(`{"name":"p","description":"a test plan","model":{"name":"llama-3.2-1b","file":"x.gguf"}}`))
	writeFile(t, filepath.Join(dir, "plan.cue"), []byte(`name: "p"`+"\n"))
	r, err := rundir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if string(r.PlanCUE) != "name: \"p\"\n" || !strings.Contains(string(r.PlanJSON), `"description":"a test plan"`) {
		t.Errorf("plan files read as %q and %q", r.PlanCUE, r.PlanJSON)
	}
	got := r.Record()
	want := results.Run{
		RunID: "20261101T080000Z-aaaaaa", Plan: "p", Description: "a test plan", StartedAt: t0, Status: rundir.RunCrashed,
		Model: "llama-3.2-1b", ModelDigest: "sha256:abc", Metadata: map[string]string{"quant": "Q8_0"}, Tags: []string{"file=q8.gguf"},
		Hostname: "bench-host", Hardware: "linux/amd64, 16 CPUs, 1× NVIDIA H200", BenchrunVersion: "v0.test",
		Stages: []results.StageOutcome{{Name: "sweep", Kind: "sweep", Status: "ok", DurationS: 42}},
	}
	if !recordEqual(got, want) {
		t.Errorf("Record() =\n%+v\nwant\n%+v", got, want)
	}

	// Without a manifest: what the directory and plan.json say.
	if err := os.Remove(filepath.Join(dir, "manifest.json")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, rundir.LockFile), nil)
	r, err = rundir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	got = r.Record()
	if got.RunID != "20261101T080000Z-aaaaaa" || got.Plan != "p" || got.Status != rundir.RunIncomplete || got.Model != "llama-3.2-1b" || got.ExitCode != nil {
		t.Errorf("Record() of a run without its manifest = %+v", got)
	}
}

// What the writer writes, every reader reads: a manifest written by
// WriteManifest, and rewritten by MarkCrashed (a supervisor marking its
// worker crashed), reads back whole, its stages, failed assertions and
// the sinks' accounts with it.
func TestPipelineManifestReads(t *testing.T) {
	dir := t.TempDir()
	var pm rundir.Manifest
	pm.RunID, pm.Plan, pm.Status, pm.StartedAt = "r1", "p", rundir.RunRunning, t0
	pm.Stages = []rundir.StageRecord{{Name: "sweep", Kind: "sweep", Status: "ok", DurationS: 1.5, Attempts: 2}}
	pm.Verdicts = []rundir.VerdictRecord{{Assertion: "ttft_ms < 1", CellID: "sweep/a", Values: map[string]string{"ttft_ms": "3"}}}
	pm.Sinks = []rundir.SinkRecord{{Name: "notes", Kind: "siyuan", Required: true, Status: "ok", Calls: 3, Retries: 1, Config: map[string]any{"notebook": "ML"}}}
	if err := rundir.WriteManifest(dir, &pm); err != nil {
		t.Fatal(err)
	}
	m, err := rundir.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Stages) != 1 || m.Stages[0].Attempts != 2 || len(m.Verdicts) != 1 || m.Verdicts[0].Values["ttft_ms"] != "3" {
		t.Errorf("stages %+v, verdicts %+v; want the writer's, read back", m.Stages, m.Verdicts)
	}
	if len(m.Sinks) != 1 || m.Sinks[0].Retries != 1 || m.Sinks[0].Config["notebook"] != "ML" || !m.Sinks[0].Required {
		t.Errorf("sinks %+v", m.Sinks)
	}
	if err := rundir.MarkCrashed(dir, "killed", 137, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	back, err := rundir.ReadManifest(dir)
	if err != nil || back.Status != rundir.RunCrashed || len(back.Stages) != 1 || back.Stages[0] != pm.Stages[0] || len(back.Verdicts) != 1 || len(back.Sinks) != 1 {
		t.Errorf("rundir.MarkCrashed, read back = %+v, %v", back, err)
	}
}
