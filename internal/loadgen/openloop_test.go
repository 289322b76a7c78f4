package loadgen

import (
	"context"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/machine/machinetest"
	"github.com/benchrun/benchrun/internal/sim"
	"github.com/benchrun/benchrun/internal/stats"
)

// TestPoissonScheduleHitsTargetRate sends 10,000 requests on a Poisson
// schedule and checks, from the simulator's own arrival stamps, that the
// server saw the target rate within 2%. That is a claim about a quiet
// machine: beside four CPU-bound processes the client and the simulator
// together got a third of the two cores and the server saw 26% less, so
// there the precision is inconclusive (measuretest), while every request
// must still be sent and answered.
func TestPoissonScheduleHitsTargetRate(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 10,000 requests")
	}
	const rate, n = 2500.0, 10000
	srv, url := startSim(t, func(c *sim.Config) {
		c.TTFT = time.Millisecond
		c.ITL = 0
	})
	tg := newTarget(url, 256)
	tg.Stream = false
	defer tg.HTTP.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var failed atomic.Int64
	var mu sync.Mutex
	var lags []float64
	machine := machinetest.Start()
	st, err := Run(ctx, tg, Load{Schedule: &Schedule{Rate: rate, Arrival: ArrivalPoisson, Seed: 42}, Requests: n}, func(i int) Request {
		return Request{Prompt: "a b c", MaxTokens: 1}
	}, func(i int, r Result) {
		if r.Err != nil {
			failed.Add(1)
		}
		mu.Lock()
		lags = append(lags, msf(r.SendLag()))
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	if st.Sent != n || failed.Load() != 0 {
		t.Fatalf("sent %d (want %d), %d failed", st.Sent, n, failed.Load())
	}
	recs := srv.Records()
	if len(recs) != n {
		t.Fatalf("the simulator saw %d requests, want %d", len(recs), n)
	}
	var first, last time.Time
	for _, r := range recs {
		if first.IsZero() || r.Received.Before(first) {
			first = r.Received
		}
		if r.Received.After(last) {
			last = r.Received
		}
	}
	got := float64(n-1) / last.Sub(first).Seconds()
	lag := stats.Summarize(lags)
	t.Logf("target %.0f req/s, the server saw %.1f req/s (%+.2f%%); send lag ms p50 %.3f p99 %.3f max %.3f",
		rate, got, 100*(got/rate-1), lag.P50, lag.P99, lag.Max)
	machine.Judge(t, "the server seeing the target rate within 2%")
	if math.Abs(got/rate-1) > 0.02 {
		t.Fatalf("achieved rate %.1f req/s is more than 2%% from the target %.0f", got, rate)
	}
	// The 2% holds the process and the client together; the client alone
	// must reproduce the schedule it drew (its own realized rate) closely,
	// so sampling luck cannot hide a client that drifts.
	gen := (&Schedule{Rate: rate, Arrival: ArrivalPoisson, Seed: 42}).NewGenerator()
	var firstOff, lastOff time.Duration
	for i := 0; i < n; i++ {
		off := gen.Next()
		if i == 0 {
			firstOff = off
		}
		lastOff = off
	}
	drawn := float64(n-1) / (lastOff - firstOff).Seconds()
	t.Logf("the schedule drawn: %.1f req/s (%+.2f%% from the target); the server saw %+.2f%% from it", drawn, 100*(drawn/rate-1), 100*(got/drawn-1))
	if math.Abs(got/drawn-1) > 0.01 {
		t.Errorf("the server saw %.1f req/s, %.2f%% from the %.1f req/s the schedule drew", got, 100*(got/drawn-1), drawn)
	}
}

func TestScheduleDistributions(t *testing.T) {
	const n = 20000
	for _, tc := range []struct {
		name string
		s    Schedule
		cv   float64 // coefficient of variation of the gaps: 1/sqrt(k)
	}{
		{"constant", Schedule{Rate: 100, Arrival: ArrivalConstant}, 0},
		{"poisson", Schedule{Rate: 100, Arrival: ArrivalPoisson, Seed: 1}, 1},
		{"gamma bursty", Schedule{Rate: 100, Arrival: ArrivalGamma, Burstiness: 0.25, Seed: 2}, 2},
		{"gamma smooth", Schedule{Rate: 100, Arrival: ArrivalGamma, Burstiness: 4, Seed: 3}, 0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			offs := tc.s.Offsets(n, 0)
			if len(offs) != n || offs[0] != 0 {
				t.Fatalf("got %d offsets starting at %v", len(offs), offs[0])
			}
			gaps := make([]float64, n-1)
			for i := 1; i < n; i++ {
				gaps[i-1] = (offs[i] - offs[i-1]).Seconds()
			}
			m := stats.Mean(gaps)
			var v float64
			for _, g := range gaps {
				v += (g - m) * (g - m)
			}
			cv := math.Sqrt(v/float64(len(gaps))) / m
			// Mean gap 1/λ within 4% (several standard errors for n=20k even at cv 2).
			if math.Abs(m*tc.s.Rate-1) > 0.04 {
				t.Errorf("mean gap %.5f s, want %.5f", m, 1/tc.s.Rate)
			}
			if math.Abs(cv-tc.cv) > 0.06*max(tc.cv, 1) {
				t.Errorf("gap cv %.3f, want %.3f", cv, tc.cv)
			}
			// Reproducible from the seed.
			if again := tc.s.Offsets(n, 0); !slices.Equal(again, offs) {
				t.Error("the same seed gave another schedule")
			}
		})
	}
}

