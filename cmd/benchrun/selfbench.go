package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benchrun/benchrun/internal/loadgen"
	"github.com/benchrun/benchrun/internal/sim"
	"github.com/benchrun/benchrun/internal/stats"
)

// runSelfBench is `benchrun self-bench`: the load generator's own ceiling on
// this machine, measured against the built-in simulator in this process
// (so the simulator's CPU counts against the client: a floor, not a peak).
// It prints one CSV row per measurement on stdout.
func runSelfBench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("benchrun self-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	conc := fs.Int("concurrency", 64, "streams for the measurement-error check")
	streams := fs.Int("streams", 1024, "streams held in flight for the memory check")
	lagMs := fs.Float64("max-send-lag-ms", 5, "send-lag p99 a sustained rate must stay under")
	step := fs.Duration("step", time.Second, "how long each request rate is held")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if *conc < 1 || *streams < 1 || *step <= 0 {
		fmt.Fprintln(stderr, "benchrun self-bench: --concurrency, --streams and --step must be positive")
		return 2
	}
	cfg := sim.DefaultConfig()
	cfg.EOSProb, cfg.MaxRecords = 0, 100000
	cfg.TTFT, cfg.ITL = 5*time.Millisecond, 20*time.Millisecond
	srv := sim.New(cfg)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintf(stderr, "benchrun self-bench: listening on loopback: %v\n", err)
		return 3
	}
	hs := &http.Server{Handler: srv}
	go hs.Serve(ln)
	defer func() { srv.Close(); hs.Close() }()
	url := "http://" + ln.Addr().String()

	fmt.Fprintln(stdout, "measurement,value,unit,detail")
	row := func(name string, v float64, unit, detail string) {
		fmt.Fprintf(stdout, "%s,%.4g,%s,%q\n", name, v, unit, detail)
	}
	ps, err := loadgen.MeasureParse(time.Second)
	if err != nil {
		fmt.Fprintf(stderr, "benchrun self-bench: %v\n", err)
		return 3
	}
	row("sse_events_per_s_per_core", ps.EventsPerSec, "events/s", "in memory, whole per-event client path")
	row("allocs_per_event", ps.AllocsPerEvent, "allocs", "")

	// Measurement error: client stamps against the simulator's write times.
	// The stall watchdog is on, as in every sweep (stall_timeout 2m), so the
	// ceiling printed is the one a sweep gets, and nothing here can hang.
	tg := &loadgen.Target{BaseURL: url, Model: "sim-llama", Endpoint: loadgen.Completions, Stream: true,
		HTTP: loadgen.NewHTTPClient(max(*conc, *streams)), StallTimeout: 2 * time.Minute}
	defer tg.HTTP.CloseIdleConnections()
	var mu sync.Mutex
	var rs []loadgen.Result
	req := func(int) loadgen.Request {
		return loadgen.Request{Prompt: "one two three", MaxTokens: 32, Body: map[string]any{"ignore_eos": true}}
	}
	loadgen.RunClosed(ctx, tg, *conc, *conc, req, func(int, loadgen.Result) {}) // open the connections
	srv.ResetRecords()
	loadgen.RunClosed(ctx, tg, *conc, 2**conc, req, func(_ int, r loadgen.Result) {
		mu.Lock()
		rs = append(rs, r)
		mu.Unlock()
	})
	var errs []float64
	for _, r := range rs {
		rec, ok := srv.Record(r.ResponseID)
		if r.Err != nil || !ok || len(rec.Events) != len(r.Tokens) {
			continue
		}
		for k, ev := range rec.Events {
			errs = append(errs, math.Abs(float64(r.Tokens[k].At.Sub(ev.Time))/1e6))
		}
	}
	es := stats.Summarize(errs)
	row("event_error_p50_ms", es.P50, "ms", fmt.Sprintf("|client stamp - simulator write|, %d events at concurrency %d", es.N, *conc))
	row("event_error_p99_ms", es.P99, "ms", "")

	// Request rate: constant arrivals, non-streamed, rising until the
	// send lag p99 passes the bound.
	nt := *tg
	nt.Stream = false
	best := 0.0
	for rate := 500.0; rate <= 64000 && ctx.Err() == nil; rate *= 2 {
		var lags []float64
		var failed atomic.Int64
		st, err := loadgen.Run(ctx, &nt, loadgen.Load{Schedule: &loadgen.Schedule{Rate: rate, Arrival: loadgen.ArrivalConstant}, Duration: *step},
			func(int) loadgen.Request { return loadgen.Request{Prompt: "a", MaxTokens: 1} },
			func(_ int, r loadgen.Result) {
				if r.Err != nil {
					failed.Add(1)
				}
				mu.Lock()
				lags = append(lags, float64(r.SendLag())/1e6)
				mu.Unlock()
			})
		if err != nil {
			fmt.Fprintf(stderr, "benchrun self-bench: %v\n", err)
			return 3
		}
		l := stats.Summarize(lags)
		achieved := float64(st.Sent) / time.Since(st.Start).Seconds()
		row(fmt.Sprintf("send_lag_p99_ms_at_%g_req_s", rate), l.P99, "ms", fmt.Sprintf("achieved %.0f req/s, %d failed", achieved, failed.Load()))
		if l.P99 > *lagMs || failed.Load() > 0 {
			break
		}
		best = rate
	}
	row("max_rate_req_s", best, "req/s", fmt.Sprintf("non-streamed, send lag p99 under %g ms, simulator in-process", *lagMs))

	// Memory per in-flight stream.
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	var inflight, peak atomic.Int64
	var peakBytes atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if f := inflight.Load(); f >= peak.Load() {
					peak.Store(f)
					runtime.ReadMemStats(&m1)
					peakBytes.Store(m1.HeapInuse + m1.StackInuse)
				}
			}
		}
	}()
	srv.ResetRecords()
	loadgen.RunClosed(ctx, tg, *streams, *streams, func(int) loadgen.Request {
		inflight.Add(1)
		return loadgen.Request{Prompt: "one two three", MaxTokens: 50, Body: map[string]any{"ignore_eos": true}}
	}, func(int, loadgen.Result) { inflight.Add(-1) })
	close(done)
	wg.Wait()
	base, p := m0.HeapInuse+m0.StackInuse, max(peak.Load(), 1)
	grown := peakBytes.Load() - min(base, peakBytes.Load())
	// Client and simulator share this process: this is an upper bound.
	row("bytes_per_stream", float64(grown)/float64(p), "bytes", fmt.Sprintf("%d streams in flight; client and in-process simulator together (an upper bound)", peak.Load()))
	return 0
}
