package engine

import (
	"testing"

	"github.com/benchrun/benchrun/internal/telemetry"
)

// The manifest records each GPU NVML found by UUID and PCI bus id (the
// hardware line naming them: internal/host's TestDescribe). NVML itself is
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
	recs := gpuRecords(fp)
	if len(recs) != 2 || recs[1].UUID != "GPU-bbbb" || recs[1].PCIBusID != "00000000:2A:00.0" || recs[1].MemoryBytes != 141<<30 {
		t.Errorf("manifest records %+v", recs)
	}
}
