//go:build unix

package rundir

import (
	"errors"
	"os"
	"syscall"
)

// probeFlock says whether another open file (another process, or another
// open of the file in this one) holds an exclusive flock on f. It asks
// for a shared lock without waiting, which conflicts with the writer's
// exclusive one only, so readers probing together never see each other,
// and lets go at once.
func probeFlock(f *os.File) (held bool, err error) {
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false, nil
}

// flockWriter takes an exclusive flock on f without waiting; busy when
// another writer holds it.
func flockWriter(f *os.File) (busy bool, err error) {
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
