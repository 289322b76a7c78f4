package pipeline

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/benchrun/benchrun/schema"
)

// RunInfo identifies one run and its directory.
type RunInfo struct {
	ID        string
	Plan      *schema.Plan
	Dir       string
	StartedAt time.Time
	Tags      []string
	// Resumed is set when the run continues an earlier one (--resume).
	Resumed bool

	// doneCells are the cells the resumed run already finished (Env.CellDone).
	doneCells map[string]bool
}

// NewRunInfo names a run and creates its directory:
// <root>/plan=<name>/date=<YYYY-MM-DD>/run=<id>/ (hive-style, so DuckDB's
// hive_partitioning reads plan, date and run as columns).
func NewRunInfo(root string, p *schema.Plan, tags []string, now time.Time) (*RunInfo, error) {
	var b [3]byte
	_, _ = rand.Read(b[:])
	id := now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
	dir := filepath.Join(root, "plan="+p.Name, "date="+now.UTC().Format("2006-01-02"), "run="+id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating run directory: %w", err)
	}
	ri := &RunInfo{ID: id, Plan: p, Dir: dir, StartedAt: now, Tags: tags}
	if err := WriteFileAtomic(filepath.Join(dir, "plan.cue"), p.Source); err != nil {
		return nil, err
	}
	resolved, err := p.JSON()
	if err != nil {
		return nil, err
	}
	if err := WriteFileAtomic(filepath.Join(dir, "plan.json"), resolved); err != nil {
		return nil, err
	}
	return ri, nil
}

// Manifest is manifest.json: what ran, where, with what, and how it ended.
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
	// Hardware describes the machine in one line (CPUs, memory, GPUs).
	Hardware string        `json:"hardware,omitempty"`
	Status   string        `json:"status"` // running, ok, failed, interrupted
	ExitCode *int          `json:"exit_code,omitempty"`
	Stages   []StageResult `json:"stages,omitempty"`
	Verdicts []Verdict     `json:"failed_assertions,omitempty"`
	// ResumedAt lists when the run was continued with --resume.
	ResumedAt []time.Time `json:"resumed_at,omitempty"`
}

// Host describes the machine.
type Host struct {
	Hostname string `json:"hostname"`
	OS       string `json:"os"`
	Arch     string `json:"arch"`
	CPUs     int    `json:"cpus"`
}

// Version is benchrun's version, from the build info.
func Version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

func newManifest(ri *RunInfo) *Manifest {
	if ri.Resumed {
		// Keep what the first attempt recorded; note the resumption.
		if b, err := os.ReadFile(filepath.Join(ri.Dir, "manifest.json")); err == nil {
			var m Manifest
			if json.Unmarshal(b, &m) == nil {
				m.Status, m.ExitCode, m.FinishedAt = "running", nil, nil
				m.Tags, m.Metadata = ri.Tags, ri.Plan.Metadata
				m.ResumedAt = append(m.ResumedAt, ri.StartedAt.UTC())
				return &m
			}
		}
	}
	id := RunIdentity(ri)
	return &Manifest{
		RunID: ri.ID, Plan: ri.Plan.Name, PlanFile: ri.Plan.Path, Tags: ri.Tags,
		Metadata: ri.Plan.Metadata, StartedAt: ri.StartedAt.UTC(),
		Benchrun: id.BenchrunVersion, GoVersion: runtime.Version(),
		Host:        Host{Hostname: id.Hostname, OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU()},
		ModelDigest: id.ModelDigest, Hardware: id.Hardware,
		Status: "running",
	}
}

func (m *Manifest) write(dir string) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return WriteFileAtomic(filepath.Join(dir, "manifest.json"), append(b, '\n'))
}

// WriteFileAtomic writes data to a temporary file beside path and renames
// it into place, so a reader (or a crash) never sees a partial file.
func WriteFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("writing %s: %w", path, err)
	}
	// CreateTemp makes 0600 files; results are for reading by others too.
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
