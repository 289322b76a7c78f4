//go:build linux

package rundir

import (
	"errors"

	"golang.org/x/sys/unix"
)

// exchangeDirs swaps the directories at a and b in one step: a reader
// listing either name sees one of the two, never both nor neither.
// exchanged is false, with no error, on a file system that cannot
// (RENAME_EXCHANGE is refused: NFS, some FUSE).
func exchangeDirs(a, b string) (exchanged bool, err error) {
	err = unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
		return false, nil
	}
	return err == nil, err
}
