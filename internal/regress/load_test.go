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

// TestLoadHistoryKeepsFailedChecks: the history keeps a run that measured
// everything and failed only its checks (exit 1, or 5), with the metrics
// its baseline check called regressed; a run that failed to measure
// (exit 3) comes back without rows, to be counted as left out. A cell
// measured twice is in the history by its second measurement, the one
// its run judged.
func TestLoadHistoryKeepsFailedChecks(t *testing.T) {
	root := t.TempDir()
	at := time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC)
	write := func(i int, status string, code int, verdicts []results.Verdict) string {
		start := at.AddDate(0, 0, i)
		id := start.Format("20060102T150405Z") + "-abcdef"
		dir := filepath.Join(root, "plan=p", "date="+start.Format(time.DateOnly), "run="+id)
		for _, sub := range []string{results.TableCells, results.TableAssertions} {
			if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		fin := start.Add(time.Minute)
		b, _ := json.Marshal(rundir.Manifest{RunID: id, Plan: "p", StartedAt: start, FinishedAt: &fin, Status: status, ExitCode: &code})
		if err := os.WriteFile(filepath.Join(dir, rundir.ManifestFile), b, 0o644); err != nil {
			t.Fatal(err)
		}
		c := results.Cell{RunID: id, Plan: "p", Stage: "sweep", CellID: "sweep/64:32/c1", Attempt: 1, Measurement: 1, StartedAt: start, Status: results.StatusOK, TTFTP50Ms: results.Some(20.0)}
		again := c
		again.Measurement, again.TTFTP50Ms = 2, results.Some(30.0) // measured once more: the history keeps the second
		if err := rundir.WriteFile(filepath.Join(dir, results.TableCells, "part-001-00001.parquet"), []results.Cell{c, again}); err != nil {
			t.Fatal(err)
		}
		for j := range verdicts {
			verdicts[j].RunID, verdicts[j].Attempt, verdicts[j].JudgedAt = id, 1, fin
		}
		if len(verdicts) > 0 {
			if err := rundir.WriteFile(filepath.Join(dir, results.TableAssertions, "part-001-00001.parquet"), verdicts); err != nil {
				t.Fatal(err)
			}
		}
		return id
	}
	ok := write(0, rundir.RunOK, 0, nil)
	checks := write(1, rundir.RunFailed, 1, []results.Verdict{
		{Stage: "sweep", CellID: "sweep/64:32/c1", Level: regress.LevelRegression, Name: "ttft_p50_ms", Outcome: "regressed"},
		{Stage: "sweep", CellID: "sweep/64:32/c1", Level: regress.LevelRegression, Name: "tpot_p50_ms", Outcome: "same"},
	})
	inconclusive := write(2, rundir.RunFailed, 5, nil)
	infra := write(3, rundir.RunFailed, 3, nil)
	runs, err := regress.LoadHistory(root, rundir.Filter{Plan: "p"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]*regress.Run{}
	for _, r := range runs {
		by[r.ID] = r
	}
	if r := by[ok]; r == nil || r.FailedChecks || len(r.Cells) != 1 || *r.Cells[0].TTFTP50Ms != 30 {
		t.Errorf("ok run: %+v", r)
	}
	if r := by[checks]; r == nil || !r.FailedChecks || len(r.Cells) != 1 || !r.Regressed["sweep/64:32/c1\x00ttft_p50_ms"] || r.Regressed["sweep/64:32/c1\x00tpot_p50_ms"] {
		t.Errorf("run that failed its checks: %+v", r)
	}
	if r := by[inconclusive]; r == nil || !r.FailedChecks || len(r.Cells) != 1 {
		t.Errorf("run that exited 5: %+v", r)
	}
	if r := by[infra]; r == nil || r.FailedChecks || len(r.Cells) != 0 {
		t.Errorf("run that failed to measure: %+v", r)
	}
}
