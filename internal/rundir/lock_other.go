//go:build !unix

package rundir

import "os"

// probeFlock cannot look on this system, where writers take no lock
// either (pipeline): nobody is ever found holding a run directory.
func probeFlock(*os.File) (held bool, err error) { return false, nil }
