package host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benchrun/benchrun/internal/rundir"
)

// A model file's digest is "sha256:<hex>", the same as `sha256sum` and as
// Ollama's blob names, so rows can be matched with a model registry. A
// multi-gigabyte file is hashed once per version (path, size, mtime): this
// process remembers it, and so does a cache on disk for later runs.

// ModelFile is one version of a model file: its absolute path, size and
// modification time. A digest holds for the version it was taken of.
type ModelFile struct {
	Path  string
	Size  int64
	MTime time.Time
}

// Hash is one hash of a model file in progress; callers of the same
// version wait on it.
type Hash struct {
	done chan struct{}
	d    string
	read atomic.Int64 // bytes hashed so far
	size int64
}

// Done is closed when the hash has ended.
func (h *Hash) Done() <-chan struct{} { return h.done }

// Digest is the hash's result once Done is closed ("" when it failed or
// was stopped).
func (h *Hash) Digest() string { return h.d }

// Read is how many bytes have been hashed so far.
func (h *Hash) Read() int64 { return h.read.Load() }

// Size is the file's size.
func (h *Hash) Size() int64 { return h.size }

var (
	digestMu       sync.Mutex
	digestCache    = map[ModelFile]string{}
	digestInflight = map[ModelFile]*Hash{}
	// onDigest, when set (tests), is called as each hash of a file ends.
	onDigest atomic.Pointer[func(path, digest string)]
)

// SetHashHook makes every hash of a model file call f as it ends, before
// its digest is published (a waiter released by the digest sees the hash
// as already ended), until restore is called. For tests.
func SetHashHook(f func(path, digest string)) (restore func()) {
	onDigest.Store(&f)
	return func() { onDigest.Store(nil) }
}

// FindModelFile finds a model file as given and then relative to planDir,
// and names its version; false when it is not a regular file there.
func FindModelFile(file, planDir string) (ModelFile, bool) {
	path := file
	st, err := os.Stat(path)
	if err != nil && !filepath.IsAbs(file) && planDir != "" {
		path = filepath.Join(planDir, file)
		st, err = os.Stat(path)
	}
	if err != nil || !st.Mode().IsRegular() {
		return ModelFile{}, false
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return ModelFile{Path: path, Size: st.Size(), MTime: st.ModTime()}, true
}

// ModelDigest returns the digest of a model file, looked up as given and
// then relative to planDir; "" when the file cannot be read (a model
// served by a remote server, a name rather than a path). It hashes the
// file unless this process or the digest cache on disk knows it already.
func ModelDigest(file, planDir string) string {
	v, ok := FindModelFile(file, planDir)
	if !ok {
		return ""
	}
	return v.Digest(context.Background(), nil)
}

// KnownDigest returns the digest of the model file as it is now when this
// process or the disk cache already knows it, and "" otherwise: it never
// hashes.
func KnownDigest(file, planDir string) string {
	v, ok := FindModelFile(file, planDir)
	if !ok {
		return ""
	}
	digestMu.Lock()
	d, ok := digestCache[v]
	digestMu.Unlock()
	if ok {
		return d
	}
	if d := cachedDigest(v); d != "" {
		digestMu.Lock()
		digestCache[v] = d
		digestMu.Unlock()
		return d
	}
	return ""
}

// Hashing says whether a hash of this version is in progress.
func (v ModelFile) Hashing() bool {
	digestMu.Lock()
	defer digestMu.Unlock()
	_, busy := digestInflight[v]
	return busy
}

// Digest returns the digest of this version: from memory, from the disk
// cache, from a hash already in progress, or by hashing it (one hash per
// version at a time; the others wait). started, when set, is told of a
// hash this call starts. "" when ctx ends first or the file cannot be
// read.
func (v ModelFile) Digest(ctx context.Context, started func(*Hash)) string {
	digestMu.Lock()
	if d, ok := digestCache[v]; ok {
		digestMu.Unlock()
		return d
	}
	if c := digestInflight[v]; c != nil {
		digestMu.Unlock()
		select {
		case <-c.done:
			return c.d
		case <-ctx.Done():
			return ""
		}
	}
	c := &Hash{done: make(chan struct{}), size: v.Size}
	digestInflight[v] = c
	digestMu.Unlock()

	d := cachedDigest(v)
	hashed := false
	if d == "" {
		if started != nil {
			started(c)
		}
		d = hashFile(ctx, v.Path, &c.read)
		hashed = d != ""
	}
	if f := onDigest.Load(); f != nil && hashed {
		// Before the result is published: a waiter released by it must
		// see the hash as already ended (the tests order the two).
		(*f)(v.Path, d)
	}
	digestMu.Lock()
	if d != "" {
		digestCache[v] = d
	}
	delete(digestInflight, v)
	digestMu.Unlock()
	c.d = d
	close(c.done)
	if hashed {
		storeDigest(v, d)
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

func cachedDigest(v ModelFile) string {
	for _, e := range readDigestCache() {
		if e.Path == v.Path && e.Size == v.Size && e.MTime.Equal(v.MTime) && strings.HasPrefix(e.Digest, "sha256:") {
			return e.Digest
		}
	}
	return ""
}

func storeDigest(v ModelFile, d string) {
	p := digestCachePath()
	if p == "" || os.MkdirAll(filepath.Dir(p), 0o755) != nil {
		return
	}
	entries := []digestEntry{{Path: v.Path, Size: v.Size, MTime: v.MTime, Digest: d}}
	for _, e := range readDigestCache() {
		if e.Path != v.Path && len(entries) < 256 {
			entries = append(entries, e)
		}
	}
	if b, err := json.MarshalIndent(entries, "", "  "); err == nil {
		_ = rundir.WriteFileAtomic(p, append(b, '\n'))
	}
}
