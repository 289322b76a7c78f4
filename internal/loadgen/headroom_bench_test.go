package loadgen

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/machine"
	"github.com/benchrun/benchrun/internal/stats"
)

// The headroom benchmarks measure what benchrun's client can carry on this
// machine against a simulator process on the same cores: numbers, printed,
// never pass/fail. Each reports the client's CPU per unit of work
// (events/client-cpu-s: events per second per core), allocations per
// unit, the GC's share of the client's CPU, and the cores each process
// used, and logs the load average (the machine may be shared).
//
//	go test -run '^$' -bench Headroom -benchtime 1x ./internal/loadgen

// BenchmarkHeadroomStreams holds N concurrent streams open against a
// simulator process, sent on an open-loop schedule, and reports the send
// lag (the client keeping its schedule) and the client's memory per
// in-flight stream.
func BenchmarkHeadroomStreams(b *testing.B) {
	gogc := tuneLikeCLI(b)
	for _, n := range benchSizes("BENCHRUN_HEADROOM_STREAMS", []int{1024, 2048, 4096}) {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			// Each stream lasts ~4 s (40 events, 100 ms apart); sending n
			// over 2 s keeps all n in flight at the peak.
			sp := startSimChild(b, 0, 100*time.Millisecond)
			tg := newTarget(sp.URL, n)
			defer tg.HTTP.CloseIdleConnections()
			// Memory is counted from before the warm-up, so a stream's
			// connection (buffers, transport goroutines) is part of its cost.
			base := memNow()
			// A warm-up pass opens the connections, as the sweep's warm-up
			// does; the timed pass then measures streams, not TCP dials.
			warm := func(int) Request {
				return Request{Prompt: "w", MaxTokens: 40, Body: map[string]any{"ignore_eos": true}}
			}
			if _, err := Run(context.Background(), tg, Load{Schedule: &Schedule{Rate: float64(n) / 2, Arrival: ArrivalConstant}, Requests: n}, warm, func(int, Result) {}); err != nil {
				b.Fatal(err)
			}
			for i := 0; i < b.N; i++ {
				var inflight, peak atomic.Int64
				var peakMem atomic.Uint64
				stop := make(chan struct{})
				var sampler sync.WaitGroup
				sampler.Add(1)
				go func() {
					defer sampler.Done()
					t := time.NewTicker(200 * time.Millisecond)
					defer t.Stop()
					for {
						select {
						case <-stop:
							return
						case <-t.C:
							if f := inflight.Load(); f >= peak.Load() {
								peak.Store(f)
								peakMem.Store(InUseMemory())
							}
						}
					}
				}()
				var mu sync.Mutex
				var lags []float64
				var scheduled []time.Time
				var failed, events atomic.Int64
				rate := float64(n) / 2
				probe, err := machine.StartProbe()
				if err != nil {
					b.Fatal(err)
				}
				probe.Keep() // kept open: reportFloor reads every sample since
				m := startMeter(sp.Pid)
				_, err = Run(context.Background(), tg, Load{Schedule: &Schedule{Rate: rate, Arrival: ArrivalPoisson, Seed: 1}, Requests: n},
					func(i int) Request {
						inflight.Add(1)
						// Forced output length, as a sweep with force_osl sends.
						return Request{Prompt: "one two three four", MaxTokens: 40, ExpectTokens: 40, Body: map[string]any{"ignore_eos": true, "min_tokens": 40}}
					}, func(i int, r Result) {
						inflight.Add(-1)
						if r.Err != nil {
							failed.Add(1)
						}
						events.Add(int64(len(r.Tokens)))
						mu.Lock()
						lags = append(lags, msf(r.SendLag()))
						scheduled = append(scheduled, r.Scheduled)
						mu.Unlock()
					})
				c := m.since()
				close(stop)
				sampler.Wait()
				if err != nil {
					b.Fatal(err)
				}
				floor := reportFloor(b, probe, scheduled)
				l := stats.Summarize(lags)
				// The client's own share of the send lag: what the machine
				// let no client avoid (the floor, measured in the same pass)
				// taken off.
				b.ReportMetric(l.P99-floor, "send-lag-over-floor-p99-ms")
				perStream := float64(peakMem.Load()-min(base, peakMem.Load())) / float64(max(peak.Load(), 1))
				b.ReportMetric(float64(peak.Load()), "peak-streams")
				b.ReportMetric(float64(gogc), "gogc")
				b.ReportMetric(perStream/1024, "KiB/stream")
				b.ReportMetric(l.P99, "send-lag-p99-ms")
				b.ReportMetric(float64(failed.Load()), "failed")
				c.report(b, float64(events.Load()), "events")
			}
		})
	}
}

