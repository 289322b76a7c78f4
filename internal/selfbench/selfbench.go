// Package selfbench measures the load generator's own ceiling on this
// machine (`benchrun self-bench`) against the built-in simulator in the
// same process, and keeps the ceilings per machine (cache.go) for the dry
// run's check of a plan's load.
package selfbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benchrun/benchrun/internal/host"
	"github.com/benchrun/benchrun/internal/loadgen"
	"github.com/benchrun/benchrun/internal/machine"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/rundir"
	"github.com/benchrun/benchrun/internal/sim"
	"github.com/benchrun/benchrun/internal/stats"
)

// Config is what a self-bench asks of the machine: the load of its checks
// and the bounds of its searches.
type Config struct {
	Concurrency  int           // streams for the measurement-error check
	Streams      int           // streams held in flight for the memory check
	MaxSendLagMs float64       // the send-lag p99 a sustained load must stay under
	Step         time.Duration // how long each rate is held, each stream count sent over
	MaxStreams   int           // the most concurrent streams the search tries
	MaxRate      int           // the highest request rate (req/s) the search tries
}

// ErrInterrupted is a self-bench whose context ended before it did: its
// ceilings are not this machine's.
var ErrInterrupted = errors.New("interrupted; nothing saved")

// Run measures the load generator's own ceiling on this machine against
// the built-in simulator in this process (so the simulator's CPU counts
// against the client: a floor, not a peak). It prints one CSV row per
// measurement on out, says on log what it could not measure, and returns
// the two ceilings (streams, request rate) for Save.
func Run(ctx context.Context, cfg Config, out, log io.Writer) (Capacity, error) {
	simCfg := sim.DefaultConfig()
	simCfg.EOSProb, simCfg.MaxRecords = 0, 100000
	simCfg.TTFT, simCfg.ITL = 5*time.Millisecond, 20*time.Millisecond
	srv, url, stop, err := serveSim(simCfg)
	if err != nil {
		return Capacity{}, err
	}
	defer stop()
	// The searches run against a lighter simulator: it keeps no records
	// (only the measurement-error check reads them), so it takes less of
	// the cores the client is measured on.
	light := simCfg
	light.MaxRecords, light.Metrics = 0, sim.MetricsNone
	light.TTFT, light.ITL = 5*time.Millisecond, streamITL
	_, lightURL, stopLight, err := serveSim(light)
	if err != nil {
		return Capacity{}, err
	}
	defer stopLight()

	// The machine's own stalls, measured while the searches run: a step
	// can be late because the machine stood still, not the client
	// (machine.Probe). Without a probe the rows just lack the floor.
	probe, err := machine.StartProbe()
	if err != nil {
		fmt.Fprintf(log, "benchrun self-bench: %v; the machine's own lateness is not measured\n", err)
	} else {
		defer probe.Stop()
		probe.Keep() // the probe keeps its raw samples for the whole self-bench (bounded in time), released by Stop
	}

	fmt.Fprintln(out, "measurement,value,unit,detail")
	row := csvRow(out)
	ps, err := loadgen.MeasureParse(time.Second)
	if err != nil {
		return Capacity{}, err
	}
	row("sse_events_per_s_per_core", ps.EventsPerSec, "events/s", "in memory, whole per-event client path")
	row("allocs_per_event", ps.AllocsPerEvent, "allocs", "")

	// Measurement error: client stamps against the simulator's write times.
	// The stall watchdog is on, as in every sweep (stall_timeout 2m), so the
	// ceiling printed is the one a sweep gets, and nothing here can hang.
	tg := &loadgen.Target{BaseURL: url, Model: "sim-llama", Endpoint: loadgen.Completions, Stream: true,
		HTTP: loadgen.NewHTTPClient(max(cfg.Concurrency, cfg.Streams)), StallTimeout: 2 * time.Minute}
	defer tg.HTTP.CloseIdleConnections()
	measureEventError(ctx, srv, tg, cfg.Concurrency, row)

	searchStart := time.Now()
	bestRate, err := searchRate(ctx, cfg, lightURL, probe, row)
	if err != nil && ctx.Err() == nil {
		return Capacity{}, err
	}
	bestStreams, searchStreams, err := searchStreams(ctx, cfg, lightURL, probe, row)
	if err != nil && ctx.Err() == nil {
		return Capacity{}, err
	}
	if probe != nil {
		w := probe.Record().Wake.Between(searchStart, time.Now()).Lateness()
		row(results.ColMachineWakeP99Ms, w.P99, "ms", fmt.Sprintf("how late a thread that asked to wake ran while the searches ran (a probe process, %d wakes; max %.1f ms): no client on this machine keeps a schedule closer than this", w.N, w.Max))
		if _, err := probe.Stop(); err != nil {
			fmt.Fprintf(log, "benchrun self-bench: %v\n", err)
		}
	}

	measureStreamMemory(ctx, srv, tg, cfg.Streams, row)
	measureHeldMemory(ctx, row)

	if ctx.Err() != nil {
		return Capacity{}, ErrInterrupted
	}
	return Capacity{Fingerprint: host.Fingerprint(), MeasuredAt: time.Now().UTC(), SendLagMs: cfg.MaxSendLagMs,
		MaxStreams: bestStreams, MaxRate: float64(bestRate), StreamsCapped: bestStreams == searchStreams, RateCapped: bestRate == cfg.MaxRate}, nil
}

