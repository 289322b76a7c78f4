package sweep

import (
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/loadgen"
	"github.com/benchrun/benchrun/internal/measure"
	"github.com/benchrun/benchrun/internal/results"
)

// TestFillRowFormulas holds every docs/METRICS.md formula to numbers
// worked out by hand, on results whose times are exact (the end-to-end
// tests compare with the simulator, where timers are never exact).
func TestFillRowFormulas(t *testing.T) {
	t0 := time.Now()
	at := func(msec float64) time.Time { return t0.Add(time.Duration(msec * float64(time.Millisecond))) }
	ev := func(msec float64, tok int) loadgen.TokenEvent { return loadgen.TokenEvent{At: at(msec), Tokens: tok} }
	rs := []loadgen.Result{
		// A: scheduled at 0, sent at 2 (lag 2), tokens at 12, 22, 32: ttft
		// 10, e2el 30, 3 tokens so tpot 10; [DONE] at 50 must not count.
		{Scheduled: at(0), Sent: at(2), Tokens: []loadgen.TokenEvent{ev(12, 1), ev(22, 1), ev(32, 1)}, Finished: at(50),
			InputTokens: 10, OutputTokens: 3, UsageReported: true},
		// B: sent on time at 100, a 2-token chunk at 140 and one at 160:
		// ttft 40 (misses the 20 ms ttft SLO), e2el 60, tpot (60-40)/2 = 10,
		// itl 20 and itl_tok 20/1.
		{Scheduled: at(100), Sent: at(100), Tokens: []loadgen.TokenEvent{ev(140, 2), ev(160, 1)}, Finished: at(200),
			InputTokens: 20, OutputTokens: 3, UsageReported: true, TokensEstimated: true},
		// C: failed after one token and 15 ms of lag: counted, never timed.
		{Scheduled: at(300), Sent: at(315), Tokens: []loadgen.TokenEvent{ev(316, 1)}, Finished: at(320),
			Err: errors.New("reading stream after 1 token events: unexpected EOF")},
	}
	var row results.Cell
	row.ISL, row.OSL = 16, 3
	cfg := Config{Prompts: "cold", SendLagThresholdMs: 5}
	fillRowFrom(&row, rs, 2*time.Second, spanOf(rs), []float64{90, 95}, cfg, measure.SLO{TTFTMs: 20})

	near := func(name string, got *float64, want float64) {
		t.Helper()
		if got == nil {
			t.Errorf("%s = null, want %v", name, want)
		} else if math.Abs(*got-want) > 1e-6 {
			t.Errorf("%s = %v, want %v", name, *got, want)
		}
	}
	if row.Completed != 2 || row.Failed != 1 {
		t.Fatalf("completed %d failed %d", row.Completed, row.Failed)
	}
	near("ttft mean", row.TTFTMs, 25)
	near("ttft p50", row.TTFTP50Ms, 25)            // linear between 10 and 40
	near("ttft p90", row.TTFTP90Ms, 37)            // 10 + 0.9*30
	near("ttft max", row.TTFTMaxMs, 40)            // not C's 1 ms
	near("ttft_sched p50", row.TTFTSchedP50Ms, 26) // 12 and 40
	near("e2el max", row.E2ELMaxMs, 60)            // to the last token, not [DONE]
	near("e2el_sched mean", row.E2ELSchedMs, 46)   // 32 and 60
	near("tpot mean", row.TPOTMs, 10)
	near("itl p50", row.ITLP50Ms, 10) // pooled gaps 10, 10, 20
	near("itl max", row.ITLMaxMs, 20)
	near("itl_tok max", row.ITLTokMaxMs, 20) // B's second gap carries 1 token
	near("ntpot", row.NTPOTMs, (10+20)/2.0)
	near("send_lag max", row.SendLagMaxMs, 15) // the failed request's lag counts
	near("send_lag mean", row.SendLagMs, (2+0+15)/3.0)
	near("duration", &row.DurationS, 2)
	near("req_s", row.ReqS, 1)
	// The offered rate over the send window: 2 intervals between sends at
	// 2, 100 and 315 ms, not 3 requests over the 2 s completion window.
	near("sent_req_s", row.SentReqS, 2/0.313)
	near("output_tok_s", row.OutputTokS, 3)
	near("total_tok_s", row.TotalTokS, 18)
	near("prefill_tok_s", row.PrefillTokS, 30/0.050) // Σ N_in / Σ ttft
	near("goodput", row.Goodput, 0.5)                // only A meets ttft ≤ 20
	near("goodput_ratio", row.GoodputRatio, 1/3.0)
	near("effective isl", row.EffectiveISL, 15)
	near("effective osl", row.EffectiveOSL, 3)
	if row.Status != results.StatusError || row.Reason != "1 of 3 requests failed; first: reading stream after 1 token events: unexpected EOF" {
		t.Errorf("status %s reason %q", row.Status, row.Reason)
	}
	for _, want := range []string{"client-bound: send_lag p99", "still cold after warm-up", "estimated as an even share (1 requests", "failed requests never count", "effective isl 15.0 differs from the 16 asked"} {
		if !strings.Contains(row.Notes, want) {
			t.Errorf("notes %q lack %q", row.Notes, want)
		}
	}

	// Every request fails: no latency figure at all (null, not 0: zero is
	// a measurement), measured zero throughput over the window, and the
	// reason says so.
	var bad results.Cell
	fillRowFrom(&bad, rs[2:], time.Second, spanOf(rs[2:]), nil, cfg, measure.SLO{})
	if bad.Completed != 0 || bad.Failed != 1 || bad.Status != results.StatusError {
		t.Errorf("all failed: %+v", bad)
	}
	for name, p := range map[string]*float64{
		"ttft_ms": bad.TTFTMs, "ttft_p99_ms": bad.TTFTP99Ms, "ttft_sched_p99_ms": bad.TTFTSchedP99Ms, "e2el_max_ms": bad.E2ELMaxMs,
		"itl_max_ms": bad.ITLMaxMs, "itl_tok_p50_ms": bad.ITLTokP50Ms, "tpot_ms": bad.TPOTMs, "ntpot_ms": bad.NTPOTMs,
		"prefill_tok_s": bad.PrefillTokS, "effective_isl": bad.EffectiveISL, "effective_osl": bad.EffectiveOSL,
		"sent_req_s": bad.SentReqS, // one send: no interval to make a rate of
	} {
		if p != nil {
			t.Errorf("all failed: %s = %v, want null (not measured)", name, *p)
		}
	}
	for name, p := range map[string]*float64{"req_s": bad.ReqS, "output_tok_s": bad.OutputTokS, "decode_tok_s": bad.DecodeTokS,
		"total_tok_s": bad.TotalTokS, "goodput": bad.Goodput, "goodput_ratio": bad.GoodputRatio} {
		near(name+" (all failed: a measured zero)", p, 0)
	}
	near("send_lag max (all failed: sent, so measured)", bad.SendLagMaxMs, 15)

	// Nothing sent: no window, so not even the throughputs are measured.
	var none results.Cell
	fillRowFrom(&none, nil, 0, sendSpan{}, nil, cfg, measure.SLO{})
	if none.ReqS != nil || none.Goodput != nil || none.GoodputRatio != nil || none.SendLagP99 != nil || none.Status != results.StatusError {
		t.Errorf("nothing sent: req_s %v goodput %v ratio %v send lag %v status %s; want every metric null", none.ReqS, none.Goodput, none.GoodputRatio, none.SendLagP99, none.Status)
	}
}

