//go:build cgo && linux

package launch

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"github.com/benchrun/benchrun/internal/telemetry"
)

// TestGPUByNameThroughNVML: go-nvml's mock stands in for the driver of a
// machine with two RTX 3090s around an A6000 (NVML numbers them by PCI
// bus, as nvidia-smi does). Naming the GPUs in the plan must reach the
// server as NVML indices with CUDA_DEVICE_ORDER=PCI_BUS_ID.
func TestGPUByNameThroughNVML(t *testing.T) {
	names := []string{"NVIDIA GeForce RTX 3090", "NVIDIA RTX A6000", "NVIDIA GeForce RTX 3090"}
	devs := make([]nvml.Device, len(names))
	for i, n := range names {
		devs[i] = &mock.Device{
			GetNameFunc:       func() (string, nvml.Return) { return n, nvml.SUCCESS },
			GetUUIDFunc:       func() (string, nvml.Return) { return "", nvml.ERROR_NOT_SUPPORTED },
			GetPciInfoFunc:    func() (nvml.PciInfo, nvml.Return) { return nvml.PciInfo{}, nvml.ERROR_NOT_SUPPORTED },
			GetMemoryInfoFunc: func() (nvml.Memory, nvml.Return) { return nvml.Memory{}, nvml.ERROR_NOT_SUPPORTED },
		}
	}
	lib := &mock.Interface{
		InitFunc:                   func() nvml.Return { return nvml.SUCCESS },
		ShutdownFunc:               func() nvml.Return { return nvml.SUCCESS },
		DeviceGetCountFunc:         func() (int, nvml.Return) { return len(devs), nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) { return devs[i], nvml.SUCCESS },
		ErrorStringFunc:            func(r nvml.Return) string { return r.String() },
	}
	saved := listGPUs
	listGPUs = func() ([]telemetry.GPU, error) { return telemetry.ListGPUsWith(lib) }
	t.Cleanup(func() { listGPUs = saved })

	_, _, dir, err := launch(t, `name: "p"
model: {name: "m"}
stages: server: {kind: "launch", shell: true, gpus: ["a6000", "RTX 3090", "rtx 3090"],
	cmd: ["echo", "cuda=$CUDA_VISIBLE_DEVICES", "order=$CUDA_DEVICE_ORDER", "&&", "sleep 30"]}
`)
	if err != nil {
		t.Fatal(err)
	}
	waitLog(t, filepath.Join(dir, "server.log"), "cuda=1,0,2 order=PCI_BUS_ID")

	// A name the machine lacks fails before anything starts, listing what is there.
	_, _, _, err = launch(t, `name: "p"
model: {name: "m"}
stages: server: {kind: "launch", gpus: ["H100"], cmd: ["sleep", "30"]}
`)
	want := `stages.server.gpus: no free GPU matches "H100" (GPUs on this machine: 0: NVIDIA GeForce RTX 3090; 1: NVIDIA RTX A6000; 2: NVIDIA GeForce RTX 3090)`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
}
