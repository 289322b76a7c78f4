package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/host"
	"github.com/benchrun/benchrun/internal/selfbench"
)

// TestSelfBench: the self-bench prints its rows, searches both ceilings
// (within the bounds given) and saves them for this machine.
func TestSelfBench(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	var out, errb bytes.Buffer
	code := runSelfBench(context.Background(), []string{"--concurrency", "4", "--streams", "16", "--step", "200ms", "--max-streams", "24", "--max-rate", "300", "--max-send-lag-ms", "1000"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"measurement,value,unit,detail\n", "sse_events_per_s_per_core,", "allocs_per_event,", "event_error_p99_ms,",
		"send_lag_p99_ms_at_300_req_s,", "max_rate_req_s,", "send_lag_p99_ms_at_24_streams,", "max_streams,", "machine_wake_p99_ms,", "bytes_per_stream,", "machine floor p99 "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	c, path, ok := selfbench.LoadCapacity()
	if !ok {
		t.Fatalf("no ceilings saved (%s); stderr:\n%s", path, errb.String())
	}
	// The searches start at their bounds here (300 req/s, 24 streams), and
	// a 1 s bound on send lag holds for such a load on any machine.
	if c.MaxRate != 300 || c.MaxStreams != 24 || !c.RateCapped || !c.StreamsCapped || c.SendLagMs != 1000 || time.Since(c.MeasuredAt) > time.Minute {
		t.Errorf("saved %+v", c)
	}
	if !strings.Contains(errb.String(), "saved max_streams 24 and max_rate_req_s 300 to "+path) {
		t.Errorf("stderr does not say where the ceilings went:\n%s", errb.String())
	}
	if code := runSelfBench(context.Background(), []string{"--streams", "0"}, &out, &errb); code != 2 {
		t.Errorf("--streams 0: exit %d, want 2", code)
	}
}

// TestDryRunWarnsPastTheClientsCeiling: a dry run says which steps ask
// more concurrency or rate than this machine's last self-bench measured,
// nothing when they fit or when there is no measurement, and counts a
// shard's share only.
func TestDryRunWarnsPastTheClientsCeiling(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.cue")
	if err := os.WriteFile(plan, []byte(`name: "big"
model: {name: "m"}
stages: {
	closed: {kind: "sweep", target: "http://127.0.0.1:8000", cells: [{isl: 64, osl: 32}], concurrency: [8, 512, 4096]}
	open: {kind: "sweep", target: "http://127.0.0.1:8000", cells: [{isl: 64, osl: 32}], rates: [100, 9000], requests: 100}
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	dry := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if code := runRun(context.Background(), append([]string{plan, "--dry-run"}, args...), &out, &errb); code != 0 {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
		if !strings.Contains(out.String(), "nothing was run (--dry-run)") {
			t.Fatalf("stdout:\n%s", out.String())
		}
		return errb.String()
	}
	if got := dry(); strings.Contains(got, "warning: stage") {
		t.Errorf("no self-bench yet, but:\n%s", got)
	}
	c := selfbench.Capacity{Fingerprint: host.Fingerprint(), MeasuredAt: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), SendLagMs: 5, MaxStreams: 1000, MaxRate: 5000}
	path, err := selfbench.Save(c)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(path, cache) {
		t.Fatalf("saved to %s, outside the cache directory %s", path, cache)
	}
	got := dry()
	for _, want := range []string{
		"warning: stage closed: 1 steps ask this client for up to 4096 concurrent requests, more than the 1000 streams this machine's client sustained with send lag p99 under 5 ms (self-bench of 2026-12-01, " + path + ")",
		"(64:32 c=4096)",
		"warning: stage open: 1 steps ask this client for up to 9000 req/s, more than the 5000 req/s",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("stderr lacks %q:\n%s", want, got)
		}
	}
	// Shard 0 of 2 sends half: 2048 sessions still pass 1000, 4500 req/s
	// fits 5000.
	got = dry("--shard", "0/2")
	if !strings.Contains(got, "up to 2048 concurrent requests") || strings.Contains(got, "stage open") {
		t.Errorf("--shard 0/2:\n%s", got)
	}
	// Another machine's file is not this one's.
	c.Fingerprint += " (elsewhere)"
	b, _ := json.Marshal(c)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := dry(); strings.Contains(got, "warning: stage") {
		t.Errorf("another machine's ceilings were used:\n%s", got)
	}
}
