package pipeline

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	hostinfo "github.com/benchrun/benchrun/internal/host"
	"github.com/benchrun/benchrun/internal/redact"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/rundir"
	"github.com/benchrun/benchrun/internal/telemetry"
	"github.com/benchrun/benchrun/schema"
)

// Identity is what every row of a run is stamped with beyond the run id and
// plan: the model's digest and the machine.
type Identity struct {
	ModelDigest     string
	Hostname        string
	Hardware        string
	BenchrunVersion string
}

// RunIdentity returns the identity stamps of a run. It never hashes: the
// model digest is the one already known for the model file as it is now
// (this process hashed it, or the disk cache has it), "" otherwise. A run
// hashes its model file before it measures (modelDigester).
func RunIdentity(ri *RunInfo) Identity {
	if ri != nil && ri.identity != nil {
		return *ri.identity
	}
	h := hostIdentity()
	id := Identity{Hostname: h.hostname, Hardware: h.hardware, BenchrunVersion: Version()}
	if ri != nil && ri.Plan != nil && ri.Plan.Model.File != "" {
		id.ModelDigest = knownDigest(ri.Plan.Model.File, filepath.Dir(ri.Plan.Path))
	}
	return id
}

// digestProgressAfter is how long a hash runs before it says so on the
// progress writer (a time.Duration; tests shorten it).
var digestProgressAfter atomic.Int64

func init() { digestProgressAfter.Store(int64(time.Second)) }

// modelDigester hashes a run's model.file so that the hash never competes
// with a measurement: it starts in the background when the run starts
// (while a server loads, say), and every stage but the first ones that
// start services waits for it (joinDigest) before it runs. Rows carry the
// digest it pinned.
type modelDigester struct {
	file, planDir string
	progress      io.Writer

	mu     sync.Mutex
	key    digestKey
	digest string
	pinned bool
}

// newModelDigester returns nil when the plan names no model file.
func newModelDigester(p *schema.Plan, progress io.Writer) *modelDigester {
	if p == nil || p.Model.File == "" {
		return nil
	}
	return &modelDigester{file: p.Model.File, planDir: filepath.Dir(p.Path), progress: progress}
}

// start begins hashing in the background when the model file is there
// as the run starts; ctx ending stops it. A file that is not there yet (a
// stage downloads it) is hashed when a stage that needs it is about to
// run: a background hash started late would read it half written.
func (m *modelDigester) start(ctx context.Context) {
	if m == nil {
		return
	}
	if _, ok := resolveModelFile(m.file, m.planDir); ok {
		go m.get(ctx, "")
	}
}

// get returns the digest of the model file as it is now, hashing it when
// neither the run, the process nor the disk cache knows this version of
// it, and pins it for the rows. A stage that has to wait (waiter) says so.
func (m *modelDigester) get(ctx context.Context, waiter string) string {
	if m == nil {
		return ""
	}
	key, ok := resolveModelFile(m.file, m.planDir)
	m.mu.Lock()
	if m.pinned && (!ok || m.key == key) {
		d := m.digest
		m.mu.Unlock()
		return d
	}
	m.mu.Unlock()
	if !ok {
		return ""
	}
	digestMu.Lock()
	_, busy := digestInflight[key]
	digestMu.Unlock()
	if busy && waiter != "" {
		fmt.Fprintf(m.progress, "benchrun: %s waits for the model file's digest (nothing is measured while it is hashed)\n", waiter)
	}
	// The hash's last progress line is written before the digest is
	// used: a stage that starts once it has the digest follows the line.
	var reported chan struct{}
	d := digestOf(ctx, key, func(c *digestCall) {
		reported = make(chan struct{})
		go func() {
			defer close(reported)
			m.report(ctx, key.path, c)
		}()
	})
	if reported != nil {
		<-reported
	}
	if d != "" {
		m.mu.Lock()
		m.key, m.digest, m.pinned = key, d, true
		m.mu.Unlock()
	}
	return d
}

// forRows is the digest rows are stamped with: the pinned one, or (for a
// stage that did not wait) the file's, hashed now if need be.
func (m *modelDigester) forRows() string {
	if m == nil {
		return ""
	}
	m.mu.Lock()
	d, pinned := m.digest, m.pinned
	m.mu.Unlock()
	if pinned {
		return d
	}
	return m.get(context.Background(), "")
}

