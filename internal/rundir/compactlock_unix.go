//go:build unix

package rundir

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// writerLock is the run directory's lock, held as a writer holds it.
type writerLock struct{ f *os.File }

// lockAsWriter takes the run directory's lock without waiting, as a
// writer (pipeline) does, and names this process in it; held is the
// other writer's state when one holds it (the lock is then nil). A
// compaction replaces table folders, so no run or resume may write into
// one meanwhile: with the lock taken, a resume is refused with the
// compaction named, as it is for another resume.
func lockAsWriter(dir string) (l *writerLock, held LockState, err error) {
	path := filepath.Join(dir, LockFile)
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		return nil, held, fmt.Errorf("locking run directory %s: %s is not a regular file (a symbolic link?): a run directory's own files are never links; remove it", dir, path)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return nil, held, fmt.Errorf("locking run directory %s: %w", dir, err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if errors.Is(err, syscall.EWOULDBLOCK) {
		held = LockState{Held: true, Holder: ReadLockHolder(f)}
		f.Close()
		return nil, held, nil
	}
	if err != nil {
		f.Close()
		return nil, held, fmt.Errorf("locking run directory %s: %w", dir, err)
	}
	host, _ := os.Hostname()
	b, _ := json.Marshal(LockHolder{PID: os.Getpid(), Hostname: host, StartedAt: time.Now().UTC()})
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt(append(b, '\n'), 0)
		_ = f.Sync()
	}
	return &writerLock{f: f}, held, nil
}

// release lets the lock go, leaving the lock file naming nobody (as a
// writer leaves it).
func (l *writerLock) release() {
	if l == nil || l.f == nil {
		return
	}
	_ = l.f.Truncate(0)
	_ = l.f.Close()
	l.f = nil
}
