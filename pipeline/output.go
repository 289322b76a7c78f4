package pipeline

import (
	"path/filepath"
	"time"

	"github.com/benchrun/benchrun/internal/host"
	"github.com/benchrun/benchrun/internal/redact"
	"github.com/benchrun/benchrun/internal/results"
)

// Identity is what every row of a run is stamped with beyond the run id and
// plan: the model's digest and the machine.
type Identity struct {
	ModelDigest     string
	Hostname        string
	Hardware        string
	BenchrunVersion string
}

// RunIdentity returns the identity stamps of a run. It never hashes: the
// model digest is the one already known for the model file as it is now
// (this process hashed it, or the disk cache has it), "" otherwise. A run
// hashes its model file before it measures (modelDigester).
func RunIdentity(ri *RunInfo) Identity {
	if ri != nil && ri.Identity != nil {
		return *ri.Identity
	}
	h := host.This()
	id := Identity{Hostname: h.Hostname, Hardware: h.Hardware, BenchrunVersion: Version()}
	if ri != nil && ri.Plan != nil && ri.Plan.Model.File != "" {
		id.ModelDigest = host.KnownDigest(ri.Plan.Model.File, filepath.Dir(ri.Plan.Path))
	}
	return id
}

// RunRecord is the run-level record the run outputs (result.json, the
// reports) write: at the end of a run from its summary, or while it runs
// (sum == nil, status "running").
func RunRecord(ri *RunInfo, sum *Summary) results.Run {
	id := RunIdentity(ri)
	started := ri.StartedAt
	if ri.Resumed && !ri.FirstStartedAt.IsZero() {
		started = ri.FirstStartedAt // the run's first start, as the manifest keeps it
	}
	run := results.Run{
		RunID: ri.ID, StartedAt: started.UTC(), Status: StatusRunning, Tags: ri.Tags,
		ModelDigest: id.ModelDigest, Hostname: id.Hostname, Hardware: id.Hardware, BenchrunVersion: id.BenchrunVersion,
	}
	if ri.Plan != nil {
		run.Plan, run.Description, run.Model, run.Metadata = ri.Plan.Name, ri.Plan.Description, ri.Plan.Model.Name, ri.Plan.Metadata
		if mf, ok := InspectModelFile(ri.Plan); ok && mf.Exists {
			run.ModelFile, run.ModelQuant = filepath.Base(mf.Path), mf.Quant
		}
	}
	if sum == nil {
		return redact.Value(run)
	}
	if sum.Status == RunRunning || sum.Status == RunCrashed || sum.Status == "incomplete" {
		// A replay of a run that has not ended: no end time, no exit code.
		run.Status = sum.Status
		for _, s := range sum.Stages {
			run.Stages = append(run.Stages, results.StageOutcome{Name: s.Name, Kind: s.Kind, Status: s.Status, Reason: s.Reason, DurationS: s.DurationS})
		}
		return redact.Value(run)
	}
	now := time.Now().UTC()
	if !sum.FinishedAt.IsZero() {
		now = sum.FinishedAt.UTC()
	}
	code := sum.ExitCode
	run.FinishedAt, run.ExitCode = &now, &code
	switch {
	case sum.Status != "":
		run.Status = sum.Status
	case sum.Interrupted:
		run.Status = "interrupted"
	case sum.ExitCode == ExitOK:
		run.Status = StatusOK
	default:
		run.Status = StatusFailed
	}
	for _, s := range sum.Stages {
		run.Stages = append(run.Stages, results.StageOutcome{Name: s.Name, Kind: s.Kind, Status: s.Status, Reason: s.Reason, DurationS: s.DurationS})
	}
	return redact.Value(run) // tags, metadata and reasons, secrets masked
}