// report shows a hash that takes longer than digestProgressAfter: what is
// hashed, how far it is every ten seconds, and when it is done.
func (m *modelDigester) report(ctx context.Context, path string, c *digestCall) {
	start := time.Now()
	select {
	case <-c.done:
		return
	case <-ctx.Done():
		return
	case <-time.After(time.Duration(digestProgressAfter.Load())):
	}
	fmt.Fprintf(m.progress, "benchrun: hashing the model file %s (%.1f GiB) for model_digest, before anything is measured (cached for later runs)\n",
		redact.URLs(path), float64(c.size)/(1<<30))
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-c.done:
			if c.d != "" {
				fmt.Fprintf(m.progress, "benchrun: model file hashed in %s: %s\n", time.Since(start).Round(100*time.Millisecond), c.d)
			}
			return
		case <-ctx.Done():
			return
		case <-tick.C:
			pct := 100.0
			if c.size > 0 {
				pct = 100 * float64(c.read.Load()) / float64(c.size)
			}
			fmt.Fprintf(m.progress, "benchrun: hashing the model file: %.0f%%\n", pct)
		}
	}
}

// joinDigest waits, before a stage runs, for the model file's digest (and
// records it in the manifest). The stages that start the run (no
// dependency) and do not measure go ahead: starting a server while the
// file is hashed costs no measurement.
func (r *runner) joinDigest(ctx context.Context, n *Node) {
	if r.md == nil || (len(n.Deps) == 0 && !n.Kind.Measuring) {
		return
	}
	d := r.md.get(ctx, n.Spec.Name)
	if d == "" {
		return
	}
	r.emitMu.Lock()
	defer r.emitMu.Unlock()
	if r.manifest != nil && r.manifest.ModelDigest != d {
		r.manifest.ModelDigest = d
		if err := writeManifest(r.ri.Dir, r.manifest); err != nil {
			fmt.Fprintf(r.opts.Progress, "benchrun: %v\n", err)
		}
	}
}

type host struct {
	hostname, hardware string
	gpus               telemetry.Fingerprint
}

// gpuFingerprint reads the GPUs through NVML (tests replace it).
var gpuFingerprint = telemetry.NVMLFingerprint

var hostIdentity = sync.OnceValue(func() host {
	name, _ := os.Hostname()
	fp, _ := gpuFingerprint() // without NVML: the driver's /proc listing
	return host{hostname: name, hardware: hostinfo.Describe(fp), gpus: fp}
})

type digestKey struct {
	path  string // absolute
	size  int64
	mtime time.Time
}

// digestCall is one hash in progress; callers of the same file wait on it.
type digestCall struct {
	done chan struct{}
	d    string
	read atomic.Int64 // bytes hashed so far
	size int64
}

var (
	digestMu       sync.Mutex
	digestCache    = map[digestKey]string{}
	digestInflight = map[digestKey]*digestCall{}
	// onDigest, when set (tests), is called as each hash of a file ends.
	onDigest atomic.Pointer[func(path, digest string)]
)

