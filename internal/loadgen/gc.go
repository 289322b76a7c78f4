package loadgen

import (
	"os"
	"runtime/debug"
)

// GCPercent is the collector's target a load-generating process runs
// with (TuneGC) unless GOGC says otherwise. A collection in the middle of
// a cell takes a quarter of the client's cores for its mark phase and
// taxes every allocating goroutine; at Go's default of 100 the heap goal
// is twice what the last collection found live, so a cell whose streams
// grow the live heap past the goal left by the one before collects in
// its timed pass. A larger goal trades memory per stream for cells that
// do not collect (docs/benchmarks/measurements.md, "How the client keeps
// its schedule, measured").
//
// The number of Ps is left as Go sets it: on a machine shared with the
// server a spare P is CPU taken from the server under test.
const GCPercent = 300

// TuneGC sets the collector for a process whose work is generating load:
// GCPercent unless the GOGC environment variable is set, and, unless
// GOMEMLIMIT is, a soft memory limit of half the machine's memory, so
// the larger heap goal never runs the machine out of memory (the
// collector works harder near the limit instead). It returns the percent
// in force.
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
