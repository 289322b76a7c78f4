package pipeline

import (
	"strings"
	"testing"

	"github.com/benchrun/benchrun/internal/telemetry"
)

// The hardware fingerprint names the GPUs NVML found, with their memory
// and the driver's and CUDA's versions (the regression key's hardware),
// and the manifest records each by UUID and PCI bus id. NVML itself is
// go-nvml's mock in internal/telemetry's tests; here a fingerprint as it
// returns one.
func TestHardwareFingerprint(t *testing.T) {
	fp := telemetry.Fingerprint{
		GPUs: []telemetry.GPU{
			{Index: 0, Name: "NVIDIA H200", UUID: "GPU-aaaa", PCIBusID: "00000000:18:00.0", MemoryBytes: 141 << 30},
			{Index: 1, Name: "NVIDIA H200", UUID: "GPU-bbbb", PCIBusID: "00000000:2A:00.0", MemoryBytes: 141 << 30},
		},
		DriverVersion: "550.54.15", CUDADriverVersion: "12.4",
	}
	hw := describeHardware(fp)
	if !strings.Contains(hw, "2× NVIDIA H200 (141 GiB), driver 550.54.15, CUDA 12.4") || !strings.Contains(hw, "CPUs") {
		t.Errorf("hardware %q: want the CPUs, then the GPUs with memory, driver and CUDA", hw)
	}
	recs := gpuRecords(fp)
	if len(recs) != 2 || recs[1].UUID != "GPU-bbbb" || recs[1].PCIBusID != "00000000:2A:00.0" || recs[1].MemoryBytes != 141<<30 {
		t.Errorf("manifest records %+v", recs)
	}
	if none := describeHardware(telemetry.Fingerprint{}); strings.Contains(none, "driver") {
		t.Errorf("without NVML: %q names a driver", none)
	}
}
