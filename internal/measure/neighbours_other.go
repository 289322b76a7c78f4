//go:build !linux

package measure

import "time"

func machineBusy() (time.Duration, bool) { return 0, false }
func selfCPU() (time.Duration, bool)     { return 0, false }
func procCPU(int) (time.Duration, bool)  { return 0, false }

// CPUWait is not measured off Linux.
func CPUWait(int) (time.Duration, bool) { return 0, false }
