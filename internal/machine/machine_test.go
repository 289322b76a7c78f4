package machine

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

// openCell is an open-loop row: rate req/s, completed requests of mean
// e2el ms, the loop's p99 5 ms and one stall of maxLate ms.
func openCell(rate float64, completed int64, e2el, maxLate float64) *results.Cell {
	return &results.Cell{Completed: completed, Rate: rate, OSL: 32, E2ELMs: results.Some(e2el),
		MachineLateP99Ms: results.Some(5.0), MachineLateMaxMs: results.Some(maxLate)}
}

// LateOn widens a latency's allowance by the cell's longest stall as far
// as one stall reaches the column's statistic: k of n values at once.
func TestLateOn(t *testing.T) {
	cell := func(conc, completed int64, rate, p99, maxLate float64) *results.Cell {
		return &results.Cell{Concurrency: conc, Completed: completed, Rate: rate, OSL: 32,
			MachineLateP99Ms: results.Some(p99), MachineLateMaxMs: results.Some(maxLate)}
	}
	// The quickstart's 64:32 c=4 cell on a starved machine: 8 requests,
	// the loop's p99 2,286 ms, one stall of 10,321 ms.
	starved := cell(4, 8, 0, 2286, 10321)
	lone := cell(1, 8, 0, 43.8, 13287)
	for _, tc := range []struct {
		name string
		c    *results.Cell
		col  string
		want float64
	}{
		{"a mean: the stall's share of 4 of 8", starved, "ttft_ms", 2286 + 10321*4.0/8},
		{"the median: 4 of 8 reach it", starved, "ttft_p50_ms", 2286 + 10321},
		{"p90", starved, "e2el_p90_ms", 2286 + 10321},
		{"a max", starved, "ttft_max_ms", 2286 + 10321},
		{"c=1: a mean, 1 of 8", lone, "ttft_ms", 43.8 + 13287.0/8},
		{"c=1: the median is out of one stall's reach", lone, "ttft_p50_ms", 43.8},
		{"c=1: p90 is within it (1 ≥ 0.8)", lone, "ttft_p90_ms", 43.8 + 13287},
		{"c=1: a gap median over 8 × 31 gaps", lone, "itl_p50_ms", 43.8},
		{"c=1: the gaps' mean", lone, "itl_ms", 43.8 + 13287.0/(8*31)},
		{"the first call is one request", lone, "first_call_ms", 43.8 + 13287},
		{"open loop without a request time: every request may be caught", cell(64, 8, 2, 5, 100), "ttft_p50_ms", 105},
		// A server at 400 ms, 10 req/s, 100 requests, one 1 s stall: 4 in
		// flight when it began (Little: 10/s × 0.4 s) and 10 due during it,
		// 15 with the edge, of 100: the median is out of its reach, p90
		// within it (15 ≥ 10); a 9 s stall reaches 95, the median too.
		{"open loop: the median is out of one stall's reach", openCell(10, 100, 400, 1000), "ttft_p50_ms", 5},
		{"open loop: p90 is within it", openCell(10, 100, 400, 1000), "ttft_p90_ms", 1005},
		{"open loop: a long stall reaches the median", openCell(10, 100, 400, 9000), "ttft_p50_ms", 9005},
		{"open loop: a max", openCell(10, 100, 400, 1000), "ttft_max_ms", 1005},
		{"open loop: the mean, 15 of 100", openCell(10, 100, 400, 1000), "e2el_ms", 5 + 1000*15.0/100},
		{"a throughput takes the p99", starved, "output_tok_s", 2286},
		{"a ratio takes the p99", starved, "ttft_ratio", 2286},
		{"no max measured", &results.Cell{Concurrency: 4, Completed: 8, MachineLateP99Ms: results.Some(3.0)}, "ttft_ms", 3},
		{"nothing measured", &results.Cell{Concurrency: 4, Completed: 8}, "ttft_ms", 0},
	} {
		if got := LateOn(tc.col, tc.c); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: LateOn(%s) = %g, want %g", tc.name, tc.col, got, tc.want)
		}
	}
}
