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

// TestServerStarvedShare: the local server's CPU wait moves a statistic
// by its share of the values (Markov), not every tail by the whole wait:
// 840 ms over 8 requests of 32 tokens at c=4 (248 gaps) may be all in a
// p99 of 248 gaps, 27 ms of their median; over 2,000 requests (62,000
// gaps) 5.4 ms of their p99. A server not on this machine (no
// server_cpu_wait_ms) moves nothing, and the client's wait is not the
// server's.
func TestServerStarvedShare(t *testing.T) {
	row := func(requests int64, wait *float64) *results.Cell {
		return &results.Cell{Concurrency: 4, Requests: requests, Completed: requests, OSL: 32, DurationS: 10,
			ServerCPUWaitMs: wait, ClientCPUWaitMs: results.Some(500.0)}
	}
	for _, tc := range []struct {
		name   string
		metric string
		c      *results.Cell
		want   float64
	}{
		{"a p99 of 248 gaps", "itl_p99_ms", row(8, results.Some(840.0)), 840},
		{"their median", "itl_p50_ms", row(8, results.Some(840.0)), 840 * 4 / (248 * 0.5)},
		{"a p99 of 62,000 gaps", "itl_p99_ms", row(2000, results.Some(840.0)), 840 * 4 / (62000 * 0.01)},
		{"a server elsewhere", "itl_p99_ms", row(8, nil), 0},
	} {
		got := ServerStarvedBound(tc.metric, tc.c)
		if math.Abs(got.Down-tc.want) > 1e-9 || math.Abs(got.Up-tc.want) > 1e-9 {
			t.Errorf("%s: ServerStarvedBound(%s) = %+v, want %v either way", tc.name, tc.metric, got, tc.want)
		}
	}
}
