package report_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	pq "github.com/parquet-go/parquet-go"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/results/resultstest"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/pipeline/pipelinetest"
	"github.com/benchrun/benchrun/schema"
	"github.com/benchrun/benchrun/sinks/report"
)

func writeParquet[T any](t *testing.T, path string, rows []T) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := pq.WriteFile(path, rows); err != nil {
		t.Fatal(err)
	}
}

// A resumed run's report covers the cells of the first attempt too, with
// the re-measured cell's latest row.
func TestResumedRunReportsEveryCell(t *testing.T) {
	dir := t.TempDir()
	pts := resultstest.Points()
	for i, p := range pts[:3] {
		c := p.Cell
		if i == 2 {
			c.Status, c.Reason = results.StatusError, "server died"
		}
		name := filepath.Join("part-0000" + string(rune('1'+i)) + ".parquet")
		writeParquet(t, filepath.Join(dir, "cells", name), []results.Cell{c})
		writeParquet(t, filepath.Join(dir, "assertions", name), p.Verdicts)
	}
	o := report.New()
	ri := &pipeline.RunInfo{ID: resultstest.RunID, Plan: &schema.Plan{Name: "fixture"}, Dir: dir, StartedAt: resultstest.T0, Resumed: true, Attempt: 2}
	if err := o.Start(pipelinetest.LiveEnv(ri)); err != nil {
		t.Fatal(err)
	}
	for _, p := range pts[2:] { // the resumed run re-measures the failed cell, then the rest
		if err := o.Cell(p.Cell, results.AsRequests(p.Requests)); err != nil {
			t.Fatal(err)
		}
		if err := o.Verdicts(p.Cell, p.Verdicts); err != nil {
			t.Fatal(err)
		}
	}
	if err := o.Stop(&pipeline.Summary{Run: ri, ExitCode: pipeline.ExitAssertion}); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(md)
	if !strings.Contains(s, "6 cell rows, 12 assertion checks, 1 failed") {
		t.Errorf("report.md summary wrong:\n%s", s)
	}
	if strings.Contains(s, "server died") {
		t.Errorf("report.md still shows the failed first attempt of a re-measured cell")
	}
}
