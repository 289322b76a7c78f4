package sweep

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/loadgen"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/sim"
	"github.com/benchrun/benchrun/internal/sim/simtest"
	"github.com/benchrun/benchrun/internal/stats"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
)

// v reads a nullable metric of a row, -1 when it is null (not measured):
// no metric is negative, so a null fails every check that wants a
// measured value.
func v[T int64 | float64](p *T) T {
	if p == nil {
		return -1
	}
	return *p
}

// startSim serves the real simulator over loopback HTTP.
func startSim(t *testing.T, edit func(*sim.Config)) (*sim.Server, string) {
	t.Helper()
	var edits []func(*sim.Config)
	if edit != nil {
		edits = append(edits, edit)
	}
	s := simtest.NewSim(t, edits...)
	return s, simtest.Serve(t, s)
}

// loadStage loads a plan whose only stage is the sweep given as CUE.
func loadStage(t *testing.T, sweepCUE string, extra string) (*Stage, *schema.Plan) {
	t.Helper()
	reg := pipeline.NewRegistry()
	reg.AddKind(Kind)
	src := fmt.Sprintf("name: \"t\"\nmodel: {name: \"sim-llama\"}\n%s\nstages: sweep: {\n%s\n}\n", extra, sweepCUE)
	p, err := schema.LoadSource("plan.cue", []byte(src), reg.LoadOptions(nil))
	if err != nil {
		t.Fatalf("plan:\n%s\n%v", src, err)
	}
	st, err := New(p.Stages[0])
	if err != nil {
		t.Fatal(err)
	}
	return st.(*Stage), p
}

// check is what Validate sees of p: the graph Build makes of it (with its
// own decoding of the stages, the sweep's among them; its errors are the
// tests' to find through Validate).
func check(t *testing.T, p *schema.Plan) *pipeline.Check {
	t.Helper()
	reg := pipeline.NewRegistry()
	reg.AddKind(Kind)
	g, _ := pipeline.Build(p, reg)
	return g.Check(p.Stages[0].Name)
}

type collected struct {
	mu    sync.Mutex
	cells []results.Cell
	reqs  []results.Request
}

