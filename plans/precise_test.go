package plans_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/benchrun/benchrun/internal/measure"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/stats"
)

// TestPrecisePlan runs plans/precise.cue against the simulator and reads
// its Parquet tables back: the precision cell stopped with its target met,
// and the p99's bound recomputed from its stored request rows is the one
// its row stores (ttft_p99_ms_lo/hi) and the precision_reached_pct it
// says; the repeated sweep's points stopped repeating before 10 once their
// throughput's mean was known within 5 %, each last repeat saying so.
func TestPrecisePlan(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the plan")
	}
	cells, reqs := runExampleTables(t, "precise.cue")
	// Each cell's current row: its latest measurement (a confirmation
	// stores a second).
	current := map[string]results.Cell{}
	var ids []string
	for _, c := range cells {
		if old, ok := current[c.CellID]; !ok || c.Measurement > old.Measurement {
			if !ok {
				ids = append(ids, c.CellID)
			}
			current[c.CellID] = c
		}
	}
	var precise *results.Cell
	repeats := map[string][]results.Cell{}
	for _, id := range ids {
		c := current[id]
		switch c.Stage {
		case "sweep":
			precise = &c
		case "repeated":
			point := c.CellID[:strings.LastIndex(c.CellID, "/rep")]
			repeats[point] = append(repeats[point], c)
		}
	}
	if precise == nil || precise.StopReason != "target met" || precise.PrecisionMetric == "" {
		t.Fatalf("the precision cell: %+v", precise)
	}
	var ttft []float64
	for i := range reqs {
		if reqs[i].CellID != precise.CellID || !sameMeasurement(reqs[i], *precise) {
			continue
		}
		if s, ok := measure.SampleOf(&reqs[i]); ok {
			ttft = append(ttft, s.TTFTMs)
		}
	}
	if int64(len(ttft)) != precise.Completed {
		t.Fatalf("%d stored ttfts, the row says %d completed", len(ttft), precise.Completed)
	}
	slices.Sort(ttft)
	b := stats.SortedQuantileBound(ttft, 99, 0.95)
	est := stats.SortedPercentile(ttft, 99)
	pct := 100 * max(b.Hi-est, est-b.Lo) / est
	if precise.TTFTP99MsLo == nil || precise.TTFTP99MsHi == nil || *precise.TTFTP99MsLo != b.Lo || *precise.TTFTP99MsHi != b.Hi {
		t.Errorf("stored bound [%v, %v], recomputed from the requests table [%v, %v]", precise.TTFTP99MsLo, precise.TTFTP99MsHi, b.Lo, b.Hi)
	}
	if precise.PrecisionMetric == results.ColTTFTP99Ms && (precise.PrecisionReachedPct == nil || math.Abs(*precise.PrecisionReachedPct-pct) > 1e-9) {
		t.Errorf("precision_reached_pct %v, recomputed %v", precise.PrecisionReachedPct, pct)
	}
	t.Logf("p99 TTFT %.2f ms [%.2f, %.2f] (±%.2f %%) after %d requests; stop_reason %s", est, b.Lo, b.Hi, pct, precise.Requests, precise.StopReason)
	if len(repeats) != 2 {
		t.Fatalf("repeated points %v", repeats)
	}
	for point, rows := range repeats {
		last := rows[len(rows)-1]
		if len(rows) < 10 && !strings.Contains(last.Notes, "repeats: no more after repeat") ||
			len(rows) == 10 && !strings.Contains(last.Notes, "repeats: all 10 measured") {
			t.Errorf("%s: %d repeats, the last one's notes: %s", point, len(rows), last.Notes)
		}
		t.Logf("%s: %d repeats", point, len(rows))
	}
}

// sameMeasurement reports whether request q belongs to row c's measurement
// (a confirmed cell's requests table holds both measurements').
func sameMeasurement(q results.Request, c results.Cell) bool {
	return q.Measurement == c.Measurement
}
