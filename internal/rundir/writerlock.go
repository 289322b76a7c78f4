package rundir

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// WriterLock is a run directory's lock as its one writer holds it: a run,
// a resume, a compaction (one lock for all of them, so a resume is
// refused beside a compaction as beside another resume).
type WriterLock struct{ f *os.File }

// LockWriter takes dir's lock without waiting and names holder in it.
// When another writer holds it, the lock is nil and held names that
// writer.
func LockWriter(dir string, holder LockHolder) (l *WriterLock, held LockState, err error) {
	path := filepath.Join(dir, LockFile)
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		return nil, held, fmt.Errorf("locking run directory %s: %s is not a regular file (a symbolic link?): a run directory's own files are never links; remove it", dir, path)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|noFollow, 0o644)
	if err != nil {
		return nil, held, fmt.Errorf("locking run directory %s: %w", dir, err)
	}
	busy, err := flockWriter(f)
	if err != nil {
		f.Close()
		return nil, held, fmt.Errorf("locking run directory %s: %w", dir, err)
	}
	if busy {
		held = LockState{Held: true, Holder: ReadLockHolder(f)}
		f.Close()
		return nil, held, nil
	}
	l = &WriterLock{f: f}
	l.Name(holder)
	return l, held, nil
}

// Name writes holder into the lock file (a resume says which attempt
// holds the directory now).
func (l *WriterLock) Name(holder LockHolder) {
	if l == nil || l.f == nil {
		return
	}
	b, _ := json.Marshal(holder)
	if err := l.f.Truncate(0); err == nil {
		_, _ = l.f.WriteAt(append(b, '\n'), 0)
		_ = l.f.Sync()
	}
}

// Release lets the lock go, leaving the lock file naming nobody.
func (l *WriterLock) Release() {
	if l == nil || l.f == nil {
		return
	}
	_ = l.f.Truncate(0)
	_ = l.f.Close()
	l.f = nil
}