func runStage(t *testing.T, st *Stage, p *schema.Plan) (*collected, error) {
	t.Helper()
	if err := st.Validate(check(t, p)); err != nil {
		t.Fatalf("validate: %v", err)
	}
	var c collected
	env := &pipeline.Env{Stage: p.Stages[0], Plan: p, Progress: io.Discard, Log: io.Discard,
		Emit: func(cell results.Cell, in results.Requests) error {
			reqs, _ := results.CollectRequests(in)
			c.mu.Lock()
			defer c.mu.Unlock()
			c.cells = append(c.cells, cell)
			c.reqs = append(c.reqs, reqs...)
			return nil
		}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := st.Run(ctx, env)
	return &c, err
}

func TestSweepClosedLoopRows(t *testing.T) {
	srv, url := startSim(t, func(c *sim.Config) { c.ITL = 3 * time.Millisecond })
	st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q
		cells: [{isl: 40, osl: 8}], concurrency: [1, 4], requests: 8, warmup: 1, shared_prefix: 10`, url),
		`slo: {ttft_ms: 1000, tpot_ms: 1000}`)
	c, err := runStage(t, st, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.cells) != 2 || len(c.reqs) != 16 {
		t.Fatalf("%d cell rows, %d request rows; want 2 and 16", len(c.cells), len(c.reqs))
	}
	for _, r := range c.cells {
		if r.Status != results.StatusOK {
			t.Fatalf("%s: %s %s", r.CellID, r.Status, r.Reason)
		}
		if v(r.ClientCPUUtil) <= 0 || v(r.ClientCPUUtil) > float64(runtime.NumCPU()) {
			t.Errorf("%s: client_cpu_util %.3f cores", r.CellID, v(r.ClientCPUUtil))
		}
		if v(r.EffectiveISL) != 40 || v(r.EffectiveOSL) != 8 || r.Completed != 8 || r.Failed != 0 {
			t.Errorf("%s: effective isl/osl %.1f/%.1f completed %d failed %d", r.CellID, v(r.EffectiveISL), v(r.EffectiveOSL), r.Completed, r.Failed)
		}
		// The row's itl and tpot against the simulator's own write times
		// for the same requests (its timer is not exact on a busy machine,
		// so compare with what it did, not what it was asked).
		var gaps, tpots []float64
		for _, q := range c.reqs {
			if q.CellID != r.CellID {
				continue
			}
			rec, ok := srv.Record(q.ResponseID)
			if !ok || len(rec.Events) != 8 {
				t.Fatalf("no simulator record with 8 events for %q", q.ResponseID)
			}
			for k := 1; k < len(rec.Events); k++ {
				gaps = append(gaps, ms(rec.Events[k].Time.Sub(rec.Events[k-1].Time)))
			}
			tpots = append(tpots, ms(rec.Events[7].Time.Sub(rec.Events[0].Time))/7)
		}
		truth := stats.Summarize(gaps)
		if math.Abs(v(r.ITLP50Ms)-truth.P50) > 0.5 || math.Abs(v(r.TPOTMs)-stats.Mean(tpots)) > 0.5 || v(r.TTFTP50Ms) < 5 {
			t.Errorf("%s: itl p50 %.3f (server %.3f), tpot %.3f (server %.3f), ttft p50 %.2f", r.CellID, v(r.ITLP50Ms), truth.P50, v(r.TPOTMs), stats.Mean(tpots), v(r.TTFTP50Ms))
		}
		if v(r.ITLTokP50Ms) != v(r.ITLP50Ms) || v(r.TTFTSchedP50Ms) < v(r.TTFTP50Ms) || v(r.E2ELMaxMs) < v(r.E2ELP99Ms) || v(r.E2ELP99Ms) < v(r.E2ELP50Ms) || r.E2ELP50Ms == nil {
			t.Errorf("%s: inconsistent distributions %+v", r.CellID, r)
		}
		if v(r.GoodputRatio) != 1 || v(r.Goodput) <= 0 || v(r.ReqS) <= 0 || v(r.OutputTokS) <= 0 || v(r.TotalTokS) <= v(r.OutputTokS) {
			t.Errorf("%s: goodput %.2f (%.2f) req/s %.2f out %.1f total %.1f", r.CellID, v(r.Goodput), v(r.GoodputRatio), v(r.ReqS), v(r.OutputTokS), v(r.TotalTokS))
		}
		for _, want := range []string{"prompts=cold", "shared_prefix=10", "calibrated by tokenize", "token counts from the server's usage"} {
			if !strings.Contains(r.Notes, want) {
				t.Errorf("%s: notes %q lack %q", r.CellID, r.Notes, want)
			}
		}
		// On Linux the events are timed by the kernel's receive stamps.
		if runtime.GOOS == "linux" && (r.StampSource != "kernel" || r.StampDelayP50Ms == nil || v(r.StampDelayP99Ms) < v(r.StampDelayP50Ms)) {
			t.Errorf("%s: stamp_source %q, stamp delay p50 %v p99 %v (notes %q)", r.CellID, r.StampSource, r.StampDelayP50Ms, r.StampDelayP99Ms, r.Notes)
		}
	}
	if v(c.cells[1].SpeedupVsC1) < 2 {
		t.Errorf("speedup at c=4 is %.2f; a fixed-latency server should scale", v(c.cells[1].SpeedupVsC1))
	}
	for _, q := range c.reqs {
		if q.Status != results.StatusOK || len(q.ChunkTokens) != 8 || len(q.ChunkGapsMs) != 7 || q.ResponseID == "" {
			t.Fatalf("request row %+v", q)
		}
		if runtime.GOOS == "linux" && len(q.StampDelaysMs) != 8 {
			t.Errorf("request row stamp delays %v, want one per event", q.StampDelaysMs)
		}
	}
}

func TestSweepOpenLoopAndFailures(t *testing.T) {
	_, url := startSim(t, nil)
	st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q
		cells: [{isl: 16, osl: 4}], rates: [50, 100], arrival: "gamma", burstiness: 2, requests: 20, warmup: 0,
		max_inflight: 8, headers: {"X-Sim-Fault": "error=500"}`, url), "")
	c, err := runStage(t, st, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.cells) != 2 {
		t.Fatalf("%d rows", len(c.cells))
	}
	for _, r := range c.cells {
		// Every request fails: the row says so in words, and no failed
		// request leaks into latency statistics.
		if r.Status != results.StatusError || !strings.Contains(r.Reason, "20 of 20 requests failed; first: HTTP 500") {
			t.Errorf("%s: %s %q", r.CellID, r.Status, r.Reason)
		}
		// Not measured is null, never 0; the throughputs over the window
		// are measured zeros.
		if r.TTFTMs != nil || r.E2ELP99Ms != nil || r.Completed != 0 || r.Failed != 20 || v(r.Goodput) != 0 {
			t.Errorf("%s: failed requests polluted stats: ttft %.2f e2el p99 %.2f goodput %.2f", r.CellID, v(r.TTFTMs), v(r.E2ELP99Ms), v(r.Goodput))
		}
		if r.Rate == 0 || r.Arrival != "gamma" || r.Burstiness != 2 || r.MaxInflight != 8 || !strings.Contains(r.CellID, "/r") {
			t.Errorf("%s: load columns rate %v arrival %q burstiness %v", r.CellID, r.Rate, r.Arrival, r.Burstiness)
		}
	}
	// The sweep went on past the failed cell: both points have rows, and
	// the achieved send rate is near the asked one.
	if got := v(c.cells[1].SentReqS); got < 50 || got > 150 {
		t.Errorf("rate 100 point sent %.1f req/s", got)
	}
}

