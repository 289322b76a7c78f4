package pipelinetest_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/sim"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/pipeline/pipelinetest"
	"github.com/benchrun/benchrun/sinks"
	"github.com/benchrun/benchrun/stages"
)

func registry() *pipeline.Registry {
	reg := pipeline.NewRegistry()
	stages.Builtin(reg)
	sinks.Builtin(reg)
	return reg
}

// RunStage runs the stage and what it needs, and nothing else (the
// `other` stage would fail: its server is not there), against the
// simulator over HTTP, and the Recording has what every sink got, in
// order: each cell's row, its requests and verdicts, then the summary;
// the run directory has the sinks' files.
func TestRunStageRecordsTheStageAndWhatItNeeds(t *testing.T) {
	url := pipelinetest.Sim(t, func(c *sim.Config) { c.MaxModelLen = 256 })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rec := pipelinetest.RunStage(t, ctx, registry(), fmt.Sprintf(`
name: "kit"
model: {name: "sim-llama"}
stages: {
	health: {kind: "health", target: %[1]q}
	sweep: {
		kind: "sweep", target: %[1]q, needs: ["health"]
		cells: [{isl: 16, osl: 4}, {isl: 300, osl: 4}], concurrency: [1], requests: 2, warmup: 0
		assert: ["status == \"ok\""]
	}
	other: {kind: "health", target: "http://127.0.0.1:1", within: "1s"}
}`, url), "sweep")

	var ran []string
	for _, s := range rec.Summary.Stages {
		ran = append(ran, s.Name)
	}
	slices.Sort(ran)
	if !slices.Equal(ran, []string{"health", "sweep"}) {
		t.Fatalf("stages run: %v; want the sweep and the health check it needs", ran)
	}
	if st := rec.Stage("health"); st.Status != pipeline.StatusOK {
		t.Errorf("health: %s %s", st.Status, st.Reason)
	}
	if len(rec.Cells) != 2 || len(rec.Requests) != 2 || len(rec.Verdicts) != 2 {
		t.Fatalf("%d cells, %d requests, %d verdicts; want 2, 2 (the second cell sends none) and 2", len(rec.Cells), len(rec.Requests), len(rec.Verdicts))
	}
	ok, bad := rec.Cells[0], rec.Cells[1]
	if ok.Status != results.StatusOK || bad.Status != results.StatusError || bad.TTFTP99Ms != nil {
		t.Errorf("cells: %s %s; %s %s (ttft p99 %v); want ok, then an error that measured nothing", ok.CellID, ok.Status, bad.CellID, bad.Status, bad.TTFTP99Ms)
	}
	if c, found := rec.Cell(bad.CellID); !found || c.Reason != bad.Reason {
		t.Errorf("Cell(%s): %v %v", bad.CellID, found, c.Reason)
	}
	// The measured cell's telemetry samples (the simulator's metrics,
	// scraped over its window) come right after its row and verdicts; the
	// refused cell measured nothing and has none.
	want := []string{"start", "cell " + ok.CellID, "verdicts " + ok.CellID, "samples", "cell " + bad.CellID, "verdicts " + bad.CellID, "stop"}
	if !slices.Equal(rec.Calls, want) {
		t.Errorf("calls %v, want %v", rec.Calls, want)
	}
	if rec.Summary.ExitCode != pipeline.ExitInfra || rec.Env == nil || rec.Env.Run.Dir != rec.Dir {
		t.Errorf("exit %d (want 3: an error cell), env %v, dir %s", rec.Summary.ExitCode, rec.Env, rec.Dir)
	}
	for _, f := range []string{"manifest.json", "cells.csv", "result.json"} {
		if _, err := os.Stat(filepath.Join(rec.Dir, f)); err != nil {
			t.Errorf("the run directory lacks %s: %v", f, err)
		}
	}
	if rec.Progress == "" {
		t.Error("no progress recorded")
	}
}

// Sim serves the real simulator over loopback HTTP until the test ends.
func TestSimServesOverHTTP(t *testing.T) {
	var url string
	t.Run("served", func(t *testing.T) {
		url = pipelinetest.Sim(t)
		resp, err := http.Get(url + "/v1/models")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /v1/models: %s", resp.Status)
		}
	})
	if resp, err := http.Get(url + "/v1/models"); err == nil {
		resp.Body.Close()
		t.Errorf("the simulator still answers after its test ended: %s", resp.Status)
	}
}