// A closed loop has no send lag by definition; the client's own CPU share
// is what shows it could not keep up, and the notes say so.
func TestClientCPUSaturationIsNoted(t *testing.T) {
	t0 := time.Now()
	rs := []loadgen.Result{{Scheduled: t0, Sent: t0, Tokens: []loadgen.TokenEvent{{At: t0.Add(time.Millisecond), Tokens: 1}}, Finished: t0.Add(2 * time.Millisecond), OutputTokens: 1}}
	for _, tc := range []struct {
		util float64
		note bool
	}{{0.1, false}, {float64(runtime.NumCPU()), true}} {
		row := results.Cell{ClientCPUUtil: results.Some(tc.util)}
		fillRowFrom(&row, rs, time.Second, spanOf(rs), nil, Config{SendLagThresholdMs: 5}, measure.SLO{})
		if got := strings.Contains(row.Notes, "client-bound: benchrun itself used"); got != tc.note {
			t.Errorf("util %.2f: notes %q", tc.util, row.Notes)
		}
	}
}

// Requests the client held back (behind its schedule, or at its own
// in-flight limit) are the client's limit, and the notes say so; short
// requests that waited for the server's turnover are the server's, and
// the notes say that instead.
func TestClientInFlightLimitIsNoted(t *testing.T) {
	t0 := time.Now()
	rs := []loadgen.Result{{Scheduled: t0, Sent: t0, Tokens: []loadgen.TokenEvent{{At: t0.Add(time.Millisecond), Tokens: 1}}, Finished: t0.Add(2 * time.Millisecond), OutputTokens: 1}}
	const clientBound = "client-bound: 7 requests were held back by the client and left late (behind its schedule it sends one request per request that ends, and it holds at most 18750 connections"
	const serverPaced = "server-paced: 5 requests waited for one in flight to end and left late"
	for _, tc := range []struct {
		held, paced    int
		client, server bool
	}{
		{0, 0, false, false},
		{7, 0, true, false},
		{0, 5, false, true},
		{7, 5, true, true},
	} {
		var row results.Cell
		sp := spanOf(rs)
		sp.held, sp.limit, sp.paced = tc.held, 18750, tc.paced
		fillRowFrom(&row, rs, time.Second, sp, nil, Config{SendLagThresholdMs: 5}, measure.SLO{})
		if strings.Contains(row.Notes, clientBound) != tc.client || strings.Contains(row.Notes, serverPaced) != tc.server {
			t.Errorf("held %d, paced %d: notes %q", tc.held, tc.paced, row.Notes)
		}
	}
}

