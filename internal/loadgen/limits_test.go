package loadgen

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/machine/machinetest"
	"github.com/benchrun/benchrun/internal/sim"
	"github.com/benchrun/benchrun/internal/sim/simtest"
	"github.com/benchrun/benchrun/internal/stats"
)

// TestOpenLoopOverloadWaitsInsteadOfFailing: an open loop offered far
// more than the server carries keeps no more requests in flight than the
// client's own limit; the rest wait, keeping their scheduled time (send
// lag), and RunStats says how many did, instead of failing on file
// descriptors. The limit is lowered to 3 here; the simulator takes
// 100 ms a request.
func TestOpenLoopOverloadWaitsInsteadOfFailing(t *testing.T) {
	old := inflightLimit
	inflightLimit = func() int { return 3 }
	defer func() { inflightLimit = old }()
	srv, url := startSim(t, func(c *sim.Config) {
		c.TTFT = 100 * time.Millisecond
		c.ITL = 0
	})
	tg := newTarget(url, 8)
	tg.Stream = false
	defer tg.HTTP.CloseIdleConnections()
	var mu sync.Mutex
	var lags []float64
	st, err := Run(context.Background(), tg, Load{Schedule: &Schedule{Rate: 200, Arrival: ArrivalConstant}, Requests: 15}, func(i int) Request {
		return Request{Prompt: "x", MaxTokens: 1}
	}, func(i int, r Result) {
		if r.Err != nil {
			t.Error(r.Err)
		}
		mu.Lock()
		lags = append(lags, msf(r.SendLag()))
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	if st.InFlightLimit != 3 {
		t.Errorf("InFlightLimit %d, want 3 (no MaxInFlight was set)", st.InFlightLimit)
	}
	// The server's own stamps: how many requests it held at once.
	var spans [][2]time.Time
	for _, r := range srv.Records() {
		spans = append(spans, [2]time.Time{r.Received, r.Finished})
	}
	peak := PeakOverlap(spans)
	if len(spans) != 15 || peak > 3 {
		t.Errorf("the server saw %d requests, at most %d at once; want 15, at most the limit of 3", len(spans), peak)
	}
	// 15 requests due within 70 ms, 3 at a time for 100 ms each: 12 wait.
	if st.Held < 10 || st.Held > 12 {
		t.Errorf("Held %d, want about 12", st.Held)
	}
	// The last waits about 4 rounds of 100 ms less its 70 ms offset.
	if m := slices.Max(lags); m < 250 {
		t.Errorf("max send lag %.1f ms: the wait is hidden", m)
	}

	// A cap of the plan's own is not the client's: nothing is counted.
	st, err = Run(context.Background(), tg, Load{Schedule: &Schedule{Rate: 200, Arrival: ArrivalConstant}, Requests: 6, MaxInFlight: 2},
		func(int) Request { return Request{Prompt: "x", MaxTokens: 1} }, func(int, Result) {})
	if err != nil {
		t.Fatal(err)
	}
	if st.Held != 0 || st.InFlightLimit != 0 {
		t.Errorf("with max_inflight 2: Held %d, InFlightLimit %d, want 0 and 0", st.Held, st.InFlightLimit)
	}
}

// TestInFlightLimitLeavesRoom: the limit stays under the open-file limit
// with room for the rest of the process.
func TestInFlightLimitLeavesRoom(t *testing.T) {
	n, fds := InFlightLimit(), openFileLimit()
	if n < 64 || n > fds-fdReserve(fds) && n != 64 {
		t.Fatalf("InFlightLimit %d with an open-file limit of %d", n, fds)
	}
	if p := localPorts(); p > 0 && n > p {
		t.Fatalf("InFlightLimit %d exceeds the %d local ports", n, p)
	}
}

// behindRun sends n non-streamed requests of ttft each at rate req/s
// (constant arrivals), calling stall(i) before building request i, and
// returns the run's stats, each request's send lag (ms, by index), how
// many results came back and how many of them failed.
func behindRun(t *testing.T, ttft time.Duration, rate float64, n int, stall func(i int)) (st RunStats, lags []float64, done, failed int64) {
	t.Helper()
	_, url := startSim(t, func(c *sim.Config) {
		c.TTFT = ttft
		c.ITL = 0
	})
	tg := newTarget(url, 512)
	tg.Stream = false
	defer tg.HTTP.CloseIdleConnections()
	lags = make([]float64, n)
	var nDone, nFailed atomic.Int64
	st, err := Run(context.Background(), tg, Load{Schedule: &Schedule{Rate: rate, Arrival: ArrivalConstant}, Requests: n}, func(i int) Request {
		stall(i)
		return Request{Prompt: "x", MaxTokens: 1}
	}, func(i int, r Result) {
		nDone.Add(1)
		if r.Err != nil {
			nFailed.Add(1)
		}
		lags[i] = msf(r.SendLag())
	})
	if err != nil {
		t.Fatal(err)
	}
	return st, lags, nDone.Load(), nFailed.Load()
}

// TestOpenLoopBehindScheduleHoldsInFlight: a client that has fallen
// behind its schedule with many requests in flight sends one per request
// that ends instead of all the overdue ones at once, counts them as held
// (the client is the limit), and still sends and completes every one.
func TestOpenLoopBehindScheduleHoldsInFlight(t *testing.T) {
	st, _, done, failed := behindRun(t, 200*time.Millisecond, 1000, 500, func(i int) {
		if i == 120 {
			// A stall of the client's own: the 120 requests in flight
			// (200 ms each) end during it, and the next 250 are late
			// once it returns, more than the window lets go at once
			// over the 120 that were in flight on schedule.
			time.Sleep(250 * time.Millisecond)
		}
	})
	if st.Sent != 500 || done != 500 || failed != 0 {
		t.Fatalf("sent %d, done %d, failed %d; want 500, 500, 0", st.Sent, done, failed)
	}
	if st.Held == 0 {
		t.Errorf("no request was held while the client was behind its schedule")
	}
}

// TestOpenLoopBehindScheduleLongRequests: the same pause of the client's
// own with requests that last 2 s. No request ends for seconds, so a
// hold that waited for one held the backlog that long (send lag ~1.8 s
// here, 2.5 s at 4,096 streams after a collection); the backlog must go
// within a few of the client's behind periods instead.
func TestOpenLoopBehindScheduleLongRequests(t *testing.T) {
	st, lags, done, failed := behindRun(t, 2*time.Second, 500, 300, func(i int) {
		if i == 100 {
			// About 100 requests in flight (none ends before 2 s) and
			// the next 100 are late once this returns.
			time.Sleep(200*time.Millisecond + dispatchLead)
		}
	})
	if st.Sent != 300 || done != 300 || failed != 0 {
		t.Fatalf("sent %d, done %d, failed %d; want 300, 300, 0", st.Sent, done, failed)
	}
	l := stats.Summarize(lags)
	t.Logf("send lag ms p50 %.2f p99 %.2f max %.2f; %d sends held", l.P50, l.P99, l.Max, st.Held)
	if st.Held == 0 {
		t.Errorf("no send was held: the test no longer puts the client behind")
	}
	if l.Max > 400 {
		t.Errorf("send lag max %.0f ms after a 200 ms pause: the backlog waited for a request to end", l.Max)
	}
}

// TestOpenLoopBehindScheduleSteadyState: the sender alone stalls for
// 300 ms in the middle of a steady load of 500 ms requests, while
// requests keep ending. The window past which sends wait for one to end
// must grow from what was in flight on schedule: grown from what was left
// after the stall's completions, the backlog went one send per request
// that ended, at the schedule's own rate, and every later request left
// ~140 ms late to the end of the load.
func TestOpenLoopBehindScheduleSteadyState(t *testing.T) {
	const n, stallAt = 1200, 600
	machine := machinetest.Start()
	st, lags, _, failed := behindRun(t, 500*time.Millisecond, 400, n, func(i int) {
		if i == stallAt {
			time.Sleep(300 * time.Millisecond)
		}
	})
	if st.Sent != n || failed != 0 {
		t.Fatalf("sent %d, failed %d; want %d, 0", st.Sent, failed, n)
	}
	// Requests due from 200 ms after the stall ended: the backlog has
	// had time to go.
	after := stats.Summarize(lags[stallAt+120+80:])
	t.Logf("stall backlog: send lag ms max %.1f; due 200 ms after it: p50 %.2f p99 %.2f max %.2f; %d sends held",
		stats.Summarize(lags[stallAt:stallAt+120]).Max, after.P50, after.P99, after.Max, st.Held)
	// The defect left every later request ~140 ms late: the median says
	// so on any machine. The tail within 50 ms is a claim about a quiet
	// one (beside CPU-bound neighbours the client drains its backlog on
	// what CPU they leave it).
	if after.P50 > 50 {
		t.Errorf("send lag p50 %.0f ms for requests due 200 ms after a 300 ms stall of the sender: the backlog never drained", after.P50)
	}
	if after.P99 > 50 {
		machine.Judge(t, "the backlog of a 300 ms stall drained within 200 ms (send lag p99 under 50 ms)")
		t.Errorf("send lag p99 %.0f ms for requests due 200 ms after a 300 ms stall of the sender: the backlog drained late", after.P99)
	}
}

// gatedSim is the simulator (1 ms a request, non-streamed) behind a gate
// that holds request n (counted from 0 as they arrive), arriving at after
// the first, for hold(n, at) before the simulator answers it: a server
// that stops turning requests over for a while, or whose requests grow
// longer. peak is the most requests the server held at once.
type gatedSim struct {
	url  string
	srv  *sim.Server
	peak atomic.Int64
}

// stopped holds every request arriving in [from, to) until to.
func stopped(from, to time.Duration) func(int64, time.Duration) time.Duration {
	return func(_ int64, at time.Duration) time.Duration {
		if at >= from && at < to {
			return to - at
		}
		return 0
	}
}

func startGatedSim(t *testing.T, hold func(n int64, at time.Duration) time.Duration) *gatedSim {
	t.Helper()
	cfg := sim.DefaultConfig()
	cfg.EOSProb = 0
	cfg.MaxRecords = 20000
	cfg.TTFT, cfg.ITL = time.Millisecond, 0
	g := &gatedSim{srv: simtest.NewSimFrom(t, cfg)}
	var first, arrived, in atomic.Int64
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := in.Add(1)
		defer in.Add(-1)
		for p := g.peak.Load(); n > p && !g.peak.CompareAndSwap(p, n); p = g.peak.Load() {
		}
		now := time.Now().UnixNano()
		first.CompareAndSwap(0, now)
		time.Sleep(hold(arrived.Add(1)-1, time.Duration(now-first.Load())))
		g.srv.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
	})
	g.url = hs.URL
	return g
}

