package selfbench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/host"
)

// TestSelfBenchStopsWhereFilesRunOut: the stream search tries no more
// streams than this process's open files hold at both ends, says so in
// the max_streams row, and gives the ceiling as the bound it reached.
func TestSelfBenchStopsWhereFilesRunOut(t *testing.T) {
	old := streamCap
	streamCap = func() int { return 20 }
	t.Cleanup(func() { streamCap = old })
	var out, errb bytes.Buffer
	c, err := Run(context.Background(), Config{Concurrency: 4, Streams: 16, Step: 200 * time.Millisecond, MaxStreams: 24, MaxRate: 300, MaxSendLagMs: 1000}, &out, &errb)
	if err != nil {
		t.Fatalf("%v: %s", err, errb.String())
	}
	if strings.Contains(out.String(), "_at_24_streams") || !strings.Contains(out.String(), "send_lag_p99_ms_at_20_streams,") {
		t.Errorf("the search went past the cap of 20 streams, or not to it:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "searched up to 20, not --max-streams: past it this process's open files (both ends of every stream) run out") {
		t.Errorf("max_streams does not say the search was capped:\n%s", out.String())
	}
	if c.MaxStreams != 20 || !c.StreamsCapped {
		t.Errorf("ceilings %+v, want max_streams 20, capped", c)
	}
}

// TestSaveLoad: the ceilings saved are this machine's, found again under
// the user cache directory; another machine's file is not.
func TestSaveLoad(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	if _, _, ok := LoadCapacity(); ok {
		t.Fatal("ceilings found before any were saved")
	}
	c := Capacity{Fingerprint: host.Fingerprint(), MeasuredAt: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), SendLagMs: 5, MaxStreams: 1000, MaxRate: 5000}
	path, err := Save(c)
	if err != nil || !strings.HasPrefix(path, cache) {
		t.Fatalf("saved to %s (%v), want under %s", path, err, cache)
	}
	got, at, ok := LoadCapacity()
	if !ok || at != path || got != c {
		t.Errorf("loaded %+v from %s (%v), want %+v from %s", got, at, ok, c, path)
	}
	c.Fingerprint += " (elsewhere)"
	if _, err := Save(c); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := LoadCapacity(); !ok {
		t.Error("another machine's file replaced this one's")
	}
}
