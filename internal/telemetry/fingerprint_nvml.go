//go:build cgo && linux

package telemetry

import (
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// NVMLFingerprint reads this machine's GPUs and driver through NVML;
// ErrNoNVML when there is no driver library.
func NVMLFingerprint() (Fingerprint, error) { return GPUFingerprint(nvml.New()) }

// GPUFingerprint reads the GPUs and driver an NVML implementation reports
// (the real library, or go-nvml's mock in tests): ErrNoNVML when the
// library is not found or the driver not loaded.
func GPUFingerprint(lib nvml.Interface) (Fingerprint, error) {
	var f Fingerprint
	if ret := nvCall0(lib.Init); ret != nvml.SUCCESS {
		if ret == nvml.ERROR_LIBRARY_NOT_FOUND || ret == nvml.ERROR_DRIVER_NOT_LOADED {
			return f, ErrNoNVML
		}
		return f, fmt.Errorf("initialising NVML: %w", ret)
	}
	defer nvCall0(lib.Shutdown)
	// ListGPUsWith initialises NVML again: NVML counts its
	// initialisations, so this holds it open across both.
	gpus, err := ListGPUsWith(lib)
	if err != nil {
		return f, fmt.Errorf("listing GPUs: %w", err)
	}
	f.GPUs = gpus
	if v, ret := nvCall(lib.SystemGetDriverVersion); ret == nvml.SUCCESS {
		f.DriverVersion = v
	} else {
		return f, fmt.Errorf("reading the driver version: %w", ret)
	}
	// _v2 is the current name of the call; drivers (and mocks) without it
	// answer the older one with the same number.
	v, ret := nvCall(lib.SystemGetCudaDriverVersion_v2)
	if ret != nvml.SUCCESS {
		v, ret = nvCall(lib.SystemGetCudaDriverVersion)
	}
	if ret == nvml.SUCCESS && v > 0 {
		f.CUDADriverVersion = cudaVersion(v)
	}
	return f, nil
}
