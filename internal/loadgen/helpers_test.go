package loadgen

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/sim"
	"github.com/benchrun/benchrun/internal/sim/simtest"
)

// startSim serves the real simulator (the ground truth) over real HTTP on
// loopback; tests only import it, the load generator shares no code with it.
func startSim(t testing.TB, edit func(*sim.Config)) (*sim.Server, string) {
	t.Helper()
	cfg := sim.DefaultConfig()
	cfg.EOSProb = 0
	cfg.MaxRecords = 20000
	if edit != nil {
		edit(&cfg)
	}
	s := simtest.NewSimFrom(t, cfg)
	return s, simtest.Serve(t, s)
}

// newTarget has the stall watchdog on, as every sweep does (stall_timeout
// defaults to 2m), so accuracy tests and benchmarks measure its cost too.
func newTarget(url string, conns int) *Target {
	return &Target{BaseURL: url, Model: "sim-llama", Endpoint: Completions, Stream: true, HTTP: NewHTTPClient(conns), StallTimeout: 2 * time.Minute}
}

func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// SyntheticPrompt returns a prompt of n words drawn from rng (the
// package's word list): a conversation's user turns, in the tests, where
// the prompt's exact token count does not matter.
func SyntheticPrompt(rng *rand.Rand, n int) string {
	var b strings.Builder
	b.Grow(n * 6)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[rng.IntN(len(words))])
	}
	return b.String()
}