// searchRate is the request-rate search: constant arrivals, non-streamed,
// searched (doubling from 500 req/s, then bisection to 5 %) for the
// highest rate whose send lag p99 stays under the bound with every
// request answered.
func searchRate(ctx context.Context, cfg Config, url string, probe *machine.Probe, row rowFunc) (int, error) {
	nt := &loadgen.Target{BaseURL: url, Model: "sim-llama", Endpoint: loadgen.Completions,
		HTTP: loadgen.NewHTTPClient(4096), StallTimeout: 2 * time.Minute}
	// The stream search and the memory check need the files.
	defer nt.HTTP.CloseIdleConnections()
	best, err := loadgen.SearchMax(ctx, min(500, cfg.MaxRate), cfg.MaxRate, 0.05, twice(func(rate int, try int) (bool, error) {
		st, err := rateStep(ctx, nt, float64(rate), cfg.Step)
		if err != nil {
			return false, err
		}
		row(fmt.Sprintf("send_lag_p99_ms_at_%d_req_s%s", rate, retryName(try)), st.lagP99, "ms",
			fmt.Sprintf("achieved %.0f req/s, %d failed%s", st.achieved, st.failed, floorNote(probe, st, cfg.MaxSendLagMs)))
		return st.lagP99 <= cfg.MaxSendLagMs && st.failed == 0, nil
	}))
	if err == nil || ctx.Err() != nil {
		row("max_rate_req_s", float64(best), "req/s", fmt.Sprintf("non-streamed, send lag p99 under %g ms, every request ok, simulator in-process", cfg.MaxSendLagMs))
	}
	return best, err
}

