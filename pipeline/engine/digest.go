package engine

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benchrun/benchrun/internal/host"
	"github.com/benchrun/benchrun/internal/redact"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
)

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
	key    host.ModelFile
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
	if _, ok := host.FindModelFile(m.file, m.planDir); ok {
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
	key, ok := host.FindModelFile(m.file, m.planDir)
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
	if waiter != "" && key.Hashing() {
		fmt.Fprintf(m.progress, "benchrun: %s waits for the model file's digest (nothing is measured while it is hashed)\n", waiter)
	}
	// The hash's last progress line is written before the digest is
	// used: a stage that starts once it has the digest follows the line.
	var reported chan struct{}
	d := key.Digest(ctx, func(c *host.Hash) {
		reported = make(chan struct{})
		go func() {
			defer close(reported)
			m.report(ctx, key.Path, c)
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
func (m *modelDigester) report(ctx context.Context, path string, c *host.Hash) {
	start := time.Now()
	select {
	case <-c.Done():
		return
	case <-ctx.Done():
		return
	case <-time.After(time.Duration(digestProgressAfter.Load())):
	}
	fmt.Fprintf(m.progress, "benchrun: hashing the model file %s (%.1f GiB) for model_digest, before anything is measured (cached for later runs)\n",
		redact.URLs(path), float64(c.Size())/(1<<30))
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-c.Done():
			if c.Digest() != "" {
				fmt.Fprintf(m.progress, "benchrun: model file hashed in %s: %s\n", time.Since(start).Round(100*time.Millisecond), c.Digest())
			}
			return
		case <-ctx.Done():
			return
		case <-tick.C:
			pct := 100.0
			if c.Size() > 0 {
				pct = 100 * float64(c.Read()) / float64(c.Size())
			}
			fmt.Fprintf(m.progress, "benchrun: hashing the model file: %.0f%%\n", pct)
		}
	}
}

// joinDigest waits, before a stage runs, for the model file's digest (and
// records it in the manifest). The stages that start the run (no
// dependency) and do not measure go ahead: starting a server while the
// file is hashed costs no measurement.
func (r *runner) joinDigest(ctx context.Context, n *pipeline.Node) {
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
