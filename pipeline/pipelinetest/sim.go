package pipelinetest

import (
	"net/http"
	"testing"

	"github.com/benchrun/benchrun/internal/sim"
	"github.com/benchrun/benchrun/internal/sim/simtest"
)

// Sim starts the built-in simulator in-process, served on loopback over
// real HTTP (what `benchrun sim` serves), and returns its base URL
// ("http://127.0.0.1:PORT"; a plan's `target`). It is stopped when the
// test ends. The configuration is FastSimConfig with edits applied in
// order (simtest.Sim, the one home of the tests' simulator):
//
//	url := pipelinetest.Sim(t, func(c *sim.Config) { c.MaxModelLen = 512; c.Faults.ErrorRate = 0.3 })
func Sim(t testing.TB, edits ...func(*sim.Config)) string {
	t.Helper()
	return simtest.Sim(t, edits...)
}

// NewSim returns the simulator Sim serves, not yet served, for a test that
// puts a handler in front of it (a fault, a server that dies) and serves
// that with Serve. It is closed when the test ends.
func NewSim(t testing.TB, edits ...func(*sim.Config)) *sim.Server {
	t.Helper()
	return simtest.NewSim(t, edits...)
}

// FastSimConfig is sim.DefaultConfig made quick and exact for tests, as
// the sweep's tests serve it: a fixed 5 ms to the first token, 1 ms
// between tokens, and no early end of stream (every request gets its
// osl).
func FastSimConfig() sim.Config { return simtest.FastSimConfig() }

// Serve serves h on loopback over real HTTP until the test ends and
// returns its base URL. Open connections are closed first, so a test ends
// without waiting for a stream it abandoned.
func Serve(t testing.TB, h http.Handler) string {
	t.Helper()
	return simtest.Serve(t, h)
}
