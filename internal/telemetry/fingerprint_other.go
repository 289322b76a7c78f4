//go:build !(cgo && linux)

package telemetry

// NVMLFingerprint needs NVML, which needs cgo on Linux.
func NVMLFingerprint() (Fingerprint, error) { return Fingerprint{}, ErrNoNVML }
