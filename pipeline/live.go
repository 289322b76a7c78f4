package pipeline

import "time"

// Live is what a run shows of itself while it runs, for something
// outside the terminal to watch: `benchrun PLAN --metrics-addr ADDR`
// serves it as Prometheus metrics (internal/livemetrics, which implements
// it with plain func types, as nothing under internal/ imports pipeline).
// Env.Live is nil when nothing watches. Its methods are safe for
// concurrent use and cost nothing per request beyond what they say: a
// load's counts are read when a scrape asks for them.
type Live interface {
	// Stage marks the stage running (of its kind) until end is called.
	Stage(name, kind string) (end func())
	// Pass marks one pass of a cell's load (a warm-up pass, or timed)
	// running until end is called. counts is the load's counts so far
	// (loadgen.Counters.Counts), read while it runs; its last answer
	// joins the cell's at the end. sendLag is to be told each open-loop
	// request's lateness (sent minus scheduled).
	Pass(stage, cell string, timed bool, counts func() (sent, done, failed int64)) (sendLag func(time.Duration), end func())
	// MachineLate is one sample of the machine probe (internal/machine):
	// how late it ran its event loop ("loop") or its lone thread ("wake").
	MachineLate(path string, late time.Duration)
}