// TestClientCPUUtil: the client's CPU in cores over a span long enough to
// say so; a pass whose requests were all refused within a millisecond
// (once read as 4.59 of 2 cores) gives none.
func TestClientCPUUtil(t *testing.T) {
	for _, tc := range []struct {
		cpu, wall time.Duration
		want      *float64
	}{
		{4590 * time.Microsecond, time.Millisecond, nil},
		{49 * time.Millisecond, 49 * time.Millisecond, nil},
		{150 * time.Millisecond, time.Second, results.Some(0.15)},
		{2 * time.Second, time.Second, results.Some(2.0)},
	} {
		got := clientCPUUtil(tc.cpu, tc.wall)
		if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
			t.Errorf("clientCPUUtil(%v, %v) = %v, want %v", tc.cpu, tc.wall, got, tc.want)
		}
	}
}

// fillRowFrom is fillRow over results a test holds whole: their rows and
// their tally, as a pass makes them when each finishes.
func fillRowFrom(row *results.Cell, rs []loadgen.Result, window time.Duration, sends sendSpan, warmTTFT []float64, cfg Config, slo measure.SLO) []results.Request {
	reqs, _ := results.CollectRequests(fillRow(row, tallyResults(rs, ""), results.RequestSlice(loadgen.RequestRows(*row, rs)), window, sends, warmTTFT, cfg, slo))
	return reqs
}

func spanOf(rs []loadgen.Result) sendSpan {
	if len(rs) < 2 {
		return sendSpan{}
	}
	first, last := rs[0].Sent, rs[0].Sent
	for _, r := range rs {
		if r.Sent.Before(first) {
			first = r.Sent
		}
		if r.Sent.After(last) {
			last = r.Sent
		}
	}
	return sendSpan{intervals: len(rs) - 1, span: last.Sub(first)}
}
