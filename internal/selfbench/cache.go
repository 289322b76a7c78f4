package selfbench

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/benchrun/benchrun/internal/host"
	"github.com/benchrun/benchrun/internal/rundir"
)

// The ceilings `benchrun self-bench` measured are kept per machine in the
// user cache directory ($XDG_CACHE_HOME/benchrun/self-bench/, else
// ~/.cache/benchrun/self-bench/ on Linux), one JSON file per machine
// fingerprint (host name, OS and architecture, CPU model, the cores Go
// uses): a plan's dry run reads the one of the machine it runs on, so a
// cache shared over NFS or a home directory copied to another machine
// never answers for the wrong hardware. A machine that has none gets no
// warning; the file says when it was measured, and with what bound.

// Capacity is one machine's self-bench ceilings.
type Capacity struct {
	Fingerprint string    `json:"fingerprint"`
	MeasuredAt  time.Time `json:"measured_at"`
	// SendLagMs is the send-lag p99 bound the ceilings were found under.
	SendLagMs float64 `json:"send_lag_threshold_ms"`
	// MaxStreams is the most concurrent streams, MaxRate the highest
	// non-streamed request rate, sustained under it. *Capped: the search
	// stopped at its own upper bound, so the ceiling is at least that.
	MaxStreams    int     `json:"max_streams"`
	MaxRate       float64 `json:"max_rate_req_s"`
	StreamsCapped bool    `json:"max_streams_is_search_bound,omitempty"`
	RateCapped    bool    `json:"max_rate_is_search_bound,omitempty"`
}

// cachePath is where this fingerprint's ceilings live.
func cachePath(fingerprint string) (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(fingerprint))
	return filepath.Join(dir, "benchrun", "self-bench", hex.EncodeToString(sum[:8])+".json"), nil
}

// Save keeps c where LoadCapacity finds it on the machine of its
// fingerprint, and says where.
func Save(c Capacity) (string, error) {
	path, err := cachePath(c.Fingerprint)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return "", err
	}
	// Written aside and renamed, so a dry run never reads half a file.
	return path, rundir.WriteFileAtomic(path, append(b, '\n'))
}

// LoadCapacity reads this machine's ceilings; ok is false when there are
// none (never measured, or unreadable: the dry run then has nothing to
// say).
func LoadCapacity() (Capacity, string, bool) {
	fp := host.Fingerprint()
	path, err := cachePath(fp)
	if err != nil {
		return Capacity{}, "", false
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return Capacity{}, path, false
	}
	var c Capacity
	if json.Unmarshal(b, &c) != nil || c.Fingerprint != fp {
		return Capacity{}, path, false
	}
	return c, path, true
}

// Step is one planned step's load as the dry run holds it against the
// ceilings: a closed loop's sessions or an open loop's request rate.
type Step struct {
	Label       string
	Concurrency int
	Rate        float64
}

// Warn tells the dry run's reader (on w) which of a stage's planned steps
// ask more of this machine's client than its self-bench (c, kept at path)
// measured it to carry: such a step would measure the client, and its
// rows would come out client-bound. A shard (--shard i/n) sends about 1/n
// of each step.
func (c Capacity) Warn(w io.Writer, path, stage string, steps []Step, shards int) {
	when := c.MeasuredAt.Format("2006-01-02")
	var conc, rate []string
	worstC, worstR := 0, 0.0
	for _, st := range steps {
		if shards > 1 {
			st.Concurrency = (st.Concurrency + shards - 1) / shards
			st.Rate /= float64(shards)
		}
		if st.Concurrency > c.MaxStreams && !c.StreamsCapped {
			conc = append(conc, st.Label)
			worstC = max(worstC, st.Concurrency)
		}
		if st.Rate > c.MaxRate && !c.RateCapped {
			rate = append(rate, st.Label)
			worstR = max(worstR, st.Rate)
		}
	}
	if len(conc) > 0 {
		fmt.Fprintf(w, "benchrun: warning: stage %s: %d steps ask this client for up to %d concurrent requests, more than the %d streams this machine's client sustained with send lag p99 under %g ms (self-bench of %s, %s): they would measure the client, not the server (%s); shard the load over more machines (--shard) or lower it\n",
			stage, len(conc), worstC, c.MaxStreams, c.SendLagMs, when, path, abbreviate(conc, 4))
	}
	if len(rate) > 0 {
		fmt.Fprintf(w, "benchrun: warning: stage %s: %d steps ask this client for up to %g req/s, more than the %g req/s this machine's client sustained with send lag p99 under %g ms (self-bench of %s, %s): they would measure the client, not the server (%s); shard the load over more machines (--shard) or lower it\n",
			stage, len(rate), worstR, c.MaxRate, c.SendLagMs, when, path, abbreviate(rate, 4))
	}
}

// abbreviate joins the first n labels and counts the rest.
func abbreviate(labels []string, n int) string {
	if len(labels) <= n {
		return strings.Join(labels, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(labels[:n], ", "), len(labels)-n)
}
