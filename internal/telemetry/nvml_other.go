//go:build !(cgo && linux)

package telemetry

// ListGPUs needs NVML, which needs cgo on Linux.
func ListGPUs() ([]GPU, error) { return nil, ErrNoNVML }
