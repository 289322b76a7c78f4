//go:build cgo && linux

package telemetry

import (
	"errors"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
)

// There is no GPU on the machines these tests run on: go-nvml's mock
// package stands in for the driver library.
func mockNVML(names []string, initRet nvml.Return) *mock.Interface {
	devs := make([]nvml.Device, len(names))
	for i, n := range names {
		n, i := n, i
		devs[i] = &mock.Device{
			GetNameFunc: func() (string, nvml.Return) { return n, nvml.SUCCESS },
			GetUUIDFunc: func() (string, nvml.Return) { return "GPU-" + string(rune('a'+i)), nvml.SUCCESS },
			GetPciInfoFunc: func() (nvml.PciInfo, nvml.Return) {
				var p nvml.PciInfo
				for j, c := range "00000000:0" + string(rune('1'+i)) + ":00.0" {
					p.BusId[j] = int8(c)
				}
				return p, nvml.SUCCESS
			},
			GetMemoryInfoFunc: func() (nvml.Memory, nvml.Return) { return nvml.Memory{Total: 24 << 30}, nvml.SUCCESS },
		}
	}
	return &mock.Interface{
		InitFunc:                   func() nvml.Return { return initRet },
		ShutdownFunc:               func() nvml.Return { return nvml.SUCCESS },
		DeviceGetCountFunc:         func() (int, nvml.Return) { return len(devs), nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) { return devs[i], nvml.SUCCESS },
		ErrorStringFunc:            func(r nvml.Return) string { return "error " + r.String() },
	}
}

func TestListGPUsThroughNVML(t *testing.T) {
	lib := mockNVML([]string{"NVIDIA GeForce RTX 3090", "NVIDIA H100 80GB HBM3"}, nvml.SUCCESS)
	gpus, err := ListGPUsWith(lib)
	if err != nil {
		t.Fatal(err)
	}
	if len(gpus) != 2 || gpus[1].Name != "NVIDIA H100 80GB HBM3" || gpus[1].Index != 1 {
		t.Fatalf("gpus = %+v", gpus)
	}
	if gpus[0].PCIBusID != "00000000:01:00.0" || gpus[0].UUID != "GPU-a" || gpus[0].MemoryBytes != 24<<30 {
		t.Fatalf("details = %+v", gpus[0])
	}
	if len(lib.ShutdownCalls()) != 1 {
		t.Fatal("NVML must be shut down after listing")
	}
	idx, err := ResolveGPUs([]string{"H100"}, func() ([]GPU, error) { return ListGPUsWith(lib) })
	if err != nil || len(idx) != 1 || idx[0] != 1 {
		t.Fatalf("resolve H100 = %v, %v", idx, err)
	}
}

func TestListGPUsWithoutDriver(t *testing.T) {
	_, err := ListGPUsWith(mockNVML(nil, nvml.ERROR_LIBRARY_NOT_FOUND))
	if !errors.Is(err, ErrNoNVML) {
		t.Fatalf("err = %v, want ErrNoNVML", err)
	}
	_, err = ListGPUsWith(mockNVML(nil, nvml.ERROR_NO_PERMISSION))
	if err == nil || !strings.Contains(err.Error(), "initialising NVML") {
		t.Fatalf("err = %v", err)
	}
}

func TestListGPUsOnThisMachine(t *testing.T) {
	// The real library: on a machine without the driver this must say so,
	// not crash.
	gpus, err := ListGPUs()
	if err != nil && !errors.Is(err, ErrNoNVML) {
		t.Logf("NVML present but failed: %v", err)
	}
	t.Logf("GPUs here: %+v (err %v)", gpus, err)
}
