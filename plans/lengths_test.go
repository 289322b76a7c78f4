package plans_test

import (
	"testing"

	"github.com/benchrun/benchrun/internal/results"
)

// TestLengthsPlan runs plans/lengths.cue against the simulator: every row
// ok and named by its distributions, every request of a drawing cell
// served at exactly its draws (the simulator writes max_tokens under
// ignore_eos; its prompt tokens are the calibrated draw), within the
// distributions' bounds, and the fixed cell's requests without draws.
func TestLengthsPlan(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the plan")
	}
	cells, reqs := runExampleTables(t, "lengths.cue")
	byCell := map[string][]results.Request{}
	for _, q := range reqs {
		byCell[q.CellID] = append(byCell[q.CellID], q)
	}
	want := map[string]struct {
		islDist, oslDist     string
		islLo, islHi, oslMax int64
	}{
		"sweep/128:64/c1": {}, "sweep/128:64/c4": {},
		"sweep/uniform(32..256):lognormal(64,32,..512)/c1": {"uniform(32..256)", "lognormal(64,32,..512)", 32, 256, 512},
		"sweep/uniform(32..256):lognormal(64,32,..512)/c4": {"uniform(32..256)", "lognormal(64,32,..512)", 32, 256, 512},
		"sweep/128:empirical(16=6,64=3,256=1)/c1":          {"", "empirical(16=6,64=3,256=1)", 128, 128, 256},
		"sweep/128:empirical(16=6,64=3,256=1)/c4":          {"", "empirical(16=6,64=3,256=1)", 128, 128, 256},
	}
	if len(cells) != len(want) {
		t.Errorf("%d rows, want %d", len(cells), len(want))
	}
	for _, c := range cells {
		w, ok := want[c.CellID]
		if !ok || c.Status != results.StatusOK || c.ISLDist != w.islDist || c.OSLDist != w.oslDist || c.EffectiveOSLP99 == nil {
			t.Errorf("%s: expected %v, status %s (%s), isl_dist %q osl_dist %q", c.CellID, ok, c.Status, c.Reason, c.ISLDist, c.OSLDist)
			continue
		}
		rs := byCell[c.CellID]
		if len(rs) != 40 {
			t.Errorf("%s: %d requests", c.CellID, len(rs))
		}
		for _, q := range rs {
			drawn := w.oslDist != ""
			if drawn != (q.OSL != nil) || (w.islDist != "") != (q.ISL != nil) {
				t.Fatalf("%s request %d: draws isl %v osl %v", c.CellID, q.Seq, q.ISL, q.OSL)
			}
			if !drawn {
				continue
			}
			if q.OutputTokens != *q.OSL || *q.OSL < 1 || *q.OSL > w.oslMax {
				t.Errorf("%s request %d: drew osl %d, got %d", c.CellID, q.Seq, *q.OSL, q.OutputTokens)
			}
			if q.ISL != nil && (q.InputTokens != *q.ISL || *q.ISL < w.islLo || *q.ISL > w.islHi) {
				t.Errorf("%s request %d: drew isl %d, the server counted %d", c.CellID, q.Seq, *q.ISL, q.InputTokens)
			}
		}
	}
}
