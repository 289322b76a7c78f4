package pipeline

import (
	"testing"
	"time"
)

// SetDigestHooks makes every model file hash call onDone as it ends, and
// say so on the progress writer once it has run for progressAfter, until
// the test ends.
func SetDigestHooks(t testing.TB, onDone func(path, digest string), progressAfter time.Duration) {
	oldAfter := digestProgressAfter.Load()
	onDigest.Store(&onDone)
	digestProgressAfter.Store(int64(progressAfter))
	t.Cleanup(func() {
		onDigest.Store(nil)
		digestProgressAfter.Store(oldAfter)
	})
}

// SetSinkSleep replaces the wait between attempts of a sink call until
// the test ends.
func SetSinkSleep(t testing.TB, sleep func(time.Duration)) {
	old := sinkSleep
	sinkSleep = sleep
	t.Cleanup(func() { sinkSleep = old })
}

// Assertions returns the graph's compiled assertions as the runner takes
// them: by the stage whose rows they judge, and the run-level ones.
func (g *Graph) Assertions() (map[string][]*Assertion, []*Assertion) { return g.assertions() }
