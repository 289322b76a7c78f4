package pipeline

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/benchrun/benchrun/internal/redact"
	"github.com/benchrun/benchrun/internal/results"
)

// Optional Output capabilities. An Output implements only what it needs;
// the runner checks with a type assertion, so adding a capability never
// breaks an existing Output (the pattern k6's output extensions use).

// VerdictOutput receives each cell's assertion verdict rows, right after
// the cell's Cell call (an empty slice when no assertion applies).
type VerdictOutput interface {
	Verdicts(cell results.Cell, rows []results.Verdict) error
}

// SampleOutput receives telemetry sample rows as they are collected.
type SampleOutput interface {
	Samples(rows []results.Sample) error
}

// Identity is what every row of a run is stamped with beyond the run id and
// plan: the model's digest and the machine.
type Identity struct {
	ModelDigest     string
	Hostname        string
	Hardware        string
	BenchrunVersion string
}

// RunIdentity returns the identity stamps of a run. The model digest is
// computed once per model file (path, size and mtime) per process.
func RunIdentity(ri *RunInfo) Identity {
	h := hostIdentity()
	id := Identity{Hostname: h.hostname, Hardware: h.hardware, BenchrunVersion: Version()}
	if ri != nil && ri.Plan != nil && ri.Plan.Model.File != "" {
		id.ModelDigest = ModelDigest(ri.Plan.Model.File, filepath.Dir(ri.Plan.Path))
	}
	return id
}

type host struct{ hostname, hardware string }

var hostIdentity = sync.OnceValue(func() host {
	name, _ := os.Hostname()
	return host{hostname: name, hardware: describeHardware()}
})

// describeHardware names the machine in one line: "linux/amd64, 16 CPUs
// (AMD EPYC 9654), 125 GiB RAM, 1× NVIDIA H200". It reads only local files
// and never fails; what it cannot learn it leaves out.
func describeHardware() string {
	parts := []string{runtime.GOOS + "/" + runtime.GOARCH}
	cpu := fmt.Sprintf("%d CPUs", runtime.NumCPU())
	if m := firstField("/proc/cpuinfo", "model name"); m != "" {
		cpu += " (" + m + ")"
	}
	parts = append(parts, cpu)
	if kb := firstField("/proc/meminfo", "MemTotal"); kb != "" {
		var n int64
		if _, err := fmt.Sscanf(kb, "%d kB", &n); err == nil && n > 0 {
			parts = append(parts, fmt.Sprintf("%d GiB RAM", (n+512*1024)/(1024*1024)))
		}
	}
	// GPUs as the NVIDIA driver lists them (no NVML needed).
	files, _ := filepath.Glob("/proc/driver/nvidia/gpus/*/information")
	counts := map[string]int{}
	for _, f := range files {
		if m := firstField(f, "Model"); m != "" {
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

// firstField returns the value of the first "key: value" line of a file.
func firstField(path, key string) string {
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

type digestKey struct {
	path  string
	size  int64
	mtime time.Time
}

var (
	digestMu    sync.Mutex
	digestCache = map[digestKey]string{}
)

// ModelDigest returns "sha256:<hex>" of a model file, looked up as given
// and then relative to planDir; "" when the file cannot be read (a model
// served by a remote server, a name rather than a path). The digest is the
// same as `sha256sum` and as Ollama's blob names, so rows can be matched
// with a model registry.
func ModelDigest(file, planDir string) string {
	path := file
	st, err := os.Stat(path)
	if err != nil && !filepath.IsAbs(file) && planDir != "" {
		path = filepath.Join(planDir, file)
		st, err = os.Stat(path)
	}
	if err != nil || !st.Mode().IsRegular() {
		return ""
	}
	key := digestKey{path: path, size: st.Size(), mtime: st.ModTime()}
	digestMu.Lock()
	defer digestMu.Unlock()
	if d, ok := digestCache[key]; ok {
		return d
	}
	if abs, err := filepath.Abs(path); err == nil {
		key.path = abs
	}
	if d := cachedDigest(key); d != "" {
		digestCache[key] = d
		return d
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return ""
	}
	d := "sha256:" + hex.EncodeToString(h.Sum(nil))
	digestCache[key] = d
	storeDigest(key, d)
	return d
}

// The digest cache on disk (<user cache dir>/benchrun/digests.json) spares
// re-reading a multi-gigabyte model file on every run. An entry holds only
// while the file keeps its path, size and modification time; the cache is
// best effort, and any problem with it means hashing again.
type digestEntry struct {
	Path   string    `json:"path"`
	Size   int64     `json:"size"`
	MTime  time.Time `json:"mtime"`
	Digest string    `json:"digest"`
}

func digestCachePath() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "benchrun", "digests.json")
}

func readDigestCache() []digestEntry {
	p := digestCachePath()
	if p == "" {
		return nil
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil
	}
	var entries []digestEntry
	if json.Unmarshal(b, &entries) != nil {
		return nil
	}
	return entries
}

func cachedDigest(k digestKey) string {
	for _, e := range readDigestCache() {
		if e.Path == k.path && e.Size == k.size && e.MTime.Equal(k.mtime) && strings.HasPrefix(e.Digest, "sha256:") {
			return e.Digest
		}
	}
	return ""
}

func storeDigest(k digestKey, d string) {
	p := digestCachePath()
	if p == "" || os.MkdirAll(filepath.Dir(p), 0o755) != nil {
		return
	}
	entries := []digestEntry{{Path: k.path, Size: k.size, MTime: k.mtime, Digest: d}}
	for _, e := range readDigestCache() {
		if e.Path != k.path && len(entries) < 256 {
			entries = append(entries, e)
		}
	}
	if b, err := json.MarshalIndent(entries, "", "  "); err == nil {
		_ = WriteFileAtomic(p, append(b, '\n'))
	}
}

// RunRecord is the run-level record the run outputs (result.json, the
// reports) write: at the end of a run from its summary, or while it runs
// (sum == nil, status "running").
func RunRecord(ri *RunInfo, sum *Summary) results.Run {
	id := RunIdentity(ri)
	run := results.Run{
		RunID: ri.ID, StartedAt: ri.StartedAt.UTC(), Status: StatusRunning, Tags: ri.Tags,
		ModelDigest: id.ModelDigest, Hostname: id.Hostname, Hardware: id.Hardware, BenchrunVersion: id.BenchrunVersion,
	}
	if ri.Plan != nil {
		run.Plan, run.Description, run.Model, run.Metadata = ri.Plan.Name, ri.Plan.Description, ri.Plan.Model.Name, ri.Plan.Metadata
	}
	if sum == nil {
		return redact.Value(run)
	}
	now := time.Now().UTC()
	code := sum.ExitCode
	run.FinishedAt, run.ExitCode = &now, &code
	switch {
	case sum.Interrupted:
		run.Status = "interrupted"
	case sum.ExitCode == ExitOK:
		run.Status = StatusOK
	default:
		run.Status = StatusFailed
	}
	for _, s := range sum.Stages {
		run.Stages = append(run.Stages, results.StageOutcome{Name: s.Name, Kind: s.Kind, Status: s.Status, Reason: s.Reason, DurationS: s.DurationS})
	}
	return redact.Value(run) // tags, metadata and reasons, secrets masked
}
