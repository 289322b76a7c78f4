package measure

import (
	"math"
	"testing"

	"github.com/benchrun/benchrun/internal/results"
)

// TestLateFor: a metric's statistic picks the machine's lateness it is
// judged against; a row without that statistic falls back to the p99.
func TestLateFor(t *testing.T) {
	full := &results.Cell{MachineLateP50Ms: results.Some(0.1), MachineLateP99Ms: results.Some(2.0), MachineLateMaxMs: results.Some(9.0)}
	old := &results.Cell{MachineLateP99Ms: results.Some(2.0)}
	for _, tc := range []struct {
		metric   string
		row      *results.Cell
		want     float64
		wantStat string
	}{
		{"ttft_p50_ms", full, 0.1, "p50"},
		{"tpot_mean_ms", full, 0.1, "p50"},
		{"output_tok_s", full, 0.1, "p50"},
		{"itl_p99_ms", full, 2, "p99"},
		{"e2el_p95_ms", full, 2, "p99"},
		{"itl_max_ms", full, 9, "max"},
		{"ttft_p50_ms", old, 2, "p50"},
		{"itl_max_ms", old, 2, "max"},
		{"ttft_p50_ms", nil, 0, "p50"},
	} {
		if got := LateFor(tc.metric, tc.row); got != tc.want {
			t.Errorf("LateFor(%s) = %v, want %v", tc.metric, got, tc.want)
		}
		if got := LateStat(tc.metric); got != tc.wantStat {
			t.Errorf("LateStat(%s) = %s, want %s", tc.metric, got, tc.wantStat)
		}
	}
}

// TestFellAmongJoined: a gap percentile falls among the gaps joined reads
// made 0 when their share of the gaps (events_joined_pct × n/(n − 1))
// reaches it; other columns never do, and such a percentile's allowance
// is unbounded up.
func TestFellAmongJoined(t *testing.T) {
	row := func(joined float64, osl int64) *results.Cell {
		return &results.Cell{OSL: osl, EventsJoinedPct: results.Some(joined)}
	}
	for _, tc := range []struct {
		name string
		row  *results.Cell
		want bool
	}{
		{"itl_p50_ms", row(50, 8), true},  // 57% of the gaps
		{"itl_p50_ms", row(44, 8), true},  // 50.3% of the gaps
		{"itl_p50_ms", row(43, 8), false}, // 49.1%
		{"itl_p50_ms", row(49.97, 1000), true},
		{"itl_p50_ms", row(49, 1000), false},
		{"itl_p90_ms", row(57, 8), false},
		{"itl_p99_ms", row(100, 8), true},
		{"itl_tok_p50_ms", row(50, 8), true},
		{"itl_ms", row(90, 8), false},      // a mean: the ends of the stream bound it
		{"itl_max_ms", row(100, 8), false}, // not a percentile of the gaps
		{"ttft_p50_ms", row(100, 8), false},
		{"itl_p50_ms", &results.Cell{OSL: 8}, false}, // not measured (user stamps)
		{"itl_p50_ms", nil, false},
	} {
		if got := FellAmongJoined(tc.name, tc.row); got != tc.want {
			t.Errorf("FellAmongJoined(%s, %+v) = %v, want %v", tc.name, tc.row, got, tc.want)
		}
	}
	joined := &results.Cell{OSL: 8, EventsJoinedPct: results.Some(50.0), MachineLateP99Ms: results.Some(2.0)}
	if b := Allowance("itl_p50_ms", joined, 2); b.Down != 2 || !math.IsInf(b.Up, 1) {
		t.Errorf("allowance of a joined p50: %+v, want {2 +Inf}", b)
	}
	if b := Allowance("itl_p99_ms", joined, 2); b != (Bound{2, 2}) {
		t.Errorf("allowance of a p99 above the joined share: %+v, want {2 2}", b)
	}
}
