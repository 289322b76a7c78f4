package machine

import (
	"math"
	"testing"

	"github.com/benchrun/benchrun/internal/results"
)

func TestStarvedAndMachineBound(t *testing.T) {
	closed := func(wait float64) *results.Cell {
		return &results.Cell{Concurrency: 2, Requests: 20, Completed: 20, DurationS: 2,
			ServerCPUWaitMs: results.Some(wait), ClientCPUWaitMs: results.Some(wait / 4),
			ReqS: results.Some(10.0), E2ELP50Ms: results.Some(200.0), TTFTP50Ms: results.Some(50.0)}
	}
	for _, tc := range []struct {
		name   string
		metric string
		c      *results.Cell
		late   float64
		want   Bound
	}{
		// 500 ms waited by 2 requests in flight over 20: a mean of 50 ms,
		// a median of at most 100 ms; a tail may have taken all 500.
		{"a median", "ttft_p50_ms", closed(500), 0, Bound{Down: 100}},
		{"a tail", "ttft_p99_ms", closed(500), 0, Bound{Down: 500}},
		{"a gap either way", "itl_p50_ms", closed(500), 0, Bound{Down: 100, Up: 100}},
		{"the probe's lateness when larger", "ttft_p50_ms", closed(10), 30, Bound{Down: 30}},
		// Waiting 500 ms of a 2 s window: the work could have taken 1.5 s,
		// 10 req/s could have been 13.33.
		{"a throughput", "req_s", closed(500), 0, Bound{Up: 10 * 0.25 / 0.75}},
		{"no wait, no lateness", "ttft_p50_ms", closed(0), 0, Bound{}},
		{"a count the machine cannot move", "failed", closed(500), 5, Bound{}},
	} {
		got := StarvedBound(tc.metric, tc.c, tc.late)
		if math.Abs(got.Down-tc.want.Down) > 1e-9 || math.Abs(got.Up-tc.want.Up) > 1e-9 {
			t.Errorf("%s: StarvedBound(%s) = %+v, want %+v", tc.name, tc.metric, got, tc.want)
		}
	}
	open := &results.Cell{Requests: 100, Completed: 100, ReqS: results.Some(50.0), E2ELP50Ms: results.Some(100.0), ClientCPUWaitMs: results.Some(200.0)}
	// Little's law: 50 req/s × 0.1 s = 5 in flight; 200 × 5 / 100 × 2.
	if got := Starved("e2el_p50_ms", open); math.Abs(got-20) > 1e-9 {
		t.Errorf("an open loop's median: Starved = %v, want 20", got)
	}
}