// resolveModelFile finds a model file as given and then relative to
// planDir, and names its version (absolute path, size, mtime).
func resolveModelFile(file, planDir string) (digestKey, bool) {
	path := file
	st, err := os.Stat(path)
	if err != nil && !filepath.IsAbs(file) && planDir != "" {
		path = filepath.Join(planDir, file)
		st, err = os.Stat(path)
	}
	if err != nil || !st.Mode().IsRegular() {
		return digestKey{}, false
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return digestKey{path: path, size: st.Size(), mtime: st.ModTime()}, true
}

// knownDigest returns the digest of the model file as it is now when this
// process or the disk cache already knows it, and "" otherwise: it never
// hashes.
func knownDigest(file, planDir string) string {
	key, ok := resolveModelFile(file, planDir)
	if !ok {
		return ""
	}
	digestMu.Lock()
	d, ok := digestCache[key]
	digestMu.Unlock()
	if ok {
		return d
	}
	if d := cachedDigest(key); d != "" {
		digestMu.Lock()
		digestCache[key] = d
		digestMu.Unlock()
		return d
	}
	return ""
}

// digestOf returns the digest of the file version key names: from memory,
// from the disk cache, from a hash already in progress, or by hashing it
// (one hash per file version at a time; the others wait). started, when
// set, is told of a hash this call starts. "" when ctx ends first or the
// file cannot be read.
func digestOf(ctx context.Context, key digestKey, started func(*digestCall)) string {
	digestMu.Lock()
	if d, ok := digestCache[key]; ok {
		digestMu.Unlock()
		return d
	}
	if c := digestInflight[key]; c != nil {
		digestMu.Unlock()
		select {
		case <-c.done:
			return c.d
		case <-ctx.Done():
			return ""
		}
	}
	c := &digestCall{done: make(chan struct{}), size: key.size}
	digestInflight[key] = c
	digestMu.Unlock()

	d := cachedDigest(key)
	hashed := false
	if d == "" {
		if started != nil {
			started(c)
		}
		d = hashFile(ctx, key.path, &c.read)
		hashed = d != ""
	}
	if f := onDigest.Load(); f != nil && hashed {
		// Before the result is published: a waiter released by it must
		// see the hash as already ended (the tests order the two).
		(*f)(key.path, d)
	}
	digestMu.Lock()
	if d != "" {
		digestCache[key] = d
	}
	delete(digestInflight, key)
	digestMu.Unlock()
	c.d = d
	close(c.done)
	if hashed {
		storeDigest(key, d)
	}
	return d
}

// hashFile is the sha256 of a file, counting the bytes read into n; ""
// when it cannot be read or ctx ends (checked every few megabytes).
func hashFile(ctx context.Context, path string, n *atomic.Int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha256.New()
	buf := make([]byte, 4<<20)
	for {
		if ctx.Err() != nil {
			return ""
		}
		k, err := f.Read(buf)
		h.Write(buf[:k])
		n.Add(int64(k))
		if err == io.EOF {
			break
		}
		if err != nil {
			return ""
		}
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
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
		_ = rundir.WriteFileAtomic(p, append(b, '\n'))
	}
}

// RunRecord is the run-level record the run outputs (result.json, the
// reports) write: at the end of a run from its summary, or while it runs
// (sum == nil, status "running").
func RunRecord(ri *RunInfo, sum *Summary) results.Run {
	id := RunIdentity(ri)
	started := ri.StartedAt
	if ri.Resumed && ri.prev != nil && !ri.prev.StartedAt.IsZero() {
		started = ri.prev.StartedAt // the run's first start, as the manifest keeps it
	}
	run := results.Run{
		RunID: ri.ID, StartedAt: started.UTC(), Status: StatusRunning, Tags: ri.Tags,
		ModelDigest: id.ModelDigest, Hostname: id.Hostname, Hardware: id.Hardware, BenchrunVersion: id.BenchrunVersion,
	}
	if ri.Plan != nil {
		run.Plan, run.Description, run.Model, run.Metadata = ri.Plan.Name, ri.Plan.Description, ri.Plan.Model.Name, ri.Plan.Metadata
		if mf, ok := InspectModelFile(ri.Plan); ok && mf.Exists {
			run.ModelFile, run.ModelQuant = filepath.Base(mf.Path), mf.Quant
		}
	}
	if sum == nil {
		return redact.Value(run)
	}
	if sum.Status == RunRunning || sum.Status == RunCrashed || sum.Status == "incomplete" {
		// A replay of a run that has not ended: no end time, no exit code.
		run.Status = sum.Status
		for _, s := range sum.Stages {
			run.Stages = append(run.Stages, results.StageOutcome{Name: s.Name, Kind: s.Kind, Status: s.Status, Reason: s.Reason, DurationS: s.DurationS})
		}
		return redact.Value(run)
	}
	now := time.Now().UTC()
	if !sum.FinishedAt.IsZero() {
		now = sum.FinishedAt.UTC()
	}
	code := sum.ExitCode
	run.FinishedAt, run.ExitCode = &now, &code
	switch {
	case sum.Status != "":
		run.Status = sum.Status
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
