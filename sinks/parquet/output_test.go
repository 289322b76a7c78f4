package parquet_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/pipeline/pipelinetest"
	"github.com/benchrun/benchrun/schema"
	pqs "github.com/benchrun/benchrun/sinks/parquet"
)

// Samples land in samples/ as their own parts; parts continue after the
// ones a resumed run directory already has; files are readable by others.
func TestSamplesAndPartNumbering(t *testing.T) {
	dir := t.TempDir()
	ri := &pipeline.RunInfo{ID: "r1", Plan: &schema.Plan{Name: "p"}, Dir: dir, StartedAt: time.Now()}
	o := pqs.New()
	if err := o.Start(pipelinetest.LiveEnv(ri)); err != nil {
		t.Fatal(err)
	}
	s := results.Sample{RunID: "r1", Plan: "p", At: time.Now(), Source: "nvml", Device: "gpu0", Metric: "power_w", Unit: "W", Value: 312.5}
	if err := o.Samples([]results.Sample{s, s}); err != nil {
		t.Fatal(err)
	}
	if err := o.Cell(results.Cell{RunID: "r1", CellID: "a"}, nil); err != nil {
		t.Fatal(err)
	}
	// A second output on the same directory (a resumed run) numbers on,
	// under its own attempt.
	o2 := pqs.New()
	ri2 := *ri
	ri2.Attempt = 2
	if err := o2.Start(pipelinetest.LiveEnv(&ri2)); err != nil {
		t.Fatal(err)
	}
	if err := o2.Cell(results.Cell{RunID: "r1", CellID: "b"}, results.AsRequests([]results.Request{{RunID: "r1", CellID: "b"}})); err != nil {
		t.Fatal(err)
	}
	if err := o2.Samples([]results.Sample{s}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"samples/part-001-00001.parquet", "samples/part-002-00002.parquet", "cells/part-001-00001.parquet", "cells/part-002-00002.parquet", "requests/part-002-00002.parquet"} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Errorf("missing %s: %v", f, err)
			continue
		}
		if st.Mode().Perm() != 0o644 {
			t.Errorf("%s has mode %v, want 0644", f, st.Mode().Perm())
		}
	}
	rows := query(t, duck(t), "SELECT count(*), sum(value) FROM read_parquet("+sqlPath(filepath.Join(dir, "samples", "*.parquet"))+")")
	if rows[0][0] != "3" || rows[0][1] != "937.5" {
		t.Errorf("samples read back as %v", rows[0])
	}
}

// Two writers that started on one run directory before either wrote (the
// run directory's lock keeps that from happening; this is what is left if
// it cannot, on a file system without flock) used the same part numbers
// and overwrote each other's cells. Part names carry the attempt, so two
// attempts never collide, and they still match the documented glob and
// sort in writing order.
func TestPartNamesDoNotCollideAcrossAttempts(t *testing.T) {
	dir := t.TempDir()
	var outs []*pqs.Sink
	for attempt := 1; attempt <= 2; attempt++ {
		o := pqs.New()
		ri := &pipeline.RunInfo{ID: "r1", Plan: &schema.Plan{Name: "p"}, Dir: dir, StartedAt: time.Now(), Attempt: attempt}
		if err := o.Start(pipelinetest.LiveEnv(ri)); err != nil {
			t.Fatal(err)
		}
		outs = append(outs, o)
	}
	for i, o := range outs {
		for _, id := range []string{"a", "b"} {
			c := results.Cell{RunID: "r1", CellID: id, Attempt: int64(i + 1)}
			if err := o.Cell(c, results.AsRequests([]results.Request{{RunID: "r1", CellID: id, Attempt: int64(i + 1)}})); err != nil {
				t.Fatal(err)
			}
		}
	}
	rows := query(t, duck(t), "SELECT count(*), count(DISTINCT (cell_id, attempt)) FROM read_parquet("+sqlPath(filepath.Join(dir, "cells", "*.parquet"))+")")
	if rows[0][0] != "4" || rows[0][1] != "4" {
		t.Errorf("cells/*.parquet holds %s rows (%s distinct cell × attempt); want the 4 written", rows[0][0], rows[0][1])
	}
	files, _ := filepath.Glob(filepath.Join(dir, "cells", "*.parquet"))
	want := []string{"part-001-00001.parquet", "part-001-00002.parquet", "part-002-00001.parquet", "part-002-00002.parquet"}
	for i, f := range files {
		if i >= len(want) || filepath.Base(f) != want[i] {
			t.Errorf("cell parts %v, want %v", files, want)
			break
		}
	}
}
