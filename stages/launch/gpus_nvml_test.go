//go:build cgo && linux

package launch

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

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

	// These devices report no UUID: the server gets NVML indices, and the
	// stage log says why.
	_, out, dir, err := launch(t, `name: "p"
model: {name: "m"}
stages: server: {kind: "launch", shell: true, gpus: ["a6000", "RTX 3090", "rtx 3090"],
	cmd: ["echo", "cuda=$CUDA_VISIBLE_DEVICES", "order=$CUDA_DEVICE_ORDER", "&&", "sleep 30"]}
`)
	if err != nil {
		t.Fatal(err)
	}
	waitLog(t, filepath.Join(dir, "server.log"), "cuda=1,0,2 order=PCI_BUS_ID")
	waitLog(t, filepath.Join(dir, "server.log"), "given by NVML index, not UUID: NVML reports no UUID for GPU 1 (NVIDIA RTX A6000)")
	if !slices.Equal(out.GPUs, []string{"1", "0", "2"}) {
		t.Fatalf("Outputs.GPUs = %q, want the indices", out.GPUs)
	}

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

// TestGPUsByUUIDThroughNVML: go-nvml's dgxa100 mock (no GPU here) stands
// in for a machine of eight A100s with UUIDs. The server must get the
// selected devices by UUID, in the plan's order, and the launch stage's
// outputs must name the same devices for the sweep's GPU probe.
func TestGPUsByUUIDThroughNVML(t *testing.T) {
	srv := dgxa100.New()
	srv.Devices = srv.Devices[:4]
	uuid := func(i int) string { return srv.Devices[i].(*server.Device).UUID }
	saved := listGPUs
	listGPUs = func() ([]telemetry.GPU, error) { return telemetry.ListGPUsWith(srv) }
	t.Cleanup(func() { listGPUs = saved })

	_, out, dir, err := launch(t, `name: "p"
model: {name: "m"}
stages: server: {kind: "launch", shell: true, gpus: [3, "a100", "1"],
	cmd: ["echo", "cuda=$CUDA_VISIBLE_DEVICES", "order=$CUDA_DEVICE_ORDER", "&&", "sleep 30"]}
`)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{uuid(3), uuid(0), uuid(1)}
	waitLog(t, filepath.Join(dir, "server.log"), "cuda="+strings.Join(want, ",")+" order=PCI_BUS_ID")
	if !slices.Equal(out.GPUs, want) {
		t.Fatalf("Outputs.GPUs = %q, want %q", out.GPUs, want)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "server.log")); strings.Contains(string(b), "not UUID") {
		t.Fatalf("the log says indices were used:\n%s", b)
	}

	// An index the machine does not have fails before anything starts
	// (CUDA would silently drop it).
	_, _, _, err = launch(t, `name: "p"
model: {name: "m"}
stages: server: {kind: "launch", gpus: [7], cmd: ["sleep", "30"]}
`)
	if err == nil || !errors.Is(err, telemetry.ErrNoSuchGPU) || !strings.Contains(err.Error(), "stages.server.gpus: no such GPU: GPU 7 (GPUs on this machine: 0: Mock NVIDIA A100-SXM4-40GB;") {
		t.Fatalf("err = %v", err)
	}
}
