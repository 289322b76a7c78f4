package loadgen

import (
	"runtime/debug"
	"testing"
)

// TestTuneGC: the load generator's collector target and a memory limit
// unless GOGC is set, and GOGC's value when it is (the user's word wins).
func TestTuneGC(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	defer debug.SetGCPercent(debug.SetGCPercent(100))

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
