package parquet_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
	pqs "github.com/benchrun/benchrun/sinks/parquet"
)

// Samples land in samples/ as their own parts; parts continue after the
// ones a resumed run directory already has; files are readable by others.
func TestSamplesAndPartNumbering(t *testing.T) {
	dir := t.TempDir()
	ri := &pipeline.RunInfo{ID: "r1", Plan: &schema.Plan{Name: "p"}, Dir: dir, StartedAt: time.Now()}
	o := pqs.New()
	if err := o.Start(ri); err != nil {
		t.Fatal(err)
	}
	s := results.Sample{RunID: "r1", Plan: "p", At: time.Now(), Source: "nvml", Device: "gpu0", Metric: "power_w", Unit: "W", Value: 312.5}
	if err := o.Samples([]results.Sample{s, s}); err != nil {
		t.Fatal(err)
	}
	if err := o.Cell(results.Cell{RunID: "r1", CellID: "a"}, nil); err != nil {
		t.Fatal(err)
	}
	// A second output on the same directory (a resumed run) numbers on.
	o2 := pqs.New()
	if err := o2.Start(ri); err != nil {
		t.Fatal(err)
	}
	if err := o2.Cell(results.Cell{RunID: "r1", CellID: "b"}, []results.Request{{RunID: "r1", CellID: "b"}}); err != nil {
		t.Fatal(err)
	}
	if err := o2.Samples([]results.Sample{s}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"samples/part-00001.parquet", "samples/part-00002.parquet", "cells/part-00001.parquet", "cells/part-00002.parquet", "requests/part-00002.parquet"} {
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