// gatedRun sends n requests at rate (constant arrivals) to a gated
// simulator (startGatedSim) and returns the gate, the run's stats and each
// request's send lag (ms). Every request must succeed.
func gatedRun(t *testing.T, rate float64, n int, hold func(int64, time.Duration) time.Duration, maxInFlight int) (*gatedSim, RunStats, []float64) {
	t.Helper()
	return gatedRunSchedule(t, Load{Schedule: &Schedule{Rate: rate, Arrival: ArrivalConstant}, Requests: n, MaxInFlight: maxInFlight}, hold)
}

// gatedRunSchedule is gatedRun for any open-loop load of l.Requests.
func gatedRunSchedule(t *testing.T, l Load, hold func(int64, time.Duration) time.Duration) (*gatedSim, RunStats, []float64) {
	t.Helper()
	g := startGatedSim(t, hold)
	tg := newTarget(g.url, 512)
	tg.Stream = false
	defer tg.HTTP.CloseIdleConnections()
	n, maxInFlight := l.Requests, l.MaxInFlight
	lags := make([]float64, n)
	var failed atomic.Int64
	st, err := Run(context.Background(), tg, l,
		func(int) Request { return Request{Prompt: "x", MaxTokens: 1} },
		func(i int, r Result) {
			if r.Err != nil {
				failed.Add(1)
			}
			lags[i] = msf(r.SendLag())
		})
	if err != nil {
		t.Fatal(err)
	}
	if st.Sent != n || failed.Load() != 0 {
		t.Fatalf("max_inflight %d: sent %d, failed %d; want %d, 0", maxInFlight, st.Sent, failed.Load(), n)
	}
	return g, st, lags
}

