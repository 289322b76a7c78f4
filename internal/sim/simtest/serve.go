package simtest

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/sim"
)

// The simulator served in-process for tests: the one home of the helpers
// pipelinetest, telemetry's, the sweep's and loadgen's tests each wrote.

// Sim starts the built-in simulator in-process, served on loopback over
// real HTTP (what `benchrun sim` serves), and returns its base URL
// ("http://127.0.0.1:PORT"). It is stopped when the test ends. The
// configuration is FastSimConfig with edits applied in order.
func Sim(t testing.TB, edits ...func(*sim.Config)) string {
	t.Helper()
	return Serve(t, NewSim(t, edits...))
}

// NewSim returns the simulator Sim serves, not yet served, for a test that
// puts a handler in front of it (a fault, a server that dies) and serves
// that with Serve. It is closed when the test ends.
func NewSim(t testing.TB, edits ...func(*sim.Config)) *sim.Server {
	t.Helper()
	cfg := FastSimConfig()
	for _, edit := range edits {
		edit(&cfg)
	}
	return NewSimFrom(t, cfg)
}

// NewSimFrom is NewSim from a whole configuration, checked first (a
// misconfigured ground truth fails the test, not the simulator).
func NewSimFrom(t testing.TB, cfg sim.Config) *sim.Server {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("simulator configuration: %v", err)
	}
	s := sim.New(cfg)
	t.Cleanup(s.Close)
	return s
}

// FastSimConfig is sim.DefaultConfig made quick and exact for tests: a
// fixed 5 ms to the first token, 1 ms between tokens, and no early end of
// stream (every request gets its osl).
func FastSimConfig() sim.Config {
	cfg := sim.DefaultConfig()
	cfg.TTFT, cfg.ITL, cfg.EOSProb = 5*time.Millisecond, time.Millisecond, 0
	return cfg
}

// Serve serves h on loopback over real HTTP until the test ends and
// returns its base URL. Open connections are closed first, so a test ends
// without waiting for a stream it abandoned.
func Serve(t testing.TB, h http.Handler) string {
	t.Helper()
	hs := httptest.NewServer(h)
	t.Cleanup(func() { hs.CloseClientConnections(); hs.Close() })
	return hs.URL
}
