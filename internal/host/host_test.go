package host

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchrun/benchrun/internal/telemetry"
)

// TestDescribe: the hardware line names the CPUs, then the GPUs NVML
// found with their memory and the driver's and CUDA's versions (the
// regression key's hardware); without NVML it names no driver. NVML
// itself is go-nvml's mock in internal/telemetry's tests; here a
// fingerprint as it returns one.
func TestDescribe(t *testing.T) {
	fp := telemetry.Fingerprint{
		GPUs: []telemetry.GPU{
			{Index: 0, Name: "NVIDIA H200", UUID: "GPU-aaaa", PCIBusID: "00000000:18:00.0", MemoryBytes: 141 << 30},
			{Index: 1, Name: "NVIDIA H200", UUID: "GPU-bbbb", PCIBusID: "00000000:2A:00.0", MemoryBytes: 141 << 30},
		},
		DriverVersion: "550.54.15", CUDADriverVersion: "12.4",
	}
	hw := Describe(fp)
	if !strings.Contains(hw, "2× NVIDIA H200 (141 GiB), driver 550.54.15, CUDA 12.4") || !strings.Contains(hw, "CPUs") {
		t.Errorf("hardware %q: want the CPUs, then the GPUs with memory, driver and CUDA", hw)
	}
	if none := Describe(telemetry.Fingerprint{}); strings.Contains(none, "driver") {
		t.Errorf("without NVML: %q names a driver", none)
	}
}

// TestField reads the first "key: value" line, spaces folded.
func TestField(t *testing.T) {
	p := filepath.Join(t.TempDir(), "cpuinfo")
	if err := os.WriteFile(p, []byte("processor\t: 0\nmodel name\t: AMD  EPYC 9654 \nmodel name\t: other\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := field(p, "model name"); got != "AMD EPYC 9654" {
		t.Errorf("field %q", got)
	}
	if got := field(p, "missing"); got != "" {
		t.Errorf("a missing key: %q", got)
	}
	if got := field(filepath.Join(t.TempDir(), "none"), "x"); got != "" {
		t.Errorf("a missing file: %q", got)
	}
}
