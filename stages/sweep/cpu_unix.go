//go:build unix

package sweep

import (
	"syscall"
	"time"
)

// processCPU is the CPU time benchrun itself has used (user + system, all
// threads), for the client's own share of a cell.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
