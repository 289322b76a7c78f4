//go:build !linux

package measure

import "time"

// CPUWait is not measured off Linux.
func CPUWait(int) (time.Duration, bool) { return 0, false }