// searchStreams is the streams search: n streamed requests sent over one
// step, each then open for streamEvents events streamITL apart, so all n
// are in flight at once; searched the same way (from 256) for the most
// whose send lag p99 stays under the bound with every stream complete.
// Both ends of every stream are this process's open files (the simulator
// is in-process), so the search stops where they would run out, and says
// so: past it the steps fail on "too many open files", the client's limit
// on this machine, not its ceiling. bound is where the search stopped.
func searchStreams(ctx context.Context, cfg Config, url string, probe *machine.Probe, row rowFunc) (best, bound int, err error) {
	bound, capNote := cfg.MaxStreams, ""
	if c := streamCap(); bound > c {
		bound = c
		capNote = fmt.Sprintf("; searched up to %d, not --max-streams: past it this process's open files (both ends of every stream) run out", c)
	}
	st := &loadgen.Target{BaseURL: url, Model: "sim-llama", Endpoint: loadgen.Completions, Stream: true,
		HTTP: loadgen.NewHTTPClient(bound), StallTimeout: 2 * time.Minute}
	defer st.HTTP.CloseIdleConnections() // the memory check needs the files
	best, err = loadgen.SearchMax(ctx, min(256, bound), bound, 0.05, twice(func(n int, try int) (bool, error) {
		s, err := streamStep(ctx, st, n, cfg.Step)
		if err != nil {
			return false, err
		}
		row(fmt.Sprintf("send_lag_p99_ms_at_%d_streams%s", n, retryName(try)), s.lagP99, "ms",
			fmt.Sprintf("%d in flight at the peak, %d failed%s", s.peak, s.failed, floorNote(probe, s, cfg.MaxSendLagMs)))
		return s.lagP99 <= cfg.MaxSendLagMs && s.failed == 0 && s.peak >= int64(n)*9/10, nil
	}))
	if err == nil || ctx.Err() != nil {
		row("max_streams", float64(best), "streams", fmt.Sprintf("concurrent streams, an event every %s each, send lag p99 under %g ms, every stream complete, simulator in-process%s", streamITL, cfg.MaxSendLagMs, capNote))
	}
	return best, bound, err
}

// streamCap is the most streams the self-bench's search tries
// whatever --max-streams says: half of what this process can hold in
// flight, as each stream is a connection at both ends (a variable, so a
// test can lower it).
var streamCap = func() int { return loadgen.InFlightLimit() / 2 }

// rowFunc prints one self-bench measurement.
type rowFunc func(name string, v float64, unit, detail string)

// csvRow prints measurements as rows of self-bench's CSV on w.
func csvRow(w io.Writer) rowFunc {
	return func(name string, v float64, unit, detail string) {
		fmt.Fprintf(w, "%s,%.4g,%s,%q\n", name, v, unit, detail)
	}
}

// measureEventError is the measurement-error check: the client's stamps of
// each streamed event against the simulator's write times, at conc
// streams, after a first round that opens the connections.
func measureEventError(ctx context.Context, srv *sim.Server, tg *loadgen.Target, conc int, row rowFunc) {
	var mu sync.Mutex
	var rs []loadgen.Result
	req := func(int) loadgen.Request {
		return loadgen.Request{Prompt: "one two three", MaxTokens: 32, Body: map[string]any{"ignore_eos": true}}
	}
	loadgen.RunClosed(ctx, tg, conc, conc, req, func(int, loadgen.Result) {}) // open the connections
	srv.ResetRecords()
	loadgen.RunClosed(ctx, tg, conc, 2*conc, req, func(_ int, r loadgen.Result) {
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
	row("event_error_p50_ms", es.P50, "ms", fmt.Sprintf("|client stamp - simulator write|, %d events at concurrency %d", es.N, conc))
	row("event_error_p99_ms", es.P99, "ms", "")
}

// measureStreamMemory is the memory each in-flight stream costs: the heap
// grown at the peak of streams concurrent requests, over the streams in
// flight then.
func measureStreamMemory(ctx context.Context, srv *sim.Server, tg *loadgen.Target, streams int, row rowFunc) {
	runtime.GC()
	base := loadgen.InUseMemory()
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
					peakBytes.Store(loadgen.InUseMemory())
				}
			}
		}
	}()
	srv.ResetRecords()
	loadgen.RunClosed(ctx, tg, streams, streams, func(int) loadgen.Request {
		inflight.Add(1)
		return loadgen.Request{Prompt: "one two three", MaxTokens: 50, Body: map[string]any{"ignore_eos": true}}
	}, func(int, loadgen.Result) { inflight.Add(-1) })
	close(done)
	wg.Wait()
	p := max(peak.Load(), 1)
	grown := peakBytes.Load() - min(base, peakBytes.Load())
	// Client and simulator share this process: this is an upper bound.
	row("bytes_per_stream", float64(grown)/float64(p), "bytes", fmt.Sprintf("%d streams in flight; client and in-process simulator together (an upper bound)", peak.Load()))
}

