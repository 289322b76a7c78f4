package measure

import (
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
