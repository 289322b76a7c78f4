package judge

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/rundir"
	"github.com/benchrun/benchrun/schema"
)

// writeRun writes an ok run of plan p under root, started day hours after
// a fixed instant, with one ok row of cell c1 reading ttft.
func writeRun(t *testing.T, root string, day int, ttft float64) {
	t.Helper()
	start := time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC).Add(time.Duration(day) * time.Hour)
	id := start.Format("20060102T150405Z") + "-abcdef"
	dir := filepath.Join(root, "plan=p", "date="+start.Format(time.DateOnly), "run="+id)
	if err := os.MkdirAll(filepath.Join(dir, results.TableCells), 0o755); err != nil {
		t.Fatal(err)
	}
	fin, code := start.Add(time.Minute), 0
	b, _ := json.Marshal(rundir.Manifest{RunID: id, Plan: "p", StartedAt: start, FinishedAt: &fin, Status: rundir.RunOK, ExitCode: &code})
	if err := os.WriteFile(filepath.Join(dir, rundir.ManifestFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	row := cellRow("c1", 1, ttft)
	row.RunID, row.StartedAt = id, start
	if err := rundir.WriteFile(filepath.Join(dir, results.TableCells, "part-001-00001.parquet"), []results.Cell{row}); err != nil {
		t.Fatal(err)
	}
}

// The baseline is judged from the rows fed and a history on disk, without
// a scheduler: a cell that regressed is asked for once more (the plan's
// baseline confirms), and the run's check fails it, saying what the
// first measurement read.
func TestJudgeBaseline(t *testing.T) {
	root := t.TempDir()
	for day, ttft := range []float64{10, 10.2, 9.9, 10.1, 10} {
		writeRun(t, root, day, ttft)
	}
	b := &schema.Baseline{MinRuns: 3, Confirm: true, Metrics: []string{"ttft_p50_ms"}}
	var progress bytes.Buffer
	j := New(Config{
		Run:       RunInfo{ID: "r1", Plan: "p", Attempt: 1, StartedAt: time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)},
		Measuring: []string{"sweep"},
		History:   OpenHistory(b, root, "p", "r1", nil),
		Progress:  &progress,
	})
	first := cellRow("c1", 1, 30)
	j.Row(first, nil)
	if !j.Confirm(first) {
		t.Fatalf("a regressed cell not asked for again; progress:\n%s", progress.String())
	}
	if note := j.RemeasureNote("sweep", "c1"); !strings.Contains(note, "regressed against its history (ttft_p50_ms +") {
		t.Fatalf("the second row's note = %q", note)
	}
	j.Row(cellRow("c1", 2, 31), nil)
	judged := j.Baseline()
	if len(judged) != 1 || judged[0].Stage != "sweep" || len(judged[0].Rows) != 1 {
		t.Fatalf("baseline rows = %+v, want one of stage sweep", judged)
	}
	row := judged[0].Rows[0]
	if row.Outcome != "regressed" || row.Level != LevelRegression || row.Values["confirm"] != "confirmed: both measurements regressed" || row.Values["first"] != "30" {
		t.Fatalf("baseline row = %+v, want a confirmed regression whose first measurement read 30", row)
	}
	if out := j.Outcome(); len(out.Failed) != 1 || out.Failed[0].Name != "ttft_p50_ms" {
		t.Fatalf("failed = %+v, want the regression", out.Failed)
	}
	if !strings.Contains(progress.String(), "benchrun: baseline (") || !strings.Contains(progress.String(), "1 regressed") {
		t.Fatalf("progress = %q, want the baseline's line", progress.String())
	}
}
