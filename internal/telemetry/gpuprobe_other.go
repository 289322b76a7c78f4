//go:build !(cgo && linux)

package telemetry

import "time"

// NewNVMLProbe needs NVML, which needs cgo on Linux.
func NewNVMLProbe(devices []string, interval time.Duration) (Probe, error) { return nil, ErrNoNVML }
