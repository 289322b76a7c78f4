// Package telemetry knows the machines and servers benchrun measures: the
// GPUs on this host (through NVML when the driver is there) and each
// serving engine's health, model-list and metrics paths.
package telemetry

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
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

// CUDAEnv is the environment that makes a CUDA program see exactly the
// given GPUs, numbered as NVML and nvidia-smi number them: without
// CUDA_DEVICE_ORDER=PCI_BUS_ID, CUDA orders devices fastest first.
func CUDAEnv(indices []int) []string {
	s := make([]string, len(indices))
	for i, n := range indices {
		s[i] = strconv.Itoa(n)
	}
	return []string{"CUDA_DEVICE_ORDER=PCI_BUS_ID", "CUDA_VISIBLE_DEVICES=" + strings.Join(s, ",")}
}
