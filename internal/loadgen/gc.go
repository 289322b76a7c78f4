package loadgen

import (
	"os"
	"runtime"
	"runtime/debug"
)

// GCPercent is the collector's target a load-generating process runs
// with (TuneRuntime) unless GOGC says otherwise. A collection in the
// middle of a cell takes a quarter of the client's cores for its mark
// phase and taxes every allocating goroutine; at Go's default of 100 the
// heap goal is twice what the last collection found live, so a cell
// whose streams grow the live heap past the goal left by the one before
// collects in its timed pass. At 4,096 streams on two shared cores
// (BenchmarkHeadroomStreams) the runs that collected read send-lag p99
// 15–37 ms against 6–10 without; at 300 none of 8 collected, for 55 KiB
// per stream instead of 41–50.
const GCPercent = 300

// TuneRuntime sets the Go runtime for a process whose work is generating
// load, and returns the collector percent and the number of Ps in force:
//
//   - the collector at GCPercent unless GOGC is set, and, unless
//     GOMEMLIMIT is, a soft memory limit of half the machine's memory, so
//     the larger heap goal never runs the machine out of memory (the
//     collector works harder near the limit instead);
//   - one P more than the runtime's default (the CPUs it may use) unless
//     GOMAXPROCS is set: on a machine shared with the server, a P whose
//     thread the kernel preempted for the server holds its goroutines and
//     timers until it runs again, and a spare P lets the others go on
//     (send-lag p99 at 4,096 streams on two cores, 8 runs each: median
//     5.9 ms with three Ps, 8 ms with two). Work is what the load makes
//     it; the extra P adds none.
func TuneRuntime() (gcPercent, procs int) {
	if os.Getenv("GOGC") != "" {
		gcPercent = debug.SetGCPercent(100)
		debug.SetGCPercent(gcPercent)
	} else {
		gcPercent = GCPercent
		debug.SetGCPercent(GCPercent)
		if os.Getenv("GOMEMLIMIT") == "" {
			if total := physicalMemory(); total > 0 {
				debug.SetMemoryLimit(int64(total / 2))
			}
		}
	}
	procs = runtime.GOMAXPROCS(0)
	if os.Getenv("GOMAXPROCS") == "" {
		procs++
		runtime.GOMAXPROCS(procs)
	}
	return gcPercent, procs
}
