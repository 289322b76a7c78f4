package rundir

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// ManifestFile is the name of a run directory's manifest.
const ManifestFile = "manifest.json"

// Manifest statuses: a run (and each attempt) is running until it ends ok,
// failed or interrupted; one found running with no writer holding the run
// directory crashed (it was killed, or its machine went down).
const (
	RunRunning     = "running"
	RunOK          = "ok"
	RunFailed      = "failed"
	RunInterrupted = "interrupted"
	RunCrashed     = "crashed"
	// RunIncomplete is a reader's word, never written to a manifest: the
	// run directory has no manifest.json (its writer was killed before it
	// wrote one) or one that cannot be read.
	RunIncomplete = "incomplete"
)

// CrashReason is what an attempt found running with nobody holding the
// run directory is recorded (and reported) with.
const CrashReason = "it never finished: its manifest still said running and no benchrun held the run directory (killed, crashed, or its machine went down)"

// Manifest is manifest.json: what ran, where, with what, and how it ended.
// One definition for every reader and for the writer (pipeline), so a
// field added here is written and read alike.
type Manifest struct {
	RunID      string            `json:"run_id"`
	Plan       string            `json:"plan"`
	PlanFile   string            `json:"plan_file"`
	Tags       []string          `json:"tags,omitempty"`
	Metadata   map[string]string `json:"metadata,omitempty"`
	StartedAt  time.Time         `json:"started_at"`
	FinishedAt *time.Time        `json:"finished_at,omitempty"`
	Benchrun   string            `json:"benchrun_version"`
	GoVersion  string            `json:"go_version"`
	Host       Host              `json:"host"`
	// ModelDigest is the sha256 of the plan's model.file, when it names one.
	ModelDigest string `json:"model_digest,omitempty"`
	// Hardware describes the machine in one line (CPUs, memory, GPUs
	// with their memory, the NVIDIA driver and CUDA versions): the
	// regression key's hardware fingerprint.
	Hardware string `json:"hardware,omitempty"`
	// GPUs are this machine's GPUs as NVML lists them (empty without
	// NVML), with the driver's and CUDA's versions.
	GPUs          []GPURecord `json:"gpus,omitempty"`
	DriverVersion string      `json:"driver_version,omitempty"`
	CUDAVersion   string      `json:"cuda_version,omitempty"`
	// Status is how the latest attempt ended: running, ok, failed,
	// interrupted (crashed is an attempt's status, found on resume).
	Status string `json:"status"`
	// Reason says why, when the status is not ok.
	Reason   string `json:"reason,omitempty"`
	ExitCode *int   `json:"exit_code,omitempty"`
	// ResumedAt lists when the run was continued with --resume.
	ResumedAt []time.Time `json:"resumed_at,omitempty"`
	// Attempts records every attempt of the run, the first and each
	// --resume, in order; rows carry the attempt's number.
	Attempts []AttemptRecord `json:"attempts,omitempty"`
	// Engines are the servers the measuring stages measured, with the
	// version each reported ("unknown" when it would not say): the same
	// model differs 3-4x between releases of one engine.
	Engines []EngineRecord `json:"engines,omitempty"`
	// Sinks records each sink of the attempt: whether it was required,
	// how many calls it took, the retries transient failures cost, and
	// the last error (secrets masked).
	Sinks []SinkRecord `json:"sinks,omitempty"`
	// Shard is this process's part of a sharded run (--shard i/n): how
	// its start was agreed and its clock's measured offset (nil: not
	// sharded). benchrun merge reads it from every shard.
	Shard *ShardRecord `json:"shard,omitempty"`
	// The run's outcome stage by stage, then its failed checks, last in
	// the file: the writer fills them from the judged run (pipeline
	// converts its StageResult and Verdict into these records).
	Stages   []StageRecord   `json:"stages,omitempty"`
	Verdicts []VerdictRecord `json:"failed_assertions,omitempty"`
	// Inconclusive are the checks the machine's own lateness could
	// explain (neither passed nor failed; docs/PLANS.md).
	Inconclusive []VerdictRecord `json:"inconclusive_checks,omitempty"`
}