func TestSweepOpenLoopOK(t *testing.T) {
	_, url := startSim(t, nil)
	st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, endpoint: "chat"
		cells: [{isl: 16, osl: 4}], rates: [200], arrival: "poisson", duration: "300ms", warmup: 1, prompts: "warm"`, url), "")
	c, err := runStage(t, st, p)
	if err != nil {
		t.Fatal(err)
	}
	r := c.cells[0]
	if r.Status != results.StatusOK || r.Completed < 30 || v(r.EffectiveISL) != 16 {
		t.Fatalf("%s %q: completed %d effective isl %.1f", r.Status, r.Reason, r.Completed, v(r.EffectiveISL))
	}
	if v(r.SendLagP99) < 0 || v(r.TTFTSchedP50Ms) < v(r.TTFTP50Ms) || r.TTFTP50Ms == nil || !strings.Contains(r.Notes, "prompts=warm") {
		t.Errorf("send lag %.3f ttft_sched %.2f ttft %.2f notes %q", v(r.SendLagP99), v(r.TTFTSchedP50Ms), v(r.TTFTP50Ms), r.Notes)
	}
	// Request rows are in send order: seq counts up and the scheduled
	// times (sent_at − send_lag) never go back, although responses
	// finish in another order.
	var prev time.Time
	for k, q := range c.reqs {
		sched := q.SentAt.Add(-time.Duration(q.SendLagMs * float64(time.Millisecond)))
		if q.Seq != int64(k) || sched.Before(prev.Add(-time.Microsecond)) {
			t.Fatalf("request row %d: seq %d, scheduled %v after %v", k, q.Seq, sched, prev)
		}
		prev = sched
	}
}

func TestSweepValidate(t *testing.T) {
	for _, tc := range []struct{ cue, want string }{
		{`kind: "sweep", target: "http://x", duration: "soon"`, `duration: "soon" is not a positive duration`},
		{`kind: "sweep", target: "http://x", ramp: {from: 1, duration: "1s"}`, "a ramp needs an open loop"},
		{`kind: "sweep", target: "http://x", cells: [{isl: 8, osl: 8}], shared_prefix: 8`, "shared_prefix 8 leaves no room"},
		{`kind: "sweep", target: "http://x", api_key_env: "sk-abc def"`, "should name an environment variable"},
		{`kind: "sweep", target: "http://x", stall_timeout: "forever"`, `stall_timeout: "forever" is not a positive duration`},
		{`kind: "sweep", target: "http://x", stall_timeout: "3000000h"`, `stall_timeout: "3000000h" is longer than any run`},
		{`kind: "sweep", target: "http://x", request_timeout: "0s"`, `request_timeout: "0s" is not a positive duration`},
		{`kind: "sweep", target: "http://x", cells: [{isl: 8, osl: 8, server: {np: "4"}}]`, `stages.sweep.cells.0.server: server variables need a launch stage as the target (restarted with them before the cell), not "http://x"`},
	} {
		st, p := loadStage(t, tc.cue, "")
		err := st.Validate(check(t, p))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.cue, err, tc.want)
		}
	}
	st, p := loadStage(t, `kind: "sweep", target: "http://127.0.0.1:1", api_key_env: "BENCHRUN_TEST_UNSET_KEY"`, "")
	if _, err := runStage(t, st, p); err == nil || !strings.Contains(err.Error(), "BENCHRUN_TEST_UNSET_KEY is empty or not set") {
		t.Errorf("unset key: %v", err)
	}
}

func TestSweepDataset(t *testing.T) {
	_, url := startSim(t, nil)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "p.jsonl"), []byte("{\"q\": \"one two three\"}\n{\"q\": \"four five six seven\"}\n"), 0o644)
	st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, cells: [{isl: 99, osl: 2}], concurrency: [2], requests: 4, warmup: 0,
		dataset: {path: "p.jsonl", field: "q"}`, url), "")
	p.Path = filepath.Join(dir, "plan.cue") // the dataset path is relative to the plan
	c, err := runStage(t, st, p)
	if err != nil {
		t.Fatal(err)
	}
	r := c.cells[0]
	if r.Status != results.StatusOK || v(r.EffectiveISL) < 3 || v(r.EffectiveISL) > 4 || !strings.Contains(r.Notes, "prompts from the dataset") {
		t.Fatalf("%s %q: effective isl %.2f, notes %q", r.Status, r.Reason, v(r.EffectiveISL), r.Notes)
	}
}

