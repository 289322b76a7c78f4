package loadgen

import (
	"os"
	"runtime/debug"
)

// GCPercent is the collector's target a load-generating process runs
// with (TuneGC) unless GOGC says otherwise. A collection in the middle of
// a cell takes a quarter of the client's cores for its mark phase and
// taxes every allocating goroutine, and at 4,096 streams on two cores it
// is what turns a send-lag p99 of 7–10 ms into 25–180 ms. At Go's default
// of 100 the heap goal is twice what the last collection found live, so
// a cell whose streams grow the live heap past the goal left by the
// previous one collects in its timed pass; at 300 the same cells ran
// without a collection, for about a third more memory per stream (41 →
// 55 KiB at 4,096 streams, BenchmarkHeadroomStreams).
const GCPercent = 300

// TuneGC sets the collector for a process whose work is generating load:
// GCPercent unless the GOGC environment variable is set, and, unless
// GOMEMLIMIT is, a soft memory limit of half the machine's memory, so
// the larger heap goal never runs the machine out of memory (the
// collector works harder near the limit instead). It returns the
// percent in force.
func TuneGC() int {
	if os.Getenv("GOGC") != "" {
		p := debug.SetGCPercent(100)
		debug.SetGCPercent(p)
		return p
	}
	debug.SetGCPercent(GCPercent)
	if os.Getenv("GOMEMLIMIT") == "" {
		if total := physicalMemory(); total > 0 {
			debug.SetMemoryLimit(int64(total / 2))
		}
	}
	return GCPercent
}
