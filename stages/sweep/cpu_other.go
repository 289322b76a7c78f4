//go:build !unix

package sweep

import "time"

func processCPU() (time.Duration, bool) { return 0, false }
