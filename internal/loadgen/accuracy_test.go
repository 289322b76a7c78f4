package loadgen

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/machine/machinetest"
	"github.com/benchrun/benchrun/internal/sim"
	"github.com/benchrun/benchrun/internal/stats"
)

// TestMeasurementErrorAgainstSimulator compares every event stamp the
// client took with the time the simulator wrote that event (both from the
// same monotonic clock, in one process): the difference is benchrun's
// measurement error. The bounds are tight enough to fail when the client
// stamps late (after parsing a batch, after [DONE], on a slow path).
func TestMeasurementErrorAgainstSimulator(t *testing.T) {
	if testing.Short() {
		t.Skip("accuracy runs take seconds")
	}
	for _, tc := range []struct {
		conc, requests, osl int
		itl                 time.Duration
		// bounds on |client stamp - server write| in ms, and on the ttft
		// the client sees beyond the server's own (the request's trip,
		// which at 256 simultaneous sends includes the server parsing
		// them all on this 2-core machine)
		p50, p99, ttftP50, ttftP99 float64
	}{
		{conc: 1, requests: 10, osl: 32, itl: 5 * time.Millisecond, p50: 0.5, p99: 2, ttftP50: 2, ttftP99: 5},
		{conc: 64, requests: 128, osl: 32, itl: 10 * time.Millisecond, p50: 1, p99: 8, ttftP50: 10, ttftP99: 40},
		{conc: 256, requests: 256, osl: 16, itl: 25 * time.Millisecond, p50: 2, p99: 25, ttftP50: 50, ttftP99: 100},
	} {
		t.Run("c"+itoa(tc.conc), func(t *testing.T) {
			machine := machinetest.Start()
			srv, url := startSim(t, func(c *sim.Config) {
				c.TTFT = 10 * time.Millisecond
				c.ITL = tc.itl
			})
			tg := newTarget(url, tc.conc)
			defer tg.HTTP.CloseIdleConnections()
			var mu sync.Mutex
			var rs []Result
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			// One warm-up pass at the same concurrency opens the connections,
			// as the sweep's warm-up does; the dial storm is not what we time.
			RunClosed(ctx, tg, tc.conc, tc.conc, func(i int) Request {
				return Request{Prompt: "warm", MaxTokens: 1}
			}, func(int, Result) {})
			srv.ResetRecords()
			RunClosed(ctx, tg, tc.conc, tc.requests, func(i int) Request {
				return Request{Prompt: "the quick brown fox", MaxTokens: tc.osl, Body: map[string]any{"ignore_eos": true}}
			}, func(i int, r Result) {
				mu.Lock()
				rs = append(rs, r)
				mu.Unlock()
			})
			var errs, absErrs, ttftErr []float64
			for _, r := range rs {
				if r.Err != nil {
					t.Fatalf("request failed: %v", r.Err)
				}
				rec, ok := srv.Record(r.ResponseID)
				if !ok {
					t.Fatalf("no simulator record for response %q", r.ResponseID)
				}
				if len(rec.Events) != len(r.Tokens) {
					t.Fatalf("%s: client saw %d token events, the simulator wrote %d", r.ResponseID, len(r.Tokens), len(rec.Events))
				}
				if r.OutputTokens != tc.osl || r.InputTokens != 4 {
					t.Fatalf("%s: usage %d/%d, want 4/%d", r.ResponseID, r.InputTokens, r.OutputTokens, tc.osl)
				}
				for k, ev := range rec.Events {
					if k > 0 && r.Tokens[k].At.Before(r.Tokens[k-1].At) {
						t.Errorf("%s: event %d stamped %v before the one it follows: a negative gap", r.ResponseID, k, r.Tokens[k-1].At.Sub(r.Tokens[k].At))
					}
					d := msf(r.Tokens[k].At.Sub(ev.Time))
					errs = append(errs, d)
					absErrs = append(absErrs, math.Abs(d))
					if r.Tokens[k].Tokens != ev.Tokens {
						t.Fatalf("event %d: client counts %d tokens, simulator wrote %d", k, r.Tokens[k].Tokens, ev.Tokens)
					}
				}
				// The client's ttft includes the request's trip to the server:
				// it may exceed the server's view only by that trip.
				ttftErr = append(ttftErr, msf(r.TTFT())-msf(rec.Events[0].Time.Sub(rec.Received)))
			}
			s := stats.Summarize(absErrs)
			signed := stats.Summarize(errs)
			tt := stats.Summarize(ttftErr)
			t.Logf("c=%d: %d events, |client - server| ms: p50 %.3f p90 %.3f p99 %.3f max %.3f (signed mean %.3f); ttft excess ms p50 %.3f p99 %.3f",
				tc.conc, s.N, s.P50, s.P90, s.P99, s.Max, signed.Mean, tt.P50, tt.P99)
			if s.N != tc.requests*tc.osl {
				t.Fatalf("compared %d events, want %d", s.N, tc.requests*tc.osl)
			}
			// The median stamp error holds on any machine (a client that
			// stamps 2 ms late fails it at every concurrency); so does a
			// ttft shorter than the server's own. The tails and the trip
			// are claims about a quiet machine: beside busy neighbours
			// every process waits for a core, and they are inconclusive.
			if s.P50 > tc.p50 {
				t.Errorf("measurement error p50 %.3f ms (bound %.1f)", s.P50, tc.p50)
			}
			if tt.P50 < 0 {
				t.Errorf("the client's ttft a median %.3f ms under the server's own view", -tt.P50)
			}
			var tails []string
			if s.P99 > tc.p99 {
				tails = append(tails, fmt.Sprintf("measurement error p99 %.3f ms (bound %.1f)", s.P99, tc.p99))
			}
			if tt.P50 > tc.ttftP50 || tt.P99 > tc.ttftP99 {
				tails = append(tails, fmt.Sprintf("ttft excess over the server's own view: p50 %.3f ms (bound %.0f), p99 %.3f ms (bound %.0f)", tt.P50, tc.ttftP50, tt.P99, tc.ttftP99))
			}
			if len(tails) > 0 {
				t.Log(strings.Join(tails, "; "))
				machine.Judge(t, "the stamp error's p99 and the request's trip within their bounds")
				t.Error(strings.Join(tails, "; "))
			}
		})
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}
