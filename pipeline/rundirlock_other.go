//go:build !unix

package pipeline

import "os"

// flockFile cannot lock on this system: every writer gets the run
// directory (part names still carry the attempt, so they do not collide).
func flockFile(*os.File) (busy bool, err error) { return false, nil }

const noFollow = 0
