package arrow

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/rundir"
	"github.com/benchrun/benchrun/pipeline"
)

// TestKind: the registered kind says what it writes, is neither default
// nor durable, and New does no I/O and refuses parameters it lacks.
func TestKind(t *testing.T) {
	if Kind.Name != "arrow" || Kind.Default || Kind.Durable || Kind.Writes != "cells.arrow and requests.arrow" || Kind.Schema.Def != "#Arrow" || Kind.Schema.Source == "" {
		t.Errorf("Kind = %+v", Kind)
	}
	if _, err := Kind.New(pipeline.SinkSpec{Kind: "arrow", Name: "arrow"}); err != nil {
		t.Errorf("New: %v", err)
	}
	if _, err := Kind.New(pipeline.SinkSpec{Kind: "arrow", Name: "arrow", Params: map[string]any{"compression": "zstd"}}); err == nil {
		t.Error("New with an unknown parameter: no error")
	}
}

// runSink drives a sink as the pipeline does: Start, Cell per cell, Stop.
func runSink(t *testing.T, env *pipeline.SinkEnv, cells []cellOf) {
	t.Helper()
	s, err := Kind.New(pipeline.SinkSpec{Kind: "arrow", Name: "arrow"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(env); err != nil {
		t.Fatal(err)
	}
	for _, c := range cells {
		if err := s.Cell(c.cell, results.AsRequests(c.reqs)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Stop(&pipeline.Summary{}); err != nil {
		t.Fatal(err)
	}
}

// TestSinkResume: a new run writes its cells; a resumed run's files hold
// the earlier attempts' rows (Prior) first, then its own; a replay writes
// fresh files; a failing Prior fails Start and leaves the earlier files.
func TestSinkResume(t *testing.T) {
	cells := testCells()
	dir := t.TempDir()
	env := func(prior func() (*pipeline.Rows, error)) *pipeline.SinkEnv {
		return &pipeline.SinkEnv{Run: &pipeline.RunInfo{Dir: dir, Attempt: 1}, Progress: io.Discard, Prior: prior}
	}
	none := func() (*pipeline.Rows, error) { return nil, nil }
	check := func(what string, want []cellOf) {
		t.Helper()
		wc, wr := flatten(want)
		compareRows(t, what+": cells", canonAll(wc), canonAll(decode[results.Cell](t, filepath.Join(dir, CellsFile))))
		compareRows(t, what+": requests", canonAll(wr), canonAll(decode[results.Request](t, filepath.Join(dir, RequestsFile))))
	}

	runSink(t, env(none), cells[:3])
	check("new run", cells[:3])

	pc, pr := flatten(cells[:3])
	runSink(t, env(func() (*pipeline.Rows, error) {
		return &pipeline.Rows{Cells: pc, Requests: rundir.RequestList(pr)}, nil
	}), cells[3:])
	check("resumed run", cells)

	e := env(none)
	e.Replay = true
	runSink(t, e, cells[1:2])
	check("replay", cells[1:2])

	s, _ := Kind.New(pipeline.SinkSpec{Kind: "arrow", Name: "arrow"})
	if err := s.Start(env(func() (*pipeline.Rows, error) { return nil, errors.New("unreadable part") })); err == nil {
		t.Error("Start with a failing Prior: no error")
	}
	check("after a failed start", cells[1:2])
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("files after a failed start: %v; want the two .arrow files only", entries)
	}
}

// A resumed run whose earlier attempt confirmed a cell (a second
// measurement of one attempt, with its own requests) writes each
// measurement's row with its own requests, once each: keyed by cell and
// attempt alone, both rows were written with both measurements' requests.
func TestSinkResumeConfirmation(t *testing.T) {
	base := testCells()[0]
	second := cellOf{base.cell, nil}
	second.cell.Measurement = 2
	for _, r := range base.reqs {
		r.Measurement, r.Seq = 2, r.Seq+1000
		second.reqs = append(second.reqs, r)
	}
	first := base
	first.cell.Measurement = 1
	first.reqs = nil
	for _, r := range base.reqs {
		r.Measurement = 1
		first.reqs = append(first.reqs, r)
	}
	prior := []cellOf{first, second}
	dir := t.TempDir()
	pc, pr := flatten(prior)
	runSink(t, &pipeline.SinkEnv{Run: &pipeline.RunInfo{Dir: dir, Attempt: 2}, Progress: io.Discard, Prior: func() (*pipeline.Rows, error) {
		return &pipeline.Rows{Cells: pc, Requests: rundir.RequestList(pr)}, nil
	}}, nil)
	compareRows(t, "requests", canonAll(pr), canonAll(decode[results.Request](t, filepath.Join(dir, RequestsFile))))
}
