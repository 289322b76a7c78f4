package rundir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// LockFile is the run directory's lock file. A writer (a run, a resume)
// holds an exclusive flock on it for as long as it writes, and records
// itself in it (pid, host, start); the kernel frees the lock when the
// writer's process ends, however it ends, so a free lock with a manifest
// that says "running" means that writer crashed. Taking the lock is the
// writer's business (pipeline, and Compact here); readers only look.
const LockFile = ".benchrun.lock"

// LockHolder is what the lock file says about the writer holding it.
type LockHolder struct {
	PID       int       `json:"pid"`
	Hostname  string    `json:"hostname"`
	StartedAt time.Time `json:"started_at"`
	Attempt   int       `json:"attempt,omitempty"`
}

func (h *LockHolder) String() string {
	if h == nil {
		return "a writer that has not named itself yet"
	}
	s := fmt.Sprintf("pid %d on %s", h.PID, h.Hostname)
	if h.Attempt > 0 {
		s += fmt.Sprintf(", attempt %d", h.Attempt)
	}
	if !h.StartedAt.IsZero() {
		s += ", since " + h.StartedAt.UTC().Format(time.RFC3339)
	}
	return s
}

// ReadLockHolder reads who the lock file says holds it; nil when it names
// nobody (a writer truncates it when it lets go, and a new one may not
// have written itself yet).
func ReadLockHolder(r io.ReaderAt) *LockHolder {
	b := make([]byte, 4096)
	n, _ := r.ReadAt(b, 0)
	var h LockHolder
	if n == 0 || json.Unmarshal(b[:n], &h) != nil || h.PID == 0 {
		return nil
	}
	return &h
}

// LockState is what ProbeLock found.
type LockState struct {
	// Held is set while a writer holds the run directory.
	Held bool
	// Holder names the writer holding it (nil when none does, or it has
	// not named itself yet).
	Holder *LockHolder
}

// ProbeLock says whether a writer holds the run directory's lock now,
// without taking it for more than an instant and without creating or
// writing anything: a reader may look at a run on a read-only copy, and
// must not stand in a writer's way. A directory with no lock file has no
// writer (runs written before the lock existed, copies without it).
func ProbeLock(dir string) (LockState, error) {
	f, err := os.Open(filepath.Join(dir, LockFile))
	if errors.Is(err, fs.ErrNotExist) {
		return LockState{}, nil
	}
	if err != nil {
		return LockState{}, fmt.Errorf("looking at the lock of run directory %s: %w", dir, err)
	}
	defer f.Close()
	held, err := probeFlock(f)
	if err != nil {
		return LockState{}, fmt.Errorf("looking at the lock of run directory %s: %w (a file system without flock cannot tell a live run from a crashed one)", dir, err)
	}
	if !held {
		return LockState{}, nil
	}
	return LockState{Held: true, Holder: ReadLockHolder(f)}, nil
}