// ShardRecord is one shard process's account of a sharded run.
type ShardRecord struct {
	Shard  int `json:"shard"`
	Shards int `json:"shards"`
	// StartAt is --start-at (nil: none was given).
	StartAt *time.Time `json:"start_at,omitempty"`
	// Coordinator is the address the shard joined ("" with --start-at
	// alone); Served says this process served it (--coordinate).
	Coordinator string `json:"coordinator,omitempty"`
	Served      bool   `json:"served_coordinator,omitempty"`
	// ClockOffsetMs is the coordinator's clock minus this machine's, by
	// the exchange with the smallest round trip (ClockRTTMs; the offset's
	// error is at most half of it). nil without a coordinator.
	ClockOffsetMs *float64 `json:"clock_offset_ms,omitempty"`
	ClockRTTMs    *float64 `json:"clock_rtt_ms,omitempty"`
	// Barriers counts the cells started in step with the other shards;
	// BarrierWaitMaxMs is the longest this shard waited at one for its
	// peers (a shard that waits long is the fast one).
	Barriers         int     `json:"barriers"`
	BarrierWaitMaxMs float64 `json:"barrier_wait_max_ms"`
}

// StageRecord is one stage's outcome as manifest.json keeps it (and as
// pipeline.StageResult, the same type, reports it).
type StageRecord struct {
	Name      string  `json:"name"`
	Kind      string  `json:"kind"`
	Status    string  `json:"status"`
	Reason    string  `json:"reason,omitempty"`
	DurationS float64 `json:"duration_s"`
	Attempts  int     `json:"attempts,omitempty"`
}

// VerdictRecord is one failed assertion as manifest.json keeps it (and
// the fields of pipeline.Verdict, defined on it): the assertions table has every verdict, the
// manifest the failed ones, so a glance at it says why a run exited 1.
type VerdictRecord struct {
	Assertion string            `json:"assertion"`
	Name      string            `json:"name,omitempty"`
	Severity  string            `json:"severity,omitempty"`
	Level     string            `json:"level,omitempty"`
	Pos       string            `json:"pos"`
	Stage     string            `json:"stage"`
	CellID    string            `json:"cell_id"`
	Cell      string            `json:"cell"`
	Passed    bool              `json:"passed"`
	Values    map[string]string `json:"values"`
	Error     string            `json:"error,omitempty"`
	// Inconclusive: the machine's lateness could explain the miss;
	// Explained says how (docs/PLANS.md, "Inconclusive verdicts").
	Inconclusive bool   `json:"inconclusive,omitempty"`
	Explained    string `json:"explained,omitempty"`
	Measurement  int64  `json:"measurement,omitempty"`
	// TooFewSamples: inconclusive because the 95 % bounds of a percentile
	// it reads straddle the check; NeedsRequests is about how many
	// requests a cell would need to decide it (0: unknown, the check sits
	// at its threshold). Measuring the cell again at its size would not
	// help, so such a cell is not re-measured.
	TooFewSamples bool  `json:"too_few_samples,omitempty"`
	NeedsRequests int64 `json:"needs_requests,omitempty"`
}

// GPURecord is one GPU of the machine: identified by UUID and PCI bus
// id, never by index alone (NVML's index follows PCI order, CUDA's its
// own unless CUDA_DEVICE_ORDER=PCI_BUS_ID).
type GPURecord struct {
	Index       int    `json:"index"`
	Name        string `json:"name"`
	UUID        string `json:"uuid"`
	PCIBusID    string `json:"pci_bus_id,omitempty"`
	MemoryBytes uint64 `json:"memory_bytes,omitempty"`
}

