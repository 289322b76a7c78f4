//go:build !linux

package machinetest

import "time"

func machineBusy() (time.Duration, bool) { return 0, false }
func selfCPU() (time.Duration, bool)     { return 0, false }
func procCPU(int) (time.Duration, bool)  { return 0, false }
