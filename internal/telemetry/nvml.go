//go:build cgo && linux

package telemetry

import (
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// ListGPUs lists this machine's GPUs through NVML.
func ListGPUs() ([]GPU, error) { return ListGPUsWith(nvml.New()) }

// ListGPUsWith lists the GPUs a given NVML implementation reports: the
// real library (ListGPUs, the fingerprint), or go-nvml's mock, which the
// tests of the stages that choose GPUs pass, as there is no GPU on the
// machines they run on.
func ListGPUsWith(lib nvml.Interface) ([]GPU, error) {
	if ret := lib.Init(); ret != nvml.SUCCESS {
		if ret == nvml.ERROR_LIBRARY_NOT_FOUND || ret == nvml.ERROR_DRIVER_NOT_LOADED {
			return nil, ErrNoNVML
		}
		return nil, fmt.Errorf("initialising NVML: %s", nvml.ErrorString(ret))
	}
	defer lib.Shutdown()
	n, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("counting GPUs: %s", lib.ErrorString(ret))
	}
	gpus := make([]GPU, 0, n)
	for i := 0; i < n; i++ {
		d, ret := lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("GPU %d: %s", i, lib.ErrorString(ret))
		}
		g := GPU{Index: i}
		if g.Name, ret = d.GetName(); ret != nvml.SUCCESS {
			return nil, fmt.Errorf("GPU %d name: %s", i, lib.ErrorString(ret))
		}
		// UUID, PCI bus and memory are informative: tolerate their absence.
		if u, r := d.GetUUID(); r == nvml.SUCCESS {
			g.UUID = u
		}
		if p, r := d.GetPciInfo(); r == nvml.SUCCESS {
			g.PCIBusID = cString(p.BusId[:])
		}
		if m, r := d.GetMemoryInfo(); r == nvml.SUCCESS {
			g.MemoryBytes = m.Total
		}
		gpus = append(gpus, g)
	}
	return gpus, nil
}

func cString(b []int8) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return string(out)
}
