//go:build unix

package pipeline

import (
	"errors"
	"os"
	"syscall"
)

// flockFile takes an exclusive lock on f without waiting; busy reports that
// another open file (another process) holds it. The lock goes with the
// open file: closing it, or the process ending however it ends, frees it.
func flockFile(f *os.File) (busy bool, err error) {
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return true, nil
	}
	return false, err
}

// noFollow opens a file without following a symbolic link at its name: a
// run directory's own files are never links (a linked lock would truncate
// whatever it points at).
const noFollow = syscall.O_NOFOLLOW
