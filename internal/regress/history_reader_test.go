package regress_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/regress"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/rundir"
)

// historyRun writes one run directory of plan p under root: its manifest
// (status, exit code, shard record and metadata as given) and one ok row
// per cell id.
type historyRun struct {
	day      int
	status   string
	code     int
	shards   int64
	shard    bool   // the manifest has a shard record (--shard i/n)
	merged   string // metadata merged_from
	meta     string // the rows' metadata variant=...
	cells    []string
	ttftP50s float64
}

func writeHistoryRun(t *testing.T, root string, h historyRun) string {
	t.Helper()
	start := time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC).Add(time.Duration(h.day) * time.Hour)
	id := start.Format("20060102T150405Z") + "-abcdef"
	dir := filepath.Join(root, "plan=p", "date="+start.Format(time.DateOnly), "run="+id)
	if err := os.MkdirAll(filepath.Join(dir, results.TableCells), 0o755); err != nil {
		t.Fatal(err)
	}
	fin := start.Add(time.Minute)
	m := rundir.Manifest{RunID: id, Plan: "p", StartedAt: start, FinishedAt: &fin, Status: h.status, ExitCode: &h.code}
	if h.shard {
		m.Shard = &rundir.ShardRecord{Shard: 0, Shards: int(h.shards)}
	}
	if h.merged != "" {
		m.Metadata = map[string]string{"merged_from": h.merged}
	}
	b, _ := json.Marshal(m)
	if err := os.WriteFile(filepath.Join(dir, rundir.ManifestFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	var rows []results.Cell
	for _, cell := range h.cells {
		c := results.Cell{RunID: id, Plan: "p", Stage: "sweep", CellID: cell, Attempt: 1, Measurement: 1, StartedAt: start,
			Status: results.StatusOK, TTFTP50Ms: results.Some(h.ttftP50s), Shards: h.shards}
		if h.meta != "" {
			c.Metadata = map[string]string{"variant": h.meta}
		}
		rows = append(rows, c)
	}
	if err := rundir.WriteFile(filepath.Join(dir, results.TableCells, "part-001-00001.parquet"), rows); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestHistoryReaderReadsEachCellsOwnRuns: a cell's history is its own last
// runs, however many runs of other variants came after them (a fixed
// count of the plan's newest runs let eight runs of another variant push
// a cell's three out: insufficient data for a run 16x slower), and the
// reader stops reading once each cell asked about has its runs.
func TestHistoryReaderReadsEachCellsOwnRuns(t *testing.T) {
	root := t.TempDir()
	day := 0
	var own []string
	for range 3 {
		own = append(own, writeHistoryRun(t, root, historyRun{day: day, status: rundir.RunOK, meta: "a", cells: []string{"sweep/16:8/c4"}, ttftP50s: 20}))
		day++
	}
	for range 8 {
		writeHistoryRun(t, root, historyRun{day: day, status: rundir.RunOK, meta: "b", cells: []string{"sweep/16:8/c4"}, ttftP50s: 20})
		day++
	}
	h, err := regress.OpenHistory(root, rundir.Filter{Plan: "p"}, "")
	if err != nil {
		t.Fatal(err)
	}
	b := results.Cell{Plan: "p", Stage: "sweep", CellID: "sweep/16:8/c4", Status: results.StatusOK, Metadata: map[string]string{"variant": "b"}}
	if err := h.Need([]regress.Key{regress.KeyOf(b)}, 4); err != nil {
		t.Fatal(err)
	}
	if n := len(h.Runs()); n != 4 {
		t.Errorf("variant b: %d runs read, want its newest 4 only", n)
	}
	a := b
	a.Metadata = map[string]string{"variant": "a"}
	if err := h.Need([]regress.Key{regress.KeyOf(a)}, 4); err != nil {
		t.Fatal(err)
	}
	runs := h.Runs()
	found := 0
	for _, r := range runs {
		for _, id := range own {
			if r.ID == id && len(r.Cells) == 1 {
				found++
			}
		}
	}
	if found != 3 || len(runs) != 11 {
		t.Errorf("variant a: %d of its 3 runs among %d read, want all 3 of 11", found, len(runs))
	}
	cur := &regress.Run{ID: "now", StartedAt: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), Status: rundir.RunOK}
	slow := a
	slow.TTFTP50Ms = results.Some(320.0)
	cur.Cells = []results.Cell{slow}
	rep := regress.CheckHistory(runs, cur, regress.Options{LastN: 3, MinRuns: 3, Metrics: mustMetrics(t, "ttft_p50_ms")})
	if len(rep.Verdicts) != 1 || rep.Verdicts[0].Outcome != regress.Regressed {
		t.Errorf("a run 16x slower than its own history: %+v", rep.Verdicts)
	}
}

// TestHistoryLeavesShardsOutWhateverTheirStatus: a shard of a sharded run
// is not a measurement of its cells' whole load, whether it ended ok or
// failed its own checks (exit 1); the merged run is.
func TestHistoryLeavesShardsOutWhateverTheirStatus(t *testing.T) {
	root := t.TempDir()
	okShard := writeHistoryRun(t, root, historyRun{day: 0, status: rundir.RunOK, shards: 2, shard: true, cells: []string{"sweep/16:8/c4"}, ttftP50s: 20})
	failedShard := writeHistoryRun(t, root, historyRun{day: 1, status: rundir.RunFailed, code: 1, shards: 2, shard: true, cells: []string{"sweep/16:8/c4"}, ttftP50s: 20})
	merged := writeHistoryRun(t, root, historyRun{day: 2, status: rundir.RunOK, shards: 2, merged: okShard + "," + failedShard, cells: []string{"sweep/16:8/c4"}, ttftP50s: 20})
	h, err := regress.OpenHistory(root, rundir.Filter{Plan: "p"}, "")
	if err != nil {
		t.Fatal(err)
	}
	c := results.Cell{Plan: "p", Stage: "sweep", CellID: "sweep/16:8/c4", Status: results.StatusOK}
	if err := h.Need([]regress.Key{regress.KeyOf(c)}, 10); err != nil {
		t.Fatal(err)
	}
	all, err := regress.LoadHistory(root, rundir.Filter{Plan: "p"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for name, runs := range map[string][]*regress.Run{"reader": h.Runs(), "LoadHistory": all} {
		by := map[string]*regress.Run{}
		for _, r := range runs {
			by[r.ID] = r
		}
		for _, id := range []string{okShard, failedShard} {
			if r := by[id]; r == nil || r.Status != regress.RunShard || len(r.Cells) != 0 {
				t.Errorf("%s: shard run %s: %+v, want left out as a shard", name, id, r)
			}
		}
		if r := by[merged]; r == nil || r.Status != rundir.RunOK || len(r.Cells) != 1 {
			t.Errorf("%s: merged run: %+v", name, r)
		}
	}
}

func mustMetrics(t *testing.T, names ...string) []regress.Metric {
	t.Helper()
	ms, err := regress.SelectMetrics(names)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}
