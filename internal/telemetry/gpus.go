// Package telemetry knows the machines and servers benchrun measures: the
// GPUs on this host (through NVML when the driver is there) and each
// serving engine's health, model-list and metrics paths.
package telemetry

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
)

// GPU is one device as NVML numbers it (by PCI bus ID, like nvidia-smi).
type GPU struct {
	Index       int
	Name        string
	UUID        string
	PCIBusID    string
	MemoryBytes uint64
}

// ErrNoNVML means the NVIDIA driver's library is not on this machine (or
// benchrun was built without cgo), so GPUs can be chosen only by index.
var ErrNoNVML = errors.New("NVML is not available (no NVIDIA driver library, or benchrun built without cgo)")

// ResolveGPUs turns a plan's GPU selection into NVML indices. An entry is
// an index ("0", 1) or a name matched case-insensitively as a substring
// of the device name ("RTX 3090" matches "NVIDIA GeForce RTX 3090"); each
// name takes the first matching GPU not already taken, so
// ["RTX 3090", "RTX 3090"] picks two of them. list is called only when a
// name needs it, so index-only selections work without NVML.
func ResolveGPUs(sel []string, list func() ([]GPU, error)) ([]int, error) {
	var out []int
	taken := map[int]bool{}
	var gpus []GPU
	listed := false
	for _, s := range sel {
		s = strings.TrimSpace(s)
		if s == "" {
			return nil, errors.New("empty GPU selector")
		}
		if n, err := strconv.Atoi(s); err == nil {
			if n < 0 {
				return nil, fmt.Errorf("GPU index %d is negative", n)
			}
			if taken[n] {
				return nil, fmt.Errorf("GPU %d selected twice", n)
			}
			taken[n] = true
			out = append(out, n)
			continue
		}
		if !listed {
			var err error
			gpus, err = list()
			if err != nil {
				return nil, fmt.Errorf("choosing GPU %q by name: %w; select GPUs by index instead", s, err)
			}
			listed = true
		}
		found := -1
		for _, g := range gpus {
			if !taken[g.Index] && strings.Contains(strings.ToLower(g.Name), strings.ToLower(s)) {
				found = g.Index
				break
			}
		}
		if found < 0 {
			var names []string
			for _, g := range gpus {
				names = append(names, fmt.Sprintf("%d: %s", g.Index, g.Name))
			}
			if len(names) == 0 {
				names = []string{"none"}
			}
			return nil, fmt.Errorf("no free GPU matches %q (GPUs on this machine: %s)", s, strings.Join(names, "; "))
		}
		taken[found] = true
		out = append(out, found)
	}
	return out, nil
}

// CUDADevicesEnv is the environment that makes a CUDA program see exactly
// the given devices, by UUID ("GPU-…") or, failing that, NVML index:
// CUDA_VISIBLE_DEVICES takes either, and a UUID is the same device to
// nvidia-smi, CUDA and benchrun whatever the enumeration order.
// CUDA_DEVICE_ORDER=PCI_BUS_ID still matters with UUIDs: it makes the
// server's "cuda:0" the first of them in PCI bus order, as nvidia-smi
// lists them.
func CUDADevicesEnv(devices []string) []string {
	return []string{"CUDA_DEVICE_ORDER=PCI_BUS_ID", "CUDA_VISIBLE_DEVICES=" + strings.Join(devices, ",")}
}

// ErrNoSuchGPU means a selected NVML index is not a device of this
// machine (NVML listed the machine, and it has fewer).
var ErrNoSuchGPU = errors.New("no such GPU")

// GPUUUIDs names the GPUs at the given NVML indices by UUID, in the given
// order, from list (NVML's). An error means they cannot be named so
// (ErrNoNVML, an NVML failure, a device without a UUID), and the caller
// falls back to indices; except ErrNoSuchGPU, an index the machine does
// not have, which CUDA would silently drop.
func GPUUUIDs(indices []int, list func() ([]GPU, error)) ([]string, error) {
	gpus, err := list()
	if err != nil {
		return nil, err
	}
	byIndex := make(map[int]GPU, len(gpus))
	for _, g := range gpus {
		byIndex[g.Index] = g
	}
	out := make([]string, len(indices))
	for i, n := range indices {
		g, ok := byIndex[n]
		if !ok {
			return nil, fmt.Errorf("%w: GPU %d (GPUs on this machine: %s)", ErrNoSuchGPU, n, describeGPUs(gpus))
		}
		if g.UUID == "" {
			return nil, fmt.Errorf("NVML reports no UUID for GPU %d (%s)", n, g.Name)
		}
		out[i] = g.UUID
	}
	return out, nil
}

func describeGPUs(gpus []GPU) string {
	var names []string
	for _, g := range gpus {
		names = append(names, fmt.Sprintf("%d: %s", g.Index, g.Name))
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, "; ")
}

// ChooseDevices resolves a stage's GPU selection (ResolveGPUs) to the
// devices to hand a process: by UUID when NVML names them (what
// CUDADevicesEnv puts in CUDA_VISIBLE_DEVICES), else by NVML index, which
// it says in log (CUDA numbers devices the same way only with
// CUDA_DEVICE_ORDER=PCI_BUS_ID). NVML is listed once, for the names and
// the UUIDs; an index the machine does not have is ErrNoSuchGPU. launch
// and exec choose GPUs with it.
func ChooseDevices(sel []string, list func() ([]GPU, error), log io.Writer) ([]string, error) {
	var once sync.Once
	var gpus []GPU
	var listErr error
	listOnce := func() ([]GPU, error) {
		once.Do(func() { gpus, listErr = list() })
		return gpus, listErr
	}
	idx, err := ResolveGPUs(sel, listOnce)
	if err != nil {
		return nil, err
	}
	devices, err := GPUUUIDs(idx, listOnce)
	switch {
	case errors.Is(err, ErrNoSuchGPU):
		return nil, err
	case err != nil:
		devices = make([]string, len(idx))
		for i, n := range idx {
			devices[i] = strconv.Itoa(n)
		}
		fmt.Fprintf(log, "benchrun: GPUs %v given by NVML index, not UUID: %v\n", sel, err)
	}
	fmt.Fprintf(log, "benchrun: GPUs %v -> %s\n", sel, strings.Join(CUDADevicesEnv(devices), " "))
	return devices, nil
}