// TestProgressOffTerminal: off a terminal (a CI log, a pipe, a file) the
// live view draws nothing, no redraws, no escape codes, but each finished
// point gets a plain line; --quiet (io.Discard) gets nothing at all.
func TestProgressOffTerminal(t *testing.T) {
	var b strings.Builder
	p := newProgress(&b)
	v := p.point(1, 1, "x")
	v.pass(0, true, 10, &loadgen.Counters{}, 0)
	time.Sleep(300 * time.Millisecond) // past the live view's redraw tick
	v.endPass()
	p.line("sweep 16:4 c=1: ok ttft 5.1 ms")
	if b.String() != "  sweep 16:4 c=1: ok ttft 5.1 ms\n" {
		t.Fatalf("off a terminal: %q; want the finished point's line alone", b.String())
	}
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if fp := newProgress(f); fp.tty || fp.w == nil {
		t.Fatal("a file is drawn on as a terminal, or gets no lines")
	}
	if q := newProgress(io.Discard); q.w != nil {
		t.Fatal("--quiet gets lines")
	}
}

func TestSweepEmbeddings(t *testing.T) {
	_, url := startSim(t, nil)
	st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, endpoint: "embeddings", stream: false,
		cells: [{isl: 32, osl: 1}], concurrency: [2], requests: 4, warmup: 0`, url), "")
	c, err := runStage(t, st, p)
	if err != nil {
		t.Fatal(err)
	}
	r := c.cells[0]
	if r.Status != results.StatusOK || v(r.EffectiveISL) != 32 || v(r.E2ELP50Ms) <= 0 || strings.Contains(r.Notes, "stopped early") {
		t.Fatalf("%s %q: isl %.1f e2el %.2f notes %q", r.Status, r.Reason, v(r.EffectiveISL), v(r.E2ELP50Ms), r.Notes)
	}
}

// TestSweepFaultsBecomeReasons drives each of the simulator's faults
// through the whole stage: every one ends as status=error with the first
// failure in words, quickly (a stalled server cannot hang the cell), and
// with no failed request in the latency statistics.
func TestSweepFaultsBecomeReasons(t *testing.T) {
	_, url := startSim(t, nil)
	for _, tc := range []struct{ fault, want string }{
		{"error=500", "HTTP 500: Internal server error"},
		{"error=429", "HTTP 429: Rate limit exceeded"},
		{"error=503", "HTTP 503: Server overloaded"},
		{"drop-after=2", "reading stream after 2 token events"},
		{"malformed", "malformed event after 1 token events"},
		{"stall=30s,stall-at=2", "stalled: no bytes for 200ms after 2 token events"},
		{"slow-headers=30s", "stalled: no response headers within 200ms"},
	} {
		t.Run(tc.fault, func(t *testing.T) {
			st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, cells: [{isl: 16, osl: 8}], concurrency: [2],
				requests: 4, warmup: 0, stall_timeout: "200ms", headers: {"X-Sim-Fault": %q}`, url, tc.fault), "")
			start := time.Now()
			c, err := runStage(t, st, p)
			if err != nil {
				t.Fatal(err)
			}
			if el := time.Since(start); el > 5*time.Second {
				t.Errorf("the cell took %v", el)
			}
			r := c.cells[0]
			if r.Status != results.StatusError || !strings.Contains(r.Reason, "4 of 4 requests failed; first: "+tc.want) {
				t.Errorf("status %s, reason %q", r.Status, r.Reason)
			}
			if r.Completed != 0 || r.Failed != 4 || r.TTFTMs != nil || r.FirstCallMs != nil || r.ITLP99Ms != nil || r.E2ELMaxMs != nil || v(r.OutputTokS) != 0 {
				t.Errorf("failed requests in the stats (want null latencies, 0 tok/s): completed %d ttft %.2f first call %.2f itl p99 %.2f e2el max %.2f out %.2f",
					r.Completed, v(r.TTFTMs), v(r.FirstCallMs), v(r.ITLP99Ms), v(r.E2ELMaxMs), v(r.OutputTokS))
			}
			for _, q := range c.reqs {
				if q.Status != results.StatusError || !strings.Contains(q.Error, tc.want) || q.TTFTMs != nil || q.E2ELMs != nil {
					t.Errorf("request row: %s %q ttft %.2f e2el %.2f (want null)", q.Status, q.Error, v(q.TTFTMs), v(q.E2ELMs))
				}
			}
		})
	}
	t.Run("some requests fail", func(t *testing.T) {
		_, url := startSim(t, func(c *sim.Config) { c.TTFT = 5 * time.Millisecond; c.Faults.ErrorRate = 0.3 })
		st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, cells: [{isl: 16, osl: 8}], concurrency: [4],
			requests: 60, warmup: 0, calibrate: "off"`, url), "")
		c, err := runStage(t, st, p)
		if err != nil {
			t.Fatal(err)
		}
		r := c.cells[0]
		if r.Failed == 0 || r.Completed == 0 || r.Completed+r.Failed != 60 || !strings.Contains(r.Reason, fmt.Sprintf("%d of 60 requests failed", r.Failed)) {
			t.Fatalf("completed %d failed %d reason %q", r.Completed, r.Failed, r.Reason)
		}
		// The latency columns describe the completed requests only: the
		// fastest TTFT is the simulator's fixed 5 ms, never a failure's ~0.
		var ok []float64
		for _, q := range c.reqs {
			if q.Status == results.StatusOK {
				ok = append(ok, v(q.TTFTMs))
			}
		}
		if s := stats.Summarize(ok); len(ok) != int(r.Completed) || math.Abs(s.P50-v(r.TTFTP50Ms)) > 1e-9 || s.Min < 4.5 {
			t.Errorf("ttft p50 %.3f from %d ok rows, row says %.3f (completed %d); min %.3f", s.P50, len(ok), v(r.TTFTP50Ms), r.Completed, s.Min)
		}
	})
	t.Run("the server is gone", func(t *testing.T) {
		hs := httptest.NewServer(nil)
		dead := hs.URL
		hs.Close()
		st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, cells: [{isl: 16, osl: 8}], concurrency: [1, 2],
			requests: 2, warmup: 0, calibrate: "off"`, dead), "")
		c, err := runStage(t, st, p)
		if err == nil || !strings.Contains(err.Error(), "refused a connection") {
			t.Errorf("the stage's error %v, want the refusal that stopped it", err)
		}
		// The first point meets the refusal and stops sending; the next
		// is skipped with it as its reason, not run into a closed port.
		for i, r := range c.cells {
			want := results.StatusError
			if i > 0 {
				want = results.StatusSkipped
			}
			if r.Status != want || !strings.Contains(r.Reason, "refused a connection: nothing listens on "+dead) {
				t.Errorf("%s: %s %q, want %s naming the refused connection", r.CellID, r.Status, r.Reason, want)
			}
			// Every request refused within a millisecond: no span to read
			// the client's CPU over (it once read 4.59 of 2 cores).
			if r.ClientCPUUtil != nil && *r.ClientCPUUtil > float64(runtime.NumCPU()) {
				t.Errorf("%s: client_cpu_util %.2f cores of %d", r.CellID, *r.ClientCPUUtil, runtime.NumCPU())
			}
		}
	})
}

