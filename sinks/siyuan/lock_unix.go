//go:build unix

package siyuan

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive flock on path (created if missing) and
// returns its release. flock locks belong to the open file, so two posts
// in one process exclude each other as two processes do.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
