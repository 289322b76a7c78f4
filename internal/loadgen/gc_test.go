package loadgen

import (
	"runtime/debug"
	"runtime/metrics"
	"testing"
)

// TestTuneGC: the load generator's collector target and a memory limit
// unless GOGC is set, and GOGC's value when it is (the user's word wins).
func TestTuneGC(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer tuned.Store(false) // the other tests run with the collector as Go sets it

	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	if got := TuneGC(); got != GCPercent {
		t.Fatalf("TuneGC = %d without GOGC; want %d", got, GCPercent)
	}
	if p := debug.SetGCPercent(GCPercent); p != GCPercent {
		t.Fatalf("GC percent in force %d; want %d", p, GCPercent)
	}
	if total := physicalMemory(); total > 0 {
		if l := debug.SetMemoryLimit(-1); l != int64(total/2) {
			t.Fatalf("memory limit %d; want half of %d", l, total)
		}
	}

	// The runtime reads GOGC at start; here it is set as a user would
	// have, and the percent as the runtime would then have it.
	t.Setenv("GOGC", "150")
	debug.SetGCPercent(150)
	if got := TuneGC(); got != 150 {
		t.Fatalf("TuneGC = %d with GOGC=150; want 150", got)
	}
	if p := debug.SetGCPercent(150); p != 150 {
		t.Fatalf("GC percent in force %d with GOGC=150; want 150", p)
	}
}

// TestGCPercentFor: the collector's goal stays GCPercent over a small
// live heap and bounds what it adds to GCHeadroom over a large one,
// never below minGCPercent.
func TestGCPercentFor(t *testing.T) {
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, GCPercent},
		{50 << 20, GCPercent},
		{GCHeadroom / 3, GCPercent},
		{GCHeadroom, 100},
		{2 * GCHeadroom, 50},
		{100 * GCHeadroom, minGCPercent},
	} {
		if got := gcPercentFor(c.live); got != c.want {
			t.Errorf("gcPercentFor(%d MiB) = %d; want %d", c.live>>20, got, c.want)
		}
		if goal := c.live * uint64(100+gcPercentFor(c.live)) / 100; c.live >= GCHeadroom/3 && c.live <= 4*GCHeadroom && goal > c.live+GCHeadroom {
			t.Errorf("live %d MiB: goal %d MiB is more than GCHeadroom above it", c.live>>20, goal>>20)
		}
	}
}

// TestQuietWhileNoLoadRuns: once TuneGC has set the collector, the
// percent is the load's while a load runs (Loading) and at most
// QuietGCPercent while none does — at once when the last load ends, so a
// cell's end, which reads its rows back and computes its statistics,
// peaks at 1.5 times what it holds — and the load's again when the next
// one starts. Nested loads count: the percent falls only when the last
// ends.
func TestQuietWhileNoLoadRuns(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	TuneGC()
	defer tuned.Store(false)
	percent := func() int { p := debug.SetGCPercent(-1); debug.SetGCPercent(p); return p }
	retune()
	if p := percent(); p > QuietGCPercent {
		t.Fatalf("no load running: percent %d; want at most %d", p, QuietGCPercent)
	}
	outer := Loading()
	if p := percent(); p != gcPercentFor(liveHeap()) || p <= QuietGCPercent {
		t.Fatalf("a load running: percent %d; want the load's %d", p, gcPercentFor(liveHeap()))
	}
	inner := Loading()
	inner()
	inner() // twice: counted once
	if p := percent(); p <= QuietGCPercent {
		t.Fatalf("an inner load ended, the outer runs: percent %d", p)
	}
	outer()
	if p := percent(); p > QuietGCPercent {
		t.Fatalf("every load ended: percent %d; want at most %d", p, QuietGCPercent)
	}
}

func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
