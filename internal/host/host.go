// Package host names the machine benchrun runs on and the model file it
// serves: one home for what a run's manifest and rows call its host and
// hardware, what self-bench keys its measured ceilings by (each read
// /proc/cpuinfo its own way before), and the model file's digest.
package host

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/benchrun/benchrun/internal/telemetry"
)

// Identity is the machine as a run names it: its host name, its
// hardware line (Describe) and the GPUs NVML found.
type Identity struct {
	Hostname, Hardware string
	GPUs               telemetry.Fingerprint
}

// This is the machine's identity, read once per process.
var This = sync.OnceValue(func() Identity {
	name, _ := os.Hostname()
	fp, _ := telemetry.NVMLFingerprint() // without NVML: the driver's /proc listing
	return Identity{Hostname: name, Hardware: Describe(fp), GPUs: fp}
})

// Fingerprint names this machine as far as the client's own ceiling
// depends on it (host name, OS and architecture, CPU model, the cores Go
// uses): the key self-bench keeps its measured ceilings by.
func Fingerprint() string {
	name, _ := os.Hostname()
	return fmt.Sprintf("host=%s os=%s/%s cpu=%q cores=%d", name, runtime.GOOS, runtime.GOARCH, CPUModel(), runtime.GOMAXPROCS(0))
}

// Describe names the machine in one line: "linux/amd64, 16 CPUs (AMD
// EPYC 9654), 125 GiB RAM, 1× NVIDIA H200 (141 GiB), driver 550.54.15,
// CUDA 12.4". The GPUs come from NVML's fingerprint fp when it has any,
// else from the driver's /proc listing (names only). It never fails; what
// it cannot learn it leaves out.
func Describe(fp telemetry.Fingerprint) string {
	parts := []string{runtime.GOOS + "/" + runtime.GOARCH}
	cpu := fmt.Sprintf("%d CPUs", runtime.NumCPU())
	if m := CPUModel(); m != "" {
		cpu += " (" + m + ")"
	}
	parts = append(parts, cpu)
	if kb := field("/proc/meminfo", "MemTotal"); kb != "" {
		var n int64
		if _, err := fmt.Sscanf(kb, "%d kB", &n); err == nil && n > 0 {
			parts = append(parts, fmt.Sprintf("%d GiB RAM", (n+512*1024)/(1024*1024)))
		}
	}
	if len(fp.GPUs) > 0 {
		return strings.Join(append(parts, fp.String()), ", ")
	}
	// GPUs as the NVIDIA driver lists them (no NVML needed).
	files, _ := filepath.Glob("/proc/driver/nvidia/gpus/*/information")
	counts := map[string]int{}
	for _, f := range files {
		if m := field(f, "Model"); m != "" {
			counts[m]++
		}
	}
	var gpus []string
	for m, n := range counts {
		gpus = append(gpus, fmt.Sprintf("%d× %s", n, m))
	}
	sort.Strings(gpus)
	parts = append(parts, gpus...)
	return strings.Join(parts, ", ")
}

// CPUModel is /proc/cpuinfo's first "model name" ("" where there is none).
func CPUModel() string { return field("/proc/cpuinfo", "model name") }

// field returns the value of the first "key: value" line of a file, its
// spaces folded.
func field(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.Join(strings.Fields(v), " ")
		}
	}
	return ""
}
