package rundir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/benchrun/benchrun/internal/redact"
)

// BusyError says that another writer holds a run directory.
type BusyError struct {
	Dir    string
	Holder *LockHolder // nil when the lock file names nobody (yet)
}

func (e *BusyError) Error() string {
	who := "another benchrun"
	if e.Holder != nil {
		who += " (" + e.Holder.String() + ")"
	}
	return fmt.Sprintf("run directory %s is in use by %s: a run directory has one writer at a time; wait for it to end (or stop it), then resume", e.Dir, who)
}

// Lock takes dir's writer lock without waiting (LockWriter) and names
// holder in it, or returns a *BusyError naming the writer that holds it.
func Lock(dir string, holder LockHolder) (*WriterLock, error) {
	l, held, err := LockWriter(dir, holder)
	if err != nil {
		return nil, err
	}
	if l == nil {
		return nil, &BusyError{Dir: dir, Holder: held.Holder}
	}
	return l, nil
}

// Inspection is what Inspect found.
type Inspection struct {
	// Live is set while a writer holds the run directory; Holder names it.
	Live   bool
	Holder *LockHolder
	// Removed lists the temporary files a killed writer left, removed.
	Removed []string
}

// Inspect looks at a run directory for a reader (`benchrun report`):
// whether a writer holds it now and, when none does, removes the
// temporary files a killed writer left (`.part-00003.parquet.tmp-123`,
// `.manifest.json.tmp-456`). With no writer, a manifest that says
// "running" means its run crashed.
func Inspect(dir string) (Inspection, error) {
	var st Inspection
	if fi, err := os.Lstat(filepath.Join(dir, LockFile)); err == nil && !fi.Mode().IsRegular() {
		return st, fmt.Errorf("%s is not a regular file (a symbolic link?): a run directory's own files are never links; remove it", filepath.Join(dir, LockFile))
	}
	// Look first: a reader that finds a writer must not take the lock,
	// even for an instant, nor create a lock file in a copy of a run.
	probe, err := ProbeLock(dir)
	if err == nil && probe.Held {
		st.Live, st.Holder = true, probe.Holder
		return st, nil
	}
	// Nobody holds it: take it, so that no writer starts while the
	// temporary files go.
	hostname, _ := os.Hostname()
	lock, err := Lock(dir, LockHolder{PID: os.Getpid(), Hostname: hostname, StartedAt: time.Now().UTC()})
	var busy *BusyError
	switch {
	case errors.As(err, &busy):
		st.Live, st.Holder = true, busy.Holder
		return st, nil
	case err != nil:
		// A read-only copy of a run: nobody writes it, nothing to remove.
		return st, nil
	}
	defer lock.Release()
	st.Removed = RemoveTemporaries(dir)
	return st, nil
}

// tempRE matches the temporary names WriteFileAtomic and the Parquet
// output write before their rename: ".<name>.tmp-<digits>".
var tempRE = regexp.MustCompile(`^\..+\.tmp-[0-9]+$`)

// RemoveTemporaries removes the temporary files of interrupted atomic
// writes under dir (the caller holds the run directory) and returns their
// paths relative to dir.
func RemoveTemporaries(dir string) []string {
	var removed []string
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if rel, _ := filepath.Rel(dir, path); strings.Count(rel, string(filepath.Separator)) >= 2 {
				return filepath.SkipDir // tables and charts are one level down
			}
			return nil
		}
		if d.Type().IsRegular() && tempRE.MatchString(d.Name()) && os.Remove(path) == nil {
			rel, _ := filepath.Rel(dir, path)
			removed = append(removed, rel)
		}
		return nil
	})
	return removed
}

// MarkCrashed records in dir's manifest that its current attempt crashed
// with reason: what a supervisor says of a worker killed outright (the
// worker could not). A manifest that no longer says running (the worker
// finished it) is left as it is. Like every manifest a run writes, it is
// written with URL passwords and registered secrets masked.
func MarkCrashed(dir, reason string, code int, at time.Time) error {
	m, err := ReadManifest(dir)
	if err != nil {
		return err
	}
	if m.Status != RunRunning {
		return nil
	}
	m.Finish(RunCrashed, reason, code, at)
	masked := redact.Value(*m)
	return WriteManifest(dir, &masked)
}
