package sweep

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/sim"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/pipeline/engine"
	"github.com/benchrun/benchrun/pipeline/pipelinetest"
	"github.com/benchrun/benchrun/sinks"
)

// peakLive records the most live heap any collection found while it
// runs: the collector is made to run at every 10% of growth, and a
// finalizer armed anew at each collection reads the live heap, so the
// peak of what the sweep holds during a cell (its passes' results, its
// rows, what its sinks build at the cell's end) is seen within 10%.
type peakLive struct {
	mu   sync.Mutex
	max  uint64
	stop bool
}

func watchPeakLive() *peakLive {
	p := &peakLive{}
	var arm func()
	arm = func() {
		sentinel := new([16]byte)
		runtime.SetFinalizer(sentinel, func(*[16]byte) {
			sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
			metrics.Read(sample)
			p.mu.Lock()
			defer p.mu.Unlock()
			p.max = max(p.max, sample[0].Value.Uint64())
			if !p.stop {
				arm()
			}
		})
	}
	arm()
	return p
}

func (p *peakLive) end() uint64 {
	runtime.GC()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stop = true
	return p.max
}

// countCells is a sink that counts the requests of the cells it is
// handed, keeping nothing of them.
type countCells struct{ requests int64 }

func (*countCells) Name() string                  { return "count" }
func (*countCells) Start(*pipeline.SinkEnv) error { return nil }
func (*countCells) Stop(*pipeline.Summary) error  { return nil }
func (c *countCells) Cell(row results.Cell, _ results.Requests) error {
	c.requests += row.Requests
	return nil
}

// heldLoad is one of docs/METRICS.md's two loads: streamed requests of 64
// tokens, or non-streamed ones.
type heldLoad struct {
	name   string
	stream bool
	osl    int
}

var heldLoads = []heldLoad{{"streamed-osl64", true, 64}, {"non-streamed", false, 16}}

// heapAtCell runs one open-loop cell of n requests against the
// simulator (1 ms to the first token, 1 ms a token; its request records
// bounded) through the registry's sinks and returns the most live heap
// seen while it ran.
func heapAtCell(t testing.TB, url string, l heldLoad, n int) (uint64, int64) {
	t.Helper()
	reg := pipeline.NewRegistry()
	reg.AddKind(Kind)
	sinks.Builtin(reg) // the default sinks build what they keep of a cell at its end
	src := fmt.Sprintf(`name: "held"
model: {name: "sim-llama"}
stages: sweep: {kind: "sweep", target: %q, cells: [{isl: 16, osl: %d}], rates: [2000], requests: %d, warmup: 0, stream: %v, calibrate: "off", telemetry: {gpu: "off", metrics: "off", host: "off", machine: "off"}}
`, url, l.osl, n, l.stream)
	g := pipelinetest.LoadPlan(t, reg, src)
	ri, err := engine.NewRunInfo(filepath.Join(t.TempDir(), "runs"), g.Plan, nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	count := &countCells{}
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	runtime.GC()
	peak := watchPeakLive()
	sum, err := engine.Run(context.Background(), g, ri, engine.Options{Sinks: pipelinetest.UseSinks(count), FinallyTimeout: 5 * time.Second})
	live := peak.end()
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range sum.Stages {
		if st.Status != pipeline.StatusOK {
			t.Fatalf("%s: %s %s", st.Name, st.Status, st.Reason)
		}
	}
	return live, count.requests
}

// heldPerRequest is the live heap a cell holds at its peak per finished
// request: the growth from n to 4n requests over the 3n more.
func heldPerRequest(t testing.TB, l heldLoad, n int) float64 {
	url := pipelinetest.Sim(t, func(c *sim.Config) {
		c.Mode, c.TTFT, c.ITL, c.EOSProb, c.MaxRecords = sim.ModeFixed, time.Millisecond, time.Millisecond, 0, 16
	})
	heapAtCell(t, url, l, n/4) // warms the pools and the simulator
	small, ns := heapAtCell(t, url, l, n)
	large, nl := heapAtCell(t, url, l, 4*n)
	if ns != int64(n) || nl != int64(4*n) {
		t.Fatalf("%s: cells of %d and %d requests, want %d and %d", l.name, ns, nl, n, 4*n)
	}
	return (float64(large) - float64(small)) / float64(nl-ns)
}

// TestHeldPerRequest holds the state a cell keeps per finished request
// to a ceiling, generous beside docs/METRICS.md's figures (the
// measurement moves by a few hundred bytes from run to run): a cell
// that holds each streamed request's token events and answer to its end
// (6.4 KB a request of 64 tokens) fails it. Its requests are many enough
// that what is in flight when the peak is read moves it by little.
func TestHeldPerRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 26,000 requests per load")
	}
	ceiling := map[string]float64{"streamed-osl64": 5632, "non-streamed": 3072}
	for _, l := range heldLoads {
		t.Run(l.name, func(t *testing.T) {
			per := heldPerRequest(t, l, 5000)
			t.Logf("%s: %.0f bytes held per finished request", l.name, per)
			if per > ceiling[l.name] {
				t.Errorf("%s: %.0f bytes held per finished request, want under %.0f", l.name, per, ceiling[l.name])
			}
		})
	}
}

// BenchmarkHeldPerRequest prints the bytes a cell holds per finished
// request (held-B/req) for each load: docs/METRICS.md's figures. Its
// cells, 20,000 and 80,000 requests, are past what a cell holds whatever
// its length (a row group of 2,048 rows being written, stats.MaxHeld gap
// values being ranked), which a slope between smaller cells counts.
func BenchmarkHeldPerRequest(b *testing.B) {
	for _, l := range heldLoads {
		b.Run(l.name, func(b *testing.B) {
			var per float64
			for range b.N {
				per = heldPerRequest(b, l, 20000)
			}
			b.ReportMetric(per, "held-B/req")
		})
	}
}