// BenchmarkHeadroomRate sends short non-streamed requests at rising
// rates for 2 s each and reports the achieved rate and send-lag p99; the
// highest rate with p99 under 5 ms is the client's request-rate headroom
// on this machine (the simulator process shares the cores).
func BenchmarkHeadroomRate(b *testing.B) {
	tuneLikeCLI(b)
	sp := startSimChild(b, 0, 0)
	for _, rate := range benchSizes("BENCHRUN_HEADROOM_RATES", []int{1000, 2000, 4000, 8000}) {
		b.Run(fmt.Sprint(rate), func(b *testing.B) {
			tg := newTarget(sp.URL, 512)
			tg.Stream = false
			defer tg.HTTP.CloseIdleConnections()
			for i := 0; i < b.N; i++ {
				var mu sync.Mutex
				var lags []float64
				var failed atomic.Int64
				m := startMeter(sp.Pid)
				st, err := Run(context.Background(), tg, Load{Schedule: &Schedule{Rate: float64(rate), Arrival: ArrivalConstant}, Duration: 2 * time.Second},
					func(int) Request { return Request{Prompt: "a b c", MaxTokens: 1} },
					func(i int, r Result) {
						if r.Err != nil {
							failed.Add(1)
						}
						mu.Lock()
						lags = append(lags, msf(r.SendLag()))
						mu.Unlock()
					})
				c := m.since()
				if err != nil {
					b.Fatal(err)
				}
				el := time.Since(st.Start).Seconds()
				l := stats.Summarize(lags)
				b.ReportMetric(float64(st.Sent)/el, "achieved-req/s")
				b.ReportMetric(l.P99, "send-lag-p99-ms")
				b.ReportMetric(float64(failed.Load()), "failed")
				c.report(b, float64(st.Sent), "reqs")
			}
		})
	}
}

// reportFloor stops the wake probe and reports what the machine itself
// did to the pass's schedule: how late a thread that asked to wake was
// while requests were being sent (machine-wake-p99-ms), and the send lag
// a client that sent each request the moment the machine let it run
// would have had (send-lag-floor-p99-ms, measure.Samples.Floor). Send lag
// above the floor is the client's. It returns the floor's p99 (0 without
// sends).
func reportFloor(b *testing.B, probe *machine.Probe, scheduled []time.Time) float64 {
	b.Helper()
	rec, err := probe.Stop()
	s := rec.Wake
	if err != nil {
		b.Fatal(err)
	}
	if len(scheduled) == 0 {
		return 0
	}
	first, last := slices.MinFunc(scheduled, time.Time.Compare), slices.MaxFunc(scheduled, time.Time.Compare)
	w := s.Between(first, last).Lateness()
	floor := s.Floor(scheduled).P99
	b.ReportMetric(w.P99, "machine-wake-p99-ms")
	b.ReportMetric(floor, "send-lag-floor-p99-ms")
	return floor
}

// benchSizes is the list in the environment variable env (comma-separated
// integers), or def.
func benchSizes(env string, def []int) []int {
	v := os.Getenv(env)
	if v == "" {
		return def
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return def
	}
	return out
}

// BenchmarkHeadroomRequests is the client's cost per request with the
// connections already open (a closed loop of 16 after a warm-up pass),
// so neither dials nor a loaded machine's latency change what is counted:
// requests per second of client CPU (per core) and allocations per
// request, streamed (16 events) and not.
func BenchmarkHeadroomRequests(b *testing.B) {
	tuneLikeCLI(b)
	sp := startSimChild(b, 0, 0)
	for _, stream := range []bool{false, true} {
		b.Run(map[bool]string{false: "whole", true: "streamed"}[stream], func(b *testing.B) {
			tg := newTarget(sp.URL, 16)
			tg.Stream = stream
			defer tg.HTTP.CloseIdleConnections()
			req := func(int) Request {
				return Request{Prompt: "one two three four", MaxTokens: 16, ExpectTokens: 16, Body: map[string]any{"ignore_eos": true, "min_tokens": 16}}
			}
			var failed atomic.Int64
			done := func(_ int, r Result) {
				if r.Err != nil {
					failed.Add(1)
				}
			}
			RunClosed(context.Background(), tg, 16, 64, req, done)
			const n = 4000
			for i := 0; i < b.N; i++ {
				m := startMeter(sp.Pid)
				RunClosed(context.Background(), tg, 16, n, req, done)
				c := m.since()
				b.ReportMetric(float64(failed.Load()), "failed")
				c.report(b, n, "reqs")
			}
		})
	}
}

// tuneLikeCLI sets the collector as the benchrun command does (TuneGC:
// GOGC and GOMEMLIMIT override) for the benchmark, and puts it back
// after.
func tuneLikeCLI(b *testing.B) int {
	gc, limit := debug.SetGCPercent(100), debug.SetMemoryLimit(-1)
	debug.SetGCPercent(gc)
	b.Cleanup(func() {
		debug.SetGCPercent(gc)
		debug.SetMemoryLimit(limit)
	})
	return TuneGC()
}
