package loadgen

import "golang.org/x/sys/unix"

// physicalMemory is the machine's memory in bytes (0: unknown).
func physicalMemory() uint64 {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return 0
	}
	return uint64(si.Totalram) * uint64(si.Unit)
}