// TestOpenLoopShortRequestsServerStops: short requests at 5,000 a second
// to a server that stops turning them over for 300 ms. Sent on schedule,
// the 1,500 requests due meanwhile would each open a connection and wait
// at the server (the pile docs/METRICS.md, "Short requests and the
// server's turnover", measured). The client keeps in flight near what the
// server was turning over instead, counts the sends that waited (Paced,
// not Held: the server, not the client, was the limit), sends and
// completes every request, and drains the backlog once the server is back.
// A plan's own cap is the plan's choice: with one, the requests pile up
// to it.
//
// That the server held no more than the window, that no send was held by
// the client's own limit, that the waits were the window's, that the
// backlog drained within 300 ms and that a plan's cap let 1,000 pile up
// need a client that keeps 5,000 a second: claims about a quiet machine,
// judged last against it (each failed once beside a loaded suite; beside
// eight CPU-bound processes a starved client fell behind its schedule,
// held 2,387 sends by its own limit and then let 1,216 reach the server
// at once).
func TestOpenLoopShortRequestsServerStops(t *testing.T) {
	const rate, n = 5000, 5000
	const stopFrom, stopTo = 400 * time.Millisecond, 700 * time.Millisecond
	machine := machinetest.Start()
	var quietClaims []string
	g, st, lags := gatedRun(t, rate, n, stopped(stopFrom, stopTo), 0)
	// Due 300 ms after the server is back: the backlog has gone.
	after := stats.Summarize(lags[int((stopTo+300*time.Millisecond).Seconds()*rate):])
	t.Logf("server stopped 300 ms: peak in flight at the server %d, %d sends paced, %d held; send lag ms max %.1f, 300 ms after: p50 %.2f p99 %.2f",
		g.peak.Load(), st.Paced, st.Held, slices.Max(lags), after.P50, after.P99)
	// The window: 64, the requests sent within 4 of the quickest average
	// request time (a few dozen; 500 at most, the load being one of short
	// requests only while that time is 25 ms or less), and one per
	// millisecond waited (300).
	if p := g.peak.Load(); p > behindWindow+500+300 {
		quietClaims = append(quietClaims, fmt.Sprintf("the server held %d requests at once: in flight piled up while it was stopped (the schedule sent 1,500 meanwhile)", p))
	}
	if st.Held != 0 {
		quietClaims = append(quietClaims, fmt.Sprintf("%d sends held: want none held (the client's own limit), the server was the limit", st.Held))
	}
	if st.Paced == 0 {
		quietClaims = append(quietClaims, "no send paced: want the waits at the server's window counted as paced")
	}
	if slices.Max(lags) < 100 {
		t.Errorf("send lag max %.1f ms: the wait is hidden", slices.Max(lags))
	}
	if after.P50 > 50 {
		quietClaims = append(quietClaims, fmt.Sprintf("send lag p50 %.1f ms 300 ms after the server was back: the backlog never drained", after.P50))
	}

	g, st, _ = gatedRun(t, rate, n, stopped(stopFrom, stopTo), n)
	if st.Paced != 0 {
		t.Errorf("with max_inflight %d: %d sends paced; want none (the plan's cap is the plan's choice)", n, st.Paced)
	}
	if p := g.peak.Load(); p < 1000 {
		quietClaims = append(quietClaims, fmt.Sprintf("with max_inflight %d: the server held %d at once; want the pile the plan allowed (over 1,000)", n, p))
	}
	if len(quietClaims) > 0 {
		t.Log(strings.Join(quietClaims, "\n"))
		machine.Judge(t, "a client keeping 5,000 requests a second beside a stopped server")
		t.Error(strings.Join(quietClaims, "\n"))
	}
}

