//go:build !linux

package telemetry

import (
	"errors"
	"time"
)

// NewProcProbe needs /proc/PID/stat and statm as Linux lays them out;
// other systems' /proc (if any) differ, so the server's process tree is not
// measured there and the columns stay NULL.
func NewProcProbe(pid int, interval time.Duration) (Probe, error) {
	return nil, errors.New("proc probe: reading a process tree from /proc is Linux-only")
}
