//go:build !linux

package loadgen

// physicalMemory is the machine's memory in bytes (0: unknown).
func physicalMemory() uint64 { return 0 }
