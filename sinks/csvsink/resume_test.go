package csvsink_test

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/pipeline/pipelinetest"
	"github.com/benchrun/benchrun/schema"
	"github.com/benchrun/benchrun/sinks/csvsink"
)

// A resume appended rows with today's columns under the header an older
// benchrun wrote (the attempt column and others added since), so every
// column after the first new one was shifted. The file is first rewritten
// under today's header, each old row keeping its values by name.
func TestResumeUpgradesAnOlderCellsCSV(t *testing.T) {
	dir := t.TempDir()
	old := "run_id,cell_id,isl,status\nr1,sweep/16:4/c1,16,ok\nr1,sweep/16:4/c2,16,error\n"
	if err := os.WriteFile(filepath.Join(dir, "cells.csv"), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	o, err := csvsink.New(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(pipelinetest.LiveEnv(&pipeline.RunInfo{ID: "r1", Plan: &schema.Plan{Name: "p"}, Dir: dir, StartedAt: time.Now(), Attempt: 2})); err != nil {
		t.Fatal(err)
	}
	if err := o.Cell(results.Cell{RunID: "r1", CellID: "sweep/16:4/c2", Attempt: 2, ISL: 16, Status: "ok"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := o.Stop(nil); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "cells.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll() // fails on rows of another width
	if err != nil {
		t.Fatalf("cells.csv after the resume: %v", err)
	}
	if strings.Join(recs[0], ",") != strings.Join(csvsink.Columns(), ",") {
		t.Fatalf("header %v, want today's columns", recs[0])
	}
	at := map[string]int{}
	for i, c := range recs[0] {
		at[c] = i
	}
	var got []string
	for _, r := range recs[1:] {
		got = append(got, r[at["cell_id"]]+" "+r[at["attempt"]]+" "+r[at["isl"]]+" "+r[at["status"]])
	}
	want := "sweep/16:4/c1  16 ok|sweep/16:4/c2  16 error|sweep/16:4/c2 2 16 ok"
	if strings.Join(got, "|") != want {
		t.Errorf("rows (cell attempt isl status): %q, want %q", strings.Join(got, "|"), want)
	}
}
