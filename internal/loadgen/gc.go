package loadgen

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
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
	gcMu.Lock()
	debug.SetGCPercent(GCPercent)
	gcSet = GCPercent
	gcMu.Unlock()
	tuned.Store(true)
	if os.Getenv("GOMEMLIMIT") == "" {
		if total := physicalMemory(); total > 0 {
			debug.SetMemoryLimit(int64(total / 2))
		}
	}
	headroomOnce.Do(func() { go holdHeadroom() })
	return GCPercent
}

// GCHeadroom bounds what the collector's goal may add to the live heap.
// GCPercent's goal is four times the live heap: over a long cell whose
// live heap grows (every request's sample values are held to its end for
// the exact percentiles), peak memory would be four times what is held.
// Past GCHeadroom/3 live, the percent falls so that the goal is the live
// heap plus GCHeadroom: a collection then comes every GCHeadroom of
// allocation, as it does at the start of a run, and what a long run adds
// to its peak memory is what it holds (docs/METRICS.md, "Memory per
// finished request").
const GCHeadroom = 256 << 20

// minGCPercent is the least percent holdHeadroom sets: below it a
// collection would come so often that its marking took the client's CPU.
const minGCPercent = 25

// gcPercentFor is the percent whose goal over a live heap of live bytes
// is at most GCHeadroom above it, between minGCPercent and GCPercent.
func gcPercentFor(live uint64) int {
	if live == 0 {
		return GCPercent
	}
	return int(min(max(100*GCHeadroom/live, minGCPercent), GCPercent))
}

// QuietGCPercent is the collector's target while no load runs in the
// process (Loading): nothing is timed then, so a collection costs no
// measurement, and the end of a cell (its rows read back from the spool,
// its statistics computed, its sinks written) peaks at one and a half
// times what it holds rather than four times (docs/METRICS.md, "Memory
// per finished request").
const QuietGCPercent = 50

var (
	headroomOnce sync.Once
	tuned        atomic.Bool  // TuneGC set the percent: holdHeadroom runs
	loads        atomic.Int64 // loads running now (Loading)
	gcMu         sync.Mutex   // orders the percent's updates
	gcSet        = GCPercent  // the percent in force, under gcMu
)

// Loading marks a load running until done is called: while any runs,
// the percent is the load's (gcPercentFor); while none does, at most
// QuietGCPercent. Run, RunClosed and RunAgents call it.
func Loading() (done func()) {
	if loads.Add(1) == 1 {
		retune()
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			if loads.Add(-1) == 0 {
				retune()
			}
		})
	}
}

// percentNow is the percent for a live heap of live bytes now.
func percentNow(live uint64) int {
	p := gcPercentFor(live)
	if loads.Load() == 0 {
		p = min(p, QuietGCPercent)
	}
	return p
}

// retune sets the percent from the live heap the last collection found
// (a process whose collector TuneGC did not set keeps its own).
func retune() {
	if !tuned.Load() {
		return
	}
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		return // a runtime without the metric: GCPercent stays
	}
	gcMu.Lock()
	defer gcMu.Unlock()
	if p := percentNow(sample[0].Value.Uint64()); p != gcSet {
		debug.SetGCPercent(p)
		gcSet = p
	}
}

// holdHeadroom sets the percent from the live heap the last collection
// found, four times a second, for the life of the process.
func holdHeadroom() {
	for range time.Tick(250 * time.Millisecond) {
		retune()
	}
}
