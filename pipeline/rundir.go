package pipeline

import (
	"time"

	"github.com/benchrun/benchrun/internal/rundir"
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
	// Attempt numbers this attempt of the run: 1 for the first, one more
	// for each --resume. Every row it writes carries it (the attempt
	// column), and part files are named with it.
	Attempt int

	// FirstStartedAt is a resumed run's first start, as its manifest
	// keeps it (zero: StartedAt).
	FirstStartedAt time.Time

	// Identity, when set, is the identity rows were stamped with (a
	// replay's, from the manifest), instead of this machine's.
	Identity *Identity

	// State is the run engine's own record of the run (its lock on the
	// directory, what a resume found); kinds and sinks never read it.
	State any
}

// Close frees the run directory for another writer. Run calls it when it
// returns; it is safe to call more than once, and on a nil RunInfo.
func (ri *RunInfo) Close() {
	if ri == nil {
		return
	}
	if c, ok := ri.State.(interface{ Close() }); ok {
		c.Close()
	}
}

// manifest.json is rundir.Manifest, with its records: internal/rundir
// owns the run directory both ways; these names keep pipeline's callers
// as they were.
const (
	RunRunning     = rundir.RunRunning
	RunOK          = rundir.RunOK
	RunFailed      = rundir.RunFailed
	RunInterrupted = rundir.RunInterrupted
	RunCrashed     = rundir.RunCrashed
)

type (
	// AttemptRecord is one attempt of a run: who made it and how it ended.
	AttemptRecord = rundir.AttemptRecord
	// EngineRecord is one measured server, as the manifest records it.
	EngineRecord = rundir.EngineRecord
	// Host describes the machine.
	Host = rundir.Host
	// SinkRecord is one sink's account in manifest.json.
	SinkRecord = rundir.SinkRecord
	// LockHolder is what the lock file says about the writer holding it.
	LockHolder = rundir.LockHolder
)

// Version is benchrun's version, from the build info (rundir.Version).
func Version() string { return rundir.Version() }
