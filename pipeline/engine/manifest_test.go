package engine

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/golden"
	"github.com/benchrun/benchrun/pipeline"
)

// TestManifestBytes pins manifest.json as the writer lays it out: every
// field filled, the stages and the failed and inconclusive checks taken
// from a judged run's Summary. Readers parse it by key, yet analysts and
// scripts diff it, so its bytes change only on purpose.
func TestManifestBytes(t *testing.T) {
	dir := t.TempDir()
	// A manifest as a run's start and its sinks left it.
	start := `{"run_id": "20261201T052532Z-d8734b", "plan": "quickstart", "plan_file": "plans/quickstart.cue",
	"tags": ["file=q8.gguf"], "metadata": {"engine": "sim"}, "started_at": "2026-12-01T05:25:32.684974687Z",
	"benchrun_version": "(devel)", "go_version": "go1.26.8",
	"host": {"hostname": "vm", "os": "linux", "arch": "amd64", "cpus": 2},
	"model_digest": "sha256:00", "hardware": "2 CPUs, 8 GiB",
	"gpus": [{"index": 0, "name": "H200", "uuid": "GPU-1", "pci_bus_id": "0000:01:00.0", "memory_bytes": 1024}],
	"driver_version": "570.1", "cuda_version": "12.8", "status": "running",
	"resumed_at": ["2026-12-01T06:00:00Z"],
	"attempts": [{"attempt": 1, "started_at": "2026-12-01T05:25:32.684974687Z", "status": "crashed", "reason": "killed", "pid": 7, "hostname": "vm", "benchrun_version": "(devel)"},
		{"attempt": 2, "started_at": "2026-12-01T06:00:00Z", "status": "running", "pid": 8, "hostname": "vm"}],
	"engines": [{"stage": "sweep", "engine": "sim", "version": "1.0"}],
	"sinks": [{"name": "parquet", "kind": "parquet", "required": true, "durable": true, "status": "ok", "calls": 3, "config": {"prefix": "x"}}],
	"shard": {"shard": 1, "shards": 2, "coordinator": "h:1", "barriers": 4, "barrier_wait_max_ms": 1.5}}`
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(start), 0o644); err != nil {
		t.Fatal(err)
	}
	failed := pipeline.Verdict{Assertion: "itl_p99_ms < 2*itl_p50_ms", Name: "itl", Severity: pipeline.SeverityFail, Level: pipeline.LevelRow,
		Pos: "plan.cue:24:12", Stage: "sweep", CellID: "sweep/64:32/c4", Cell: "sweep 64:32 c=4",
		Values: map[string]string{"itl_p50_ms": "5", "itl_p99_ms": "13"}, Measurement: 2}
	incl := failed
	incl.Inconclusive, incl.Explained, incl.Error = true, "the machine ran 3 ms late", "none"
	sum := &pipeline.Summary{
		Stages: []pipeline.StageResult{{Name: "server", Kind: "launch", Status: "ok", DurationS: 0.5, Attempts: 1},
			{Name: "sweep", Kind: "sweep", Status: "failed", Reason: "cells failed", DurationS: 10.25, Attempts: 2}},
		Failed: []pipeline.Verdict{failed}, Inconclusive: []pipeline.Verdict{incl},
		ExitCode: pipeline.ExitAssertion, Reason: "1 assertion failed",
		FinishedAt: time.Date(2026, 12, 1, 6, 10, 0, 0, time.UTC),
	}
	if err := recordJudgement(dir, sum); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "manifest.json", got)
}
