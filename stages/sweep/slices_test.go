package sweep

import (
	"fmt"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/measure"
	"github.com/benchrun/benchrun/internal/results"
)

// TestSlicesShowAStall: every request stalls for 250 ms after its sixth
// token (the simulator's stall fault), one request at a time, cut into
// 50 ms windows. Each stall must show in the window where it ended (an
// ITL gap of at least 250 ms), in no other window, and the windows it
// spans must hold a request in flight and no token: the shape an average
// over the pass hides. The machine can only make gaps longer, never
// shorter than the stall, so a busy machine cannot fail it.
func TestSlicesShowAStall(t *testing.T) {
	_, url := startSim(t, nil)
	st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, cells: [{isl: 16, osl: 12}], concurrency: [1],
		requests: 4, warmup: 0, slice: "50ms", headers: {"X-Sim-Fault": "stall=250ms,stall-at=6"}`, url), "")
	c, err := runStage(t, st, p)
	if err != nil {
		t.Fatal(err)
	}
	cell := c.cells[0]
	if cell.Status != results.StatusOK || cell.SliceS != 0.05 {
		t.Fatalf("cell %s %q, slice_s %g (want 0.05)", cell.Status, cell.Reason, cell.SliceS)
	}
	slices := measure.Slices(cell, results.AsRequests(c.reqs))
	stalls, idle := 0, 0
	for _, s := range slices {
		if s.ITLMaxMs != nil && *s.ITLMaxMs >= 250 {
			// The k-th stall is the k-th request's (one at a time), and
			// its gap counts where it ended: at least 250 ms after that
			// request's send, so its window starts 200 ms after it or later.
			if stalls < len(c.reqs) {
				if d := s.StartedAt.Sub(c.reqs[stalls].SentAt); d < 200*time.Millisecond {
					t.Errorf("slice %d holds request %d's stall, starting %v after its send: want 200 ms or more", s.Slice, stalls, d)
				}
			}
			stalls++
		}
		if s.OutputTokS == 0 && s.InFlight > 0.999 && s.WidthS == 0.05 {
			idle++
		}
	}
	if stalls != 4 {
		t.Errorf("%d windows hold a gap of 250 ms or more, want one per request (4)", stalls)
	}
	// A 250 ms stall covers at least four whole 50 ms windows, but where it
	// starts inside its first window is chance: count three.
	if idle < 4*3 {
		t.Errorf("%d windows with a request in flight and no token, want at least 12 (three per stall)", idle)
	}
	if t.Failed() {
		for _, s := range slices {
			t.Logf("slice %d @%.3fs: tok/s %.0f in flight %.2f itl max %v", s.Slice, s.StartS, s.OutputTokS, s.InFlight, fmtMs(s.ITLMaxMs))
		}
	}
}

// TestSlicesDefaultWidth: without slice, a cell gets the 1-2-5 width that
// cuts its pass into about ten windows.
func TestSlicesDefaultWidth(t *testing.T) {
	_, url := startSim(t, nil)
	st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, cells: [{isl: 16, osl: 8}], concurrency: [2], requests: 20, warmup: 0`, url), "")
	c, err := runStage(t, st, p)
	if err != nil {
		t.Fatal(err)
	}
	cell := c.cells[0]
	n := len(measure.Slices(cell, results.AsRequests(c.reqs)))
	if cell.SliceS <= 0 || n < 4 || n > 11 {
		t.Errorf("slice_s %g over a %g s pass: %d windows, want about ten", cell.SliceS, cell.DurationS, n)
	}
}

func fmtMs(p *float64) string {
	if p == nil {
		return "NULL"
	}
	return fmt.Sprintf("%.1f ms", *p)
}