// TestRequestRowsInSendOrder: responses of uneven length (early EOS, no
// force_osl) finish out of order; request rows still come in send order.
func TestRequestRowsInSendOrder(t *testing.T) {
	_, url := startSim(t, func(c *sim.Config) { c.TTFT, c.ITL, c.EOSProb = time.Millisecond, 2*time.Millisecond, 0.15 })
	st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, cells: [{isl: 8, osl: 32}], rates: [400],
		arrival: "constant", requests: 60, warmup: 0, force_osl: false`, url), "")
	c, err := runStage(t, st, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.reqs) != 60 {
		t.Fatalf("%d request rows", len(c.reqs))
	}
	// The scheduled send (sent_at − send_lag) is exact per index: 2.5 ms
	// apart at a constant 400/s, whatever the machine's load.
	sched := func(q results.Request) time.Time {
		return q.SentAt.Add(-time.Duration(q.SendLagMs * float64(time.Millisecond)))
	}
	for k, q := range c.reqs {
		if q.Seq != int64(k) || k > 0 && !sched(q).After(sched(c.reqs[k-1]).Add(time.Millisecond)) {
			t.Fatalf("request row %d (seq %d) scheduled at %v, row %d at %v", k, q.Seq, sched(q), k-1, sched(c.reqs[k-1]))
		}
	}
}

// A server that lists the plan's model but answers as another (a
// fallback) is measured, and its row says so; one that answers as the
// model asked for says nothing.
func TestAnsweredModelIsChecked(t *testing.T) {
	for _, tc := range []struct{ answerAs, want string }{
		{"tiny-fallback-1b", `as model "tiny-fallback-1b", not "sim-llama"`},
		{"", ""},
	} {
		_, url := startSim(t, func(c *sim.Config) { c.TTFT, c.ITL, c.AnswerAs = time.Millisecond, 0, tc.answerAs })
		for _, stream := range []bool{true, false} {
			st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, cells: [{isl: 8, osl: 2}], concurrency: [1], requests: 2, warmup: 0, calibrate: "off", stream: %v`, url, stream), "")
			c, err := runStage(t, st, p)
			if err != nil {
				t.Fatal(err)
			}
			r := c.cells[0]
			has := strings.Contains(r.Notes, "the server answered 2 of 2 requests")
			if r.Status != results.StatusOK || (tc.want == "") == has || (tc.want != "" && !strings.Contains(r.Notes, tc.want)) {
				t.Errorf("answer as %q, stream %v: status %s, notes %q", tc.answerAs, stream, r.Status, r.Notes)
			}
		}
	}
}