func TestScheduleRampAndDuration(t *testing.T) {
	s := Schedule{Rate: 100, Arrival: ArrivalConstant, Ramp: Ramp{Kind: RampLinear, From: 10, Duration: 2 * time.Second}}
	offs := s.Offsets(0, 4*time.Second)
	// Linear ramp 10→100 over 2 s sends ∫λ = 110 requests, then 200 in 2 s.
	if len(offs) < 300 || len(offs) > 320 {
		t.Errorf("linear ramp + hold sent %d requests in 4 s, want about 310", len(offs))
	}
	if g := offs[1] - offs[0]; g != 100*time.Millisecond {
		t.Errorf("first gap %v, want 100ms (the ramp's starting rate)", g)
	}
	// A constant rate for a duration sends exactly rate × duration: the
	// offsets must not drift early (3,000 gaps of 333,333.3 ns truncated
	// to whole nanoseconds put a 15,001st request before 5 s).
	for _, c := range []struct {
		rate float64
		d    time.Duration
		want int
	}{{3000, 5 * time.Second, 15000}, {7, time.Second, 7}, {30000, 2 * time.Second, 60000}} {
		if got := len((Schedule{Rate: c.rate, Arrival: ArrivalConstant}).Offsets(0, c.d)); got != c.want {
			t.Errorf("constant %g/s for %v: %d requests, want %d", c.rate, c.d, got, c.want)
		}
	}
	e := Schedule{Rate: 100, Arrival: ArrivalConstant, Ramp: Ramp{Kind: RampExponential, From: 10, Duration: 2 * time.Second}}
	eo := e.Offsets(0, 4*time.Second)
	// Exponential 10→100 over 2 s: ∫ = 10·2·9/ln(10) ≈ 78 requests in the ramp.
	if len(eo) < 265 || len(eo) > 290 {
		t.Errorf("exponential ramp + hold sent %d requests in 4 s, want about 278", len(eo))
	}
	for _, bad := range []Schedule{{Rate: 0}, {Rate: 1, Arrival: "weird"}, {Rate: 1, Arrival: ArrivalGamma}, {Rate: 1, Ramp: Ramp{Kind: "zigzag", From: 1, Duration: time.Second}}} {
		if bad.Validate() == nil {
			t.Errorf("%+v: accepted", bad)
		}
	}
}

// TestOpenLoopInflightCapKeepsSchedule: a request held back by the cap
// keeps its scheduled time, so its wait shows as send lag (no coordinated
// omission).
func TestOpenLoopInflightCapKeepsSchedule(t *testing.T) {
	_, url := startSim(t, func(c *sim.Config) {
		c.TTFT = 100 * time.Millisecond
		c.ITL = 0
	})
	tg := newTarget(url, 8)
	tg.Stream = false
	defer tg.HTTP.CloseIdleConnections()
	var mu sync.Mutex
	var lags []float64
	_, err := Run(context.Background(), tg, Load{Schedule: &Schedule{Rate: 100, Arrival: ArrivalConstant}, Requests: 20, MaxInFlight: 2}, func(i int) Request {
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
	// 2 in flight at 100 ms each serve 20 req/s, but the schedule asks
	// 100/s: the last request waits about (20/2)*100 ms - 190 ms = 810 ms.
	if m := slices.Max(lags); m < 600 {
		t.Fatalf("max send lag %.1f ms; the cap's wait is hidden", m)
	}
}

func TestLoadStopsAndValidates(t *testing.T) {
	_, url := startSim(t, func(c *sim.Config) { c.TTFT = 0; c.ITL = 0 })
	tg := newTarget(url, 4)
	defer tg.HTTP.CloseIdleConnections()
	count := func(l Load) int {
		var n atomic.Int64
		if _, err := Run(context.Background(), tg, l, func(i int) Request { return Request{Prompt: "x", MaxTokens: 2} }, func(int, Result) { n.Add(1) }); err != nil {
			t.Fatal(err)
		}
		return int(n.Load())
	}
	if got := count(Load{Concurrency: 3, Requests: 10}); got != 10 {
		t.Errorf("closed loop of 10 requests sent %d", got)
	}
	if got := count(Load{Concurrency: 2, Requests: 5, MinRequests: 12}); got != 12 {
		t.Errorf("minimum of 12 requests: sent %d", got)
	}
	start := time.Now()
	if got := count(Load{Concurrency: 2, Duration: 200 * time.Millisecond}); got == 0 || time.Since(start) > 2*time.Second {
		t.Errorf("duration stop: %d requests in %v", got, time.Since(start))
	}
	if got := count(Load{Schedule: &Schedule{Rate: 200, Arrival: ArrivalConstant}, Duration: 100 * time.Millisecond}); got != 20 {
		t.Errorf("open loop 200/s for 100 ms sent %d, want 20", got)
	}
	for _, bad := range []Load{{Concurrency: 0, Requests: 1}, {Concurrency: 1}, {Schedule: &Schedule{Rate: -1}, Requests: 1}} {
		if _, err := Run(context.Background(), tg, bad, nil, nil); err == nil {
			t.Errorf("%+v: accepted", bad)
		}
	}
}