// SinkRecord is one sink's account in manifest.json.
type SinkRecord struct {
	Name      string `json:"name"`
	Kind      string `json:"kind"`
	Required  bool   `json:"required"`
	Durable   bool   `json:"durable,omitempty"`
	Status    string `json:"status"` // ok, failed (required sink: the run exits 3), warned (optional sink failed)
	Calls     int    `json:"calls"`
	Retries   int    `json:"retries,omitempty"`
	Failures  int    `json:"failures,omitempty"`
	LastError string `json:"last_error,omitempty"`
	// Config is the sink's decoded parameters (what a replay rebuilds it from).
	Config map[string]any `json:"config,omitempty"`
}

// EngineRecord is one measured server: the stage that measured it, the
// engine and its version as the rows carry them.
type EngineRecord struct {
	Stage   string `json:"stage"`
	Engine  string `json:"engine"`
	Version string `json:"version"`
}

// AttemptRecord is one attempt of a run: who made it and how it ended.
type AttemptRecord struct {
	Attempt    int        `json:"attempt"`
	StartedAt  time.Time  `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	// Status: running, ok, failed, interrupted, or crashed (it never
	// finished: a resume or `benchrun report` found it running with no
	// writer holding the run directory).
	Status   string `json:"status"`
	Reason   string `json:"reason,omitempty"`
	ExitCode *int   `json:"exit_code,omitempty"`
	PID      int    `json:"pid,omitempty"`
	Hostname string `json:"hostname,omitempty"`
	Benchrun string `json:"benchrun_version,omitempty"`
}

// Host describes the machine.
type Host struct {
	Hostname string `json:"hostname"`
	OS       string `json:"os"`
	Arch     string `json:"arch"`
	CPUs     int    `json:"cpus"`
}

// ReadManifest reads a run directory's manifest.json. A missing file is
// an error that wraps fs.ErrNotExist (Open tells such a run apart).
func ReadManifest(dir string) (*Manifest, error) {
	path := filepath.Join(dir, ManifestFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the manifest: %w", err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s is not a manifest benchrun can read (%w); its Parquet tables may still read with DuckDB", path, err)
	}
	return &m, nil
}

// WriteManifest writes m as dir's manifest.json, indented, atomically
// (WriteFileAtomic): the one encoding of a manifest, for a run's writer
// and for merge. Masking secrets is the caller's (it knows them).
func WriteManifest(dir string, m *Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the manifest: %w", err)
	}
	return WriteFileAtomic(filepath.Join(dir, ManifestFile), append(b, '\n'))
}

// Finish records how the current attempt, and so the run, ended: status,
// reason and exit code, at the time given, on the run and on its last
// attempt record.
func (m *Manifest) Finish(status, reason string, code int, at time.Time) {
	at = at.UTC()
	m.Status, m.Reason, m.ExitCode, m.FinishedAt = status, reason, &code, &at
	if n := len(m.Attempts); n > 0 {
		a := &m.Attempts[n-1]
		c := code
		a.Status, a.Reason, a.ExitCode, a.FinishedAt = status, reason, &c, &at
	}
}

// AttemptRecords returns the manifest's attempt records. A manifest
// written before they existed has none, so they are rebuilt from
// started_at and resumed_at: the last attempt ends as the manifest says,
// the others' ends were not recorded ("unrecorded").
func (m *Manifest) AttemptRecords() []AttemptRecord {
	if len(m.Attempts) > 0 {
		return slices.Clone(m.Attempts)
	}
	starts := append([]time.Time{m.StartedAt}, m.ResumedAt...)
	out := make([]AttemptRecord, len(starts))
	for i, t := range starts {
		out[i] = AttemptRecord{Attempt: i + 1, StartedAt: t, Status: "unrecorded"}
	}
	last := &out[len(out)-1]
	last.Status, last.ExitCode, last.FinishedAt = m.Status, m.ExitCode, m.FinishedAt
	last.Hostname, last.Benchrun = m.Host.Hostname, m.Benchrun
	return out
}
