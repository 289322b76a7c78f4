//go:build !unix

package rundir

import "os"

// probeFlock cannot look on this system, where writers take no lock
// either (pipeline): nobody is ever found holding a run directory.
func probeFlock(*os.File) (held bool, err error) { return false, nil }

// flockWriter cannot lock on this system: every writer gets the run
// directory (part names still carry the attempt, so they do not collide).
func flockWriter(*os.File) (busy bool, err error) { return false, nil }

const noFollow = 0
