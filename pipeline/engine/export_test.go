package engine

import (
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/host"
	"github.com/benchrun/benchrun/pipeline"
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

// CheckResume refuses to resume ri with g when the configuration of what
// is left to run differs from the one the run was made with (its
// plan.json): cell ids name cells, not configurations, so a resume with
// another server command or sweep setting would put two configurations in
// one run. The error lists each difference as `path: old → new`. What
// cannot change a measurement is not compared: descriptions, sinks, the
// plan's timeout, helper fields (what they feed is compared where it
// lands), stages with nothing left to run and finally stages. A run checks
// this as it starts; the tests ask it directly.
func CheckResume(g *pipeline.Graph, ri *pipeline.RunInfo) error {
	if !ri.Resumed {
		return nil
	}
	return checkResume(g, ri, nothingLeftToResume(g, stateOf(ri).doneCells))
}
