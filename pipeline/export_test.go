package pipeline

import (
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/host"
)

// SetDigestHooks makes every model file hash call onDone as it ends, and
// say so on the progress writer once it has run for progressAfter, until
// the test ends.
func SetDigestHooks(t testing.TB, onDone func(path, digest string), progressAfter time.Duration) {
	oldAfter := digestProgressAfter.Load()
	restore := host.SetHashHook(onDone)
	digestProgressAfter.Store(int64(progressAfter))
	t.Cleanup(func() {
		restore()
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

// CheckResume refuses to resume ri with g when the configuration of what
// is left to run differs from the one the run was made with (its
// plan.json): cell ids name cells, not configurations, so a resume with
// another server command or sweep setting would put two configurations in
// one run. The error lists each difference as `path: old → new`. What
// cannot change a measurement is not compared: descriptions, sinks, the
// plan's timeout, helper fields (what they feed is compared where it
// lands), stages with nothing left to run and finally stages. A run checks
// this as it starts; the tests ask it directly.
func CheckResume(g *Graph, ri *RunInfo) error {
	if !ri.Resumed {
		return nil
	}
	return checkResume(g, ri, g.nothingLeftToResume(ri.doneCells))
}
