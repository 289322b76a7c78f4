// Package machinetest judges a test's precision check against the
// machine it ran on: a check of the client's or the simulator's timing
// (a rate kept within 2%, a gap within 1%) makes a claim about a quiet
// machine, and on one shared with other processes it can neither pass
// nor fail honestly. Such a check is then inconclusive: the test is
// skipped, saying how busy the machine was, as a verdict that the
// machine's lateness explains is (docs/PLANS.md, "Inconclusive
// verdicts"). On a quiet machine (a CI runner running the suite one
// package at a time) it judges as written, so a client that really is
// wrong still fails.
package machinetest

import (
	"runtime"
	"testing"
)

// busyCores is how much CPU other processes may use during a precision
// check before it is inconclusive: a quarter of a core (on the project's
// 2-core machines a lone `sha256sum /dev/zero` takes one, a quiet one's
// background well under a tenth).
const busyCores = 0.25

// Watch watches the machine during a precision check.
type Watch struct{ w cpuWindow }

// Start opens the watch; call Judge when the check has measured.
func Start() *Watch { return &Watch{w: startCPUWindow()} }

// Own counts process pid (a server the test started) as the test's own
// load from now on, not a neighbour's.
func (w *Watch) Own(pid int) { w.w.own(pid) }

// Judge skips the test, as inconclusive, when other processes used more
// than busyCores of the machine since Start; it logs what they used
// either way. what names the claim ("the server saw the target rate
// within 2%").
func (w *Watch) Judge(tb testing.TB, what string) {
	tb.Helper()
	others, ok := w.w.others()
	if !ok {
		tb.Logf("the machine's other load could not be read (not Linux): %s judged as written", what)
		return
	}
	if others > busyCores {
		tb.Skipf("inconclusive: other processes used %.2f of this machine's %d cores while it was measured; %s is a claim about a quiet machine (measured numbers above)", others, runtime.NumCPU(), what)
	}
	tb.Logf("other processes used %.2f cores while it was measured: %s judged", others, what)
}
