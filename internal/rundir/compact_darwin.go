//go:build darwin

package rundir

import (
	"errors"

	"golang.org/x/sys/unix"
)

// exchangeDirs swaps the directories at a and b in one step: a reader
// listing either name sees one of the two, never both nor neither.
// exchanged is false, with no error, on a file system that cannot.
func exchangeDirs(a, b string) (exchanged bool, err error) {
	err = unix.RenamexNp(a, b, unix.RENAME_SWAP)
	if errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EINVAL) {
		return false, nil
	}
	return err == nil, err
}