// measureHeldMemory is what a sweep keeps of each finished request while
// its cell runs (its request row goes to the spool, rundir.RequestSpool,
// as it finishes; the result is folded in and not kept), streamed (64
// tokens, an event each) and not: the heap held after n and after 4n
// finished requests, over the 3n more (docs/METRICS.md, "Memory per
// finished request").
func measureHeldMemory(ctx context.Context, row rowFunc) {
	cfg := sim.DefaultConfig()
	cfg.EOSProb, cfg.MaxRecords, cfg.Metrics = 0, 0, sim.MetricsNone
	cfg.TTFT, cfg.ITL = time.Millisecond, time.Millisecond
	_, url, stop, err := serveSim(cfg)
	if err != nil {
		return
	}
	defer stop()
	for _, stream := range []bool{true, false} {
		tg := &loadgen.Target{BaseURL: url, Model: "sim-llama", Endpoint: loadgen.Completions, Stream: stream,
			HTTP: loadgen.NewHTTPClient(heldConcurrency), StallTimeout: 2 * time.Minute}
		held := func(n int) uint64 {
			runtime.GC()
			base := loadgen.InUseMemory()
			spool, err := rundir.NewRequestSpool("", "self-bench", 0)
			if err != nil {
				return 0
			}
			defer spool.Remove()
			var mu sync.Mutex
			loadgen.RunClosed(ctx, tg, heldConcurrency, n, func(int) loadgen.Request {
				return loadgen.Request{Prompt: "one two three", MaxTokens: 64, Body: map[string]any{"ignore_eos": true}}
			}, func(i int, r loadgen.Result) {
				row := loadgen.RequestRow(results.Cell{}, int64(i), &r)
				mu.Lock()
				spool.Add(row)
				mu.Unlock()
			})
			runtime.GC()
			now := loadgen.InUseMemory()
			grown := now - min(base, now)
			spool.Finish()
			return grown
		}
		small, large := held(heldRequests), held(4*heldRequests)
		tg.HTTP.CloseIdleConnections()
		if ctx.Err() != nil {
			return
		}
		name, detail := "held_bytes_per_request", "non-streamed"
		if stream {
			name, detail = "held_bytes_per_streamed_request", "streamed, 64 tokens, an event each"
		}
		per := (float64(large) - float64(small)) / float64(3*heldRequests)
		row(name, per, "bytes", detail+": what a finished request leaves held while its cell runs (its row spooled to disk; the cell's end holds 8 bytes a request per latency family, and bounded buffers)")
	}
}

// heldRequests and heldConcurrency shape measureHeldMemory's loads.
const (
	heldRequests    = 2000
	heldConcurrency = 64
)

// streamITL and streamEvents shape the streams search's requests: an event
// every 100 ms for 2 s (a decode speed of 10 tokens/s per stream, that of
// a busy server).
const (
	streamITL    = 100 * time.Millisecond
	streamEvents = 20
)

// serveSim serves a simulator on a loopback port in this process.
func serveSim(cfg sim.Config) (*sim.Server, string, func(), error) {
	srv := sim.New(cfg)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", nil, fmt.Errorf("listening on loopback: %w", err)
	}
	hs := &http.Server{Handler: srv}
	go hs.Serve(ln)
	return srv, "http://" + ln.Addr().String(), func() { srv.Close(); hs.Close() }, nil
}

