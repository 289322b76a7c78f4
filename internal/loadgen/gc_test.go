package loadgen

import (
	"runtime"
	"runtime/debug"
	"testing"
)

// TestTuneRuntime: the load generator's collector target and one spare P
// unless GOGC and GOMAXPROCS are set, and the user's values when they
// are.
func TestTuneRuntime(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))

	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	t.Setenv("GOMAXPROCS", "")
	before := runtime.GOMAXPROCS(0)
	gc, procs := TuneRuntime()
	if gc != GCPercent || procs != before+1 {
		t.Fatalf("TuneRuntime = %d, %d without GOGC and GOMAXPROCS; want %d, %d", gc, procs, GCPercent, before+1)
	}
	if p := debug.SetGCPercent(GCPercent); p != GCPercent {
		t.Fatalf("GC percent in force %d; want %d", p, GCPercent)
	}
	if n := runtime.GOMAXPROCS(before); n != before+1 {
		t.Fatalf("GOMAXPROCS in force %d; want %d", n, before+1)
	}
	if total := physicalMemory(); total > 0 {
		if l := debug.SetMemoryLimit(-1); l != int64(total/2) {
			t.Fatalf("memory limit %d; want half of %d", l, total)
		}
	}

	// The runtime reads GOGC and GOMAXPROCS at start; here they are set
	// as a user would have, and the runtime's values as it would then
	// have them.
	t.Setenv("GOGC", "150")
	t.Setenv("GOMAXPROCS", "1")
	debug.SetGCPercent(150)
	runtime.GOMAXPROCS(1)
	if gc, procs := TuneRuntime(); gc != 150 || procs != 1 {
		t.Fatalf("TuneRuntime = %d, %d with GOGC=150 GOMAXPROCS=1; want 150, 1", gc, procs)
	}
	if p := debug.SetGCPercent(150); p != 150 {
		t.Fatalf("GC percent in force %d with GOGC=150; want 150", p)
	}
	if n := runtime.GOMAXPROCS(0); n != 1 {
		t.Fatalf("GOMAXPROCS in force %d with GOMAXPROCS=1; want 1", n)
	}
}
