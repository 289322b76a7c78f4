package telemetry

import (
	"fmt"
	"math"
	"strings"
)

// Fingerprint is the GPU side of a machine as NVML reports it, for the
// rows' hardware column and for telling whether two runs ran on the same
// kind of machine.
type Fingerprint struct {
	// GPUs in NVML order (PCI bus order), each with its UUID and bus id.
	GPUs []GPU
	// DriverVersion is the kernel driver's ("550.54.15").
	DriverVersion string
	// CUDADriverVersion is the newest CUDA the driver supports ("12.4"),
	// not the toolkit a server was built with.
	CUDADriverVersion string
}

// String describes the machine in one line, the same for the same
// hardware: "2× NVIDIA A100-SXM4-40GB (40 GiB), driver 550.54.15, CUDA
// 12.4"; mixed GPUs are grouped by model in NVML order
// ("1× NVIDIA H100 80GB HBM3 (80 GiB) + 1× NVIDIA A100 ..."). Memory is
// rounded to whole GiB: a board's usable memory is a little under its
// nominal size.
func (f Fingerprint) String() string {
	type group struct {
		name string
		gib  int64
		n    int
	}
	var groups []*group
	for _, g := range f.GPUs {
		gib := int64(math.Round(float64(g.MemoryBytes) / (1 << 30)))
		var found *group
		for _, x := range groups {
			if x.name == g.Name && x.gib == gib {
				found = x
				break
			}
		}
		if found == nil {
			found = &group{name: g.Name, gib: gib}
			groups = append(groups, found)
		}
		found.n++
	}
	parts := make([]string, 0, len(groups))
	for _, g := range groups {
		s := fmt.Sprintf("%d× %s", g.n, g.name)
		if g.gib > 0 {
			s += fmt.Sprintf(" (%d GiB)", g.gib)
		}
		parts = append(parts, s)
	}
	out := strings.Join(parts, " + ")
	if out == "" {
		out = "no GPU"
	}
	if f.DriverVersion != "" {
		out += ", driver " + f.DriverVersion
	}
	if f.CUDADriverVersion != "" {
		out += ", CUDA " + f.CUDADriverVersion
	}
	return out
}

// cudaVersion spells NVML's CUDA version number (1000×major + 10×minor:
// 12040) as "12.4".
func cudaVersion(v int) string {
	return fmt.Sprintf("%d.%d", v/1000, v%1000/10)
}