// twice runs a search step again when it fails and fails it only when
// the second try fails too: on a shared machine one step can lose its
// cores to a neighbour for a moment, and a search that takes that for the
// client's ceiling stops far below it.
func twice(step func(n, try int) (bool, error)) func(int) (bool, error) {
	return func(n int) (bool, error) {
		ok, err := step(n, 1)
		if ok || err != nil {
			return ok, err
		}
		return step(n, 2)
	}
}

// retryName marks a second try's row.
func retryName(try int) string {
	if try > 1 {
		return "_retry"
	}
	return ""
}

// stepResult is one search step's outcome.
type stepResult struct {
	lagP99    float64 // ms
	achieved  float64 // req/s (rate steps)
	failed    int64
	peak      int64       // streams in flight at once (stream steps)
	scheduled []time.Time // each request's due time
}

// floorNote is a step's row detail on the machine's own share of its
// send lag: the p99 a client that sent every request the moment the
// machine let it run would have had (measure.Samples.Floor), and
// when that alone is over the bound, that no client could have passed
// the step on this machine then.
func floorNote(probe *machine.Probe, st stepResult, lagMs float64) string {
	if probe == nil || len(st.scheduled) == 0 {
		return ""
	}
	f := probe.Record().Wake.Floor(st.scheduled).P99
	if f > lagMs {
		return fmt.Sprintf("; the machine's floor alone is %.2f ms p99, over the bound: no client could have kept this step under it", f)
	}
	return fmt.Sprintf("; machine floor p99 %.2f ms", f)
}

// rateStep sends non-streamed one-token requests at rate for d.
func rateStep(ctx context.Context, t *loadgen.Target, rate float64, d time.Duration) (stepResult, error) {
	var mu sync.Mutex
	var lags []float64
	var scheduled []time.Time
	var failed atomic.Int64
	st, err := loadgen.Run(ctx, t, loadgen.Load{Schedule: &loadgen.Schedule{Rate: rate, Arrival: loadgen.ArrivalConstant}, Duration: d},
		func(int) loadgen.Request { return loadgen.Request{Prompt: "a", MaxTokens: 1} },
		func(_ int, r loadgen.Result) {
			if r.Err != nil {
				failed.Add(1)
			}
			mu.Lock()
			lags = append(lags, float64(r.SendLag())/1e6)
			scheduled = append(scheduled, r.Scheduled)
			mu.Unlock()
		})
	if err != nil {
		return stepResult{}, err
	}
	return stepResult{lagP99: stats.Summarize(lags).P99, achieved: float64(st.Sent) / time.Since(st.Start).Seconds(), failed: failed.Load(), scheduled: scheduled}, nil
}

// streamStep sends n streams over d (constant arrivals), each lasting
// streamEvents events, and waits for them all.
func streamStep(ctx context.Context, t *loadgen.Target, n int, d time.Duration) (stepResult, error) {
	var mu sync.Mutex
	var lags []float64
	var scheduled []time.Time
	var spans [][2]time.Time
	var failed int64
	_, err := loadgen.Run(ctx, t, loadgen.Load{Schedule: &loadgen.Schedule{Rate: float64(n) / d.Seconds(), Arrival: loadgen.ArrivalConstant}, Requests: n},
		func(int) loadgen.Request {
			return loadgen.Request{Prompt: "one two three", MaxTokens: streamEvents, ExpectTokens: streamEvents,
				Body: map[string]any{"ignore_eos": true, "min_tokens": streamEvents}}
		},
		func(_ int, r loadgen.Result) {
			mu.Lock()
			defer mu.Unlock()
			if r.Err != nil {
				failed++
			}
			lags = append(lags, float64(r.SendLag())/1e6)
			scheduled = append(scheduled, r.Scheduled)
			spans = append(spans, [2]time.Time{r.Sent, r.Finished})
		},
	)
	if err != nil {
		return stepResult{}, err
	}
	return stepResult{lagP99: stats.Summarize(lags).P99, failed: failed, peak: int64(loadgen.PeakOverlap(spans)), scheduled: scheduled}, nil
}