// TestOpenLoopShortRequestsLongStop: a server that stops for 2.5 s gets
// at most shortSlack more requests than the window of short requests
// allowed before it stopped, however long it stays stopped (the 5,000 due
// meanwhile at 2,000 a second would otherwise reach it one a millisecond
// waited: about 2,000).
func TestOpenLoopShortRequestsLongStop(t *testing.T) {
	g, st, _ := gatedRun(t, 2000, 6000, stopped(200*time.Millisecond, 2700*time.Millisecond), 0)
	t.Logf("server stopped 2.5 s: peak in flight at the server %d, %d sends paced", g.peak.Load(), st.Paced)
	// 64, the requests sent within 4 of the quickest average request time
	// (2,000 a second: a few, 200 at most at 25 ms), and shortSlack.
	if p := g.peak.Load(); p > behindWindow+shortSlack+200 {
		t.Errorf("the server held %d requests at once: the window grew past its %d", p, shortSlack)
	}
}

// TestOpenLoopShortRequestsBurst: a burst of the schedule's own goes at
// once: 300 short requests due at the same instant after a steady start of
// 20 ms ones all reach the server together (it holds each of them until
// all 300 have come, or 5 s), and none waits for another to end.
func TestOpenLoopShortRequestsBurst(t *testing.T) {
	const steady, burst = 40, 300
	var trace []time.Duration
	for i := range steady {
		trace = append(trace, time.Duration(i)*5*time.Millisecond)
	}
	for range burst {
		trace = append(trace, 250*time.Millisecond)
	}
	var came atomic.Int64
	g, st, _ := gatedRunSchedule(t, Load{Schedule: &Schedule{Trace: trace}, Requests: len(trace)}, func(n int64, _ time.Duration) time.Duration {
		if n < steady {
			return 19 * time.Millisecond
		}
		came.Add(1)
		for end := time.Now().Add(5 * time.Second); came.Load() < burst && time.Now().Before(end); {
			time.Sleep(time.Millisecond)
		}
		return 0
	})
	t.Logf("burst of %d: the server held %d at once; %d sends paced", burst, g.peak.Load(), st.Paced)
	if g.peak.Load() < burst || st.Paced != 0 {
		t.Errorf("the server held %d at once and %d sends were paced; want the whole burst of %d at once, none paced", g.peak.Load(), st.Paced, burst)
	}
}

// TestOpenLoopShortRegimeNeedsSeveralRequests: a few quick answers at the
// start of a load of 200 ms requests do not make it one of short requests:
// none of its sends waits for another to end.
func TestOpenLoopShortRegimeNeedsSeveralRequests(t *testing.T) {
	g, st, _ := gatedRun(t, 500, 800, func(n int64, _ time.Duration) time.Duration {
		if n < 5 {
			return 0
		}
		return 200 * time.Millisecond
	}, 0)
	t.Logf("5 quick answers, then 200 ms ones: peak at the server %d, %d sends paced", g.peak.Load(), st.Paced)
	if st.Paced != 0 {
		t.Errorf("%d sends paced: five quick answers made a load of 200 ms requests one of short requests", st.Paced)
	}
}
