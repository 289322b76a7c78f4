package engine

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/benchrun/benchrun/internal/host"
	"github.com/benchrun/benchrun/internal/redact"
	"github.com/benchrun/benchrun/internal/rundir"
	"github.com/benchrun/benchrun/internal/telemetry"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
)

// NewRunInfo names a run and creates its directory:
// <root>/plan=<name>/date=<YYYY-MM-DD>/run=<id>/ (hive-style, so DuckDB's
// hive_partitioning reads plan, date and run as columns). The run holds
// the directory's lock until Run returns (or Close).
func NewRunInfo(root string, p *schema.Plan, tags []string, now time.Time) (*pipeline.RunInfo, error) {
	var b [3]byte
	_, _ = rand.Read(b[:])
	id := now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
	dir := filepath.Join(root, "plan="+p.Name, "date="+now.UTC().Format("2006-01-02"), "run="+id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating run directory: %w", err)
	}
	lock, err := lockRunDir(dir, 1, now)
	if err != nil {
		return nil, err
	}
	ri := &pipeline.RunInfo{ID: id, Plan: p, Dir: dir, StartedAt: now, Tags: tags, Attempt: 1, State: &runState{lock: lock}}
	// The plan as written and as resolved, with URL passwords and
	// registered secrets masked (pipeline/engine/redact.go).
	if err := rundir.WriteFileAtomic(filepath.Join(dir, rundir.PlanFile), planFileText(p, p.Source)); err != nil {
		ri.Close()
		return nil, err
	}
	resolved, err := resolvedPlanText(p)
	if err != nil {
		ri.Close()
		return nil, err
	}
	if err := rundir.WriteFileAtomic(filepath.Join(dir, rundir.ResolvedFile), resolved); err != nil {
		ri.Close()
		return nil, err
	}
	return ri, nil
}

// crashReason is what an attempt found running with nobody holding the
// run directory is recorded with.
const crashReason = rundir.CrashReason

// newManifest is the manifest an attempt starts with: the earlier
// attempts' on a resume, a new run's otherwise.
func newManifest(ri *pipeline.RunInfo) *rundir.Manifest {
	id := pipeline.RunIdentity(ri)
	this := pipeline.AttemptRecord{
		Attempt: max(ri.Attempt, 1), StartedAt: ri.StartedAt.UTC(), Status: pipeline.RunRunning,
		PID: os.Getpid(), Hostname: id.Hostname, Benchrun: id.BenchrunVersion,
	}
	if ri.Resumed && stateOf(ri).prev != nil {
		// Keep what the first attempt recorded; note the resumption and
		// how the attempts before this one ended.
		m := *stateOf(ri).prev
		attempts := m.AttemptRecords()
		if last := &attempts[len(attempts)-1]; last.Status == pipeline.RunRunning {
			last.Status, last.Reason = pipeline.RunCrashed, crashReason
		}
		m.Attempts = append(attempts, this)
		m.Status, m.Reason, m.ExitCode, m.FinishedAt = pipeline.RunRunning, "", nil, nil
		m.Tags, m.Metadata = ri.Tags, ri.Plan.Metadata
		m.ResumedAt = append(slices.Clone(m.ResumedAt), ri.StartedAt.UTC())
		return &m
	}
	return &rundir.Manifest{
		RunID: ri.ID, Plan: ri.Plan.Name, PlanFile: ri.Plan.Path, Tags: ri.Tags,
		Metadata: ri.Plan.Metadata, StartedAt: ri.StartedAt.UTC(),
		Benchrun: id.BenchrunVersion, GoVersion: runtime.Version(),
		Host:        pipeline.Host{Hostname: id.Hostname, OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU()},
		ModelDigest: id.ModelDigest, Hardware: id.Hardware,
		GPUs: gpuRecords(host.This().GPUs), DriverVersion: host.This().GPUs.DriverVersion, CUDAVersion: host.This().GPUs.CUDADriverVersion,
		Status:   pipeline.RunRunning,
		Attempts: []pipeline.AttemptRecord{this},
	}
}

// recordOutcome puts a judged run's stages and its failed and
// inconclusive checks into the manifest, in the manifest's records.
func recordOutcome(m *rundir.Manifest, sum *pipeline.Summary) {
	m.Stages = append([]rundir.StageRecord(nil), sum.Stages...)
	m.Verdicts, m.Inconclusive = verdictRecords(sum.Failed), verdictRecords(sum.Inconclusive)
}

// verdictRecords are verdicts as the manifest keeps them.
func verdictRecords(vs []pipeline.Verdict) []rundir.VerdictRecord {
	var out []rundir.VerdictRecord
	for _, v := range vs {
		out = append(out, rundir.VerdictRecord(v))
	}
	return out
}

// writeManifest writes the manifest into the run directory, with URL
// passwords and registered secrets masked.
func writeManifest(dir string, m *rundir.Manifest) error {
	masked := redact.Value(*m)
	return rundir.WriteManifest(dir, &masked)
}

// LockFile is the run directory's lock file (rundir.LockFile): a writer
// holds an exclusive flock on it for as long as it writes.
const LockFile = rundir.LockFile

// BusyError says that another writer holds a run directory
// (rundir.BusyError).
type BusyError = rundir.BusyError

type runLock struct{ l *rundir.WriterLock }

// lockRunDir takes the run directory's lock without waiting
// (rundir.Lock, the one writers' lock), or returns a *BusyError naming
// the holder.
func lockRunDir(dir string, attempt int, now time.Time) (*runLock, error) {
	l, err := rundir.Lock(dir, pipeline.LockHolder{PID: os.Getpid(), Hostname: host.This().Hostname, StartedAt: now.UTC(), Attempt: attempt})
	if err != nil {
		return nil, err
	}
	return &runLock{l: l}, nil
}

func (l *runLock) release() {
	if l != nil {
		l.l.Release() // nobody holds it now
	}
}

// gpuRecords are the fingerprint's GPUs as the manifest records them.
func gpuRecords(fp telemetry.Fingerprint) []rundir.GPURecord {
	var out []rundir.GPURecord
	for _, g := range fp.GPUs {
		out = append(out, rundir.GPURecord{Index: g.Index, Name: g.Name, UUID: g.UUID, PCIBusID: g.PCIBusID, MemoryBytes: g.MemoryBytes})
	}
	return out
}

// runState is the engine's own record of a run (RunInfo.State): its lock
// on the run directory and what a resume found.
type runState struct {
	// doneCells are the cells the resumed run already finished (Env.CellDone).
	doneCells map[string]bool
	// lock holds the run directory: one writer at a time (Close frees it).
	lock *runLock
	// What a resume found: the manifest as the earlier attempts left it
	// (with their records), whether the last of them crashed, the
	// temporary files a killed writer left (removed), the resolved plan
	// the run was made with, and the failed verdicts of the cells already
	// done (they still count).
	prev        *rundir.Manifest
	crashed     *pipeline.AttemptRecord
	removed     []string
	prevPlan    []byte
	priorFailed []pipeline.Verdict
	// priorInconclusive are the inconclusive verdicts of the cells a
	// resume does not measure again: inconclusive still, never failed.
	priorInconclusive []pipeline.Verdict
}

// Close frees the run directory (RunInfo.Close); safe more than once.
func (s *runState) Close() {
	s.lock.release()
	s.lock = nil
}

// stateOf is the engine's record of ri: empty for a run the engine did
// not open (a replay's, a test's).
func stateOf(ri *pipeline.RunInfo) *runState {
	if s, ok := ri.State.(*runState); ok {
		return s
	}
	return &runState{}
}
