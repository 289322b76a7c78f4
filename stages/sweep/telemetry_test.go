package sweep

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/machine/machinetest"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/sim"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
)

// telemetryRun is a sweep run that keeps its samples and progress too.
type telemetryRun struct {
	collected
	samples  []results.Sample
	progress strings.Builder
}

func runWithSamples(t *testing.T, st *Stage, p *schema.Plan) (*telemetryRun, error) {
	t.Helper()
	if err := st.Validate(check(t, p)); err != nil {
		t.Fatalf("validate: %v", err)
	}
	var r telemetryRun
	var pmu sync.Mutex
	env := &pipeline.Env{Stage: p.Stages[0], Plan: p, Log: io.Discard,
		Progress: writerFunc(func(b []byte) (int, error) { pmu.Lock(); defer pmu.Unlock(); return r.progress.Write(b) }),
		Emit: func(cell results.Cell, in results.Requests) error {
			reqs, _ := results.CollectRequests(in)
			r.mu.Lock()
			defer r.mu.Unlock()
			r.cells = append(r.cells, cell)
			r.reqs = append(r.reqs, reqs...)
			return nil
		},
		EmitSamples: func(ss []results.Sample) error {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.samples = append(r.samples, ss...)
			return nil
		}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := st.Run(ctx, env)
	return &r, err
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// The server's own metrics, scraped over real HTTP from the simulator in
// engine mode with two sequence slots: eight concurrent sessions make a
// waiting queue (num_inflight_park_waits > 0, a waiting peak), one
// session makes none (0, a measurement, not NULL); the server's token
// counters over the window equal what the requests were served. Without
// NVML here, the GPU columns are NULL and the stage says why, once.
func TestTelemetryServerMetrics(t *testing.T) {
	_, url := startSim(t, func(c *sim.Config) {
		c.Mode = sim.ModeEngine
		c.Engine.MaxNumSeqs = 2
		c.Engine.StepBase = 2 * time.Millisecond
	})
	st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q
		cells: [{isl: 32, osl: 16}], concurrency: [1, 8], requests: 16, warmup: 0, calibrate: "off"
		telemetry: {interval: "20ms"}`, url), "")
	machine := machinetest.Start()
	imprecise := ""
	r, err := runWithSamples(t, st, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.cells) != 2 {
		t.Fatalf("%d rows", len(r.cells))
	}
	for _, c := range r.cells {
		if c.Status != results.StatusOK {
			t.Fatalf("%s: %s %s", c.CellID, c.Status, c.Reason)
		}
		var gen float64
		for _, q := range r.reqs {
			if q.CellID == c.CellID {
				gen += float64(q.OutputTokens)
			}
		}
		t.Logf("%s: running peak %v, waiting peak %v, park waits %v, generation tokens %v (requests %v), notes %q", c.CellID,
			v(c.ServerRunningPeak), v(c.ServerWaitingPeak), v(c.ServerParkWaits), v(c.ServerGenerationTokens), gen, c.Notes)
		if c.ServerGenerationTokens == nil || *c.ServerGenerationTokens != gen {
			t.Errorf("%s: server generation tokens %v, want the %v the requests got", c.CellID, v(c.ServerGenerationTokens), gen)
		}
		if c.ServerRunningPeak == nil || *c.ServerRunningPeak < 1 || *c.ServerRunningPeak > 2 {
			t.Errorf("%s: running peak %v, want 1 or 2 (two slots)", c.CellID, v(c.ServerRunningPeak))
		}
		switch c.Concurrency {
		case 1:
			if c.ServerWaitingPeak == nil || c.ServerParkWaits == nil {
				t.Errorf("c=1: waiting peak %v, park waits %v; want measured (0), not NULL", v(c.ServerWaitingPeak), v(c.ServerParkWaits))
			} else if *c.ServerWaitingPeak != 0 || *c.ServerParkWaits != 0 {
				// One session's request waits only until the engine's
				// next step admits it: a scrape sees it there when the
				// step loop runs late, which is the machine's doing
				// (judged last, so that the other checks run).
				imprecise = fmt.Sprintf("c=1: waiting peak %v, park waits %v; want 0 and 0", v(c.ServerWaitingPeak), v(c.ServerParkWaits))
			}
		case 8:
			if v(c.ServerWaitingPeak) <= 0 || v(c.ServerParkWaits) <= 0 {
				t.Errorf("c=8 on 2 slots: waiting peak %v, park waits %v; want both > 0", v(c.ServerWaitingPeak), v(c.ServerParkWaits))
			}
		}
		if c.GPUUtilMean != nil || c.EnergyJ != nil || !strings.Contains(c.Notes, "GPU telemetry not measured") {
			t.Errorf("%s: GPU util %v energy %v notes %q; want NULL without NVML, and why", c.CellID, v(c.GPUUtilMean), v(c.EnergyJ), c.Notes)
		}
	}
	n := 0
	for _, s := range r.samples {
		if s.Source == "prometheus" && s.Stage == "sweep" && (s.CellID == r.cells[0].CellID || s.CellID == r.cells[1].CellID) {
			n++
		}
	}
	if n == 0 {
		t.Errorf("no prometheus samples with the cells' ids among %d samples", len(r.samples))
	}
	if got := strings.Count(r.progress.String(), "GPU telemetry not measured"); got != 1 {
		t.Errorf("the GPU note said %d times on the progress stream, want once:\n%s", got, r.progress.String())
	}
	if imprecise != "" {
		machine.Judge(t, "one session makes no waiting queue")
		t.Error(imprecise)
	}
}

// A metrics endpoint that answers garbage, or slowly, neither fails nor
// slows the cell: the columns are NULL and the note says why.
func TestTelemetryBadMetricsEndpoint(t *testing.T) {
	_, url := startSim(t, nil)
	for _, tc := range []struct {
		name string
		h    http.HandlerFunc
	}{
		{"garbage", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "<html>not metrics{{{\n") }},
		{"slow", func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-time.After(5 * time.Second):
			case <-r.Context().Done():
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := httptest.NewServer(tc.h)
			t.Cleanup(func() { bad.CloseClientConnections(); bad.Close() })
			st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q
				cells: [{isl: 16, osl: 4}], concurrency: [1], requests: 4, warmup: 0, calibrate: "off"
				telemetry: {gpu: "off", metrics: %q}`, url, bad.URL+"/metrics"), "")
			start := time.Now()
			r, err := runWithSamples(t, st, p)
			if err != nil {
				t.Fatal(err)
			}
			took := time.Since(start)
			c := r.cells[0]
			if c.Status != results.StatusOK || c.ServerRunningPeak != nil || c.ServerGenerationTokens != nil || !strings.Contains(c.Notes, "prometheus:") {
				t.Errorf("%s %s: running peak %v, tokens %v, notes %q; want ok, NULL, and the reason", c.Status, c.Reason, v(c.ServerRunningPeak), v(c.ServerGenerationTokens), c.Notes)
			}
			if took > 4*time.Second {
				t.Errorf("the cell took %s with a %s metrics endpoint", took, tc.name)
			}
		})
	}
}

// telemetry off: no probe, no note, no sample.
func TestTelemetryOff(t *testing.T) {
	_, url := startSim(t, nil)
	st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q
		cells: [{isl: 16, osl: 4}], concurrency: [1], requests: 2, warmup: 0, calibrate: "off"
		telemetry: {gpu: "off", metrics: "off", host: "off"}`, url), "")
	r, err := runWithSamples(t, st, p)
	if err != nil {
		t.Fatal(err)
	}
	c := r.cells[0]
	if c.ServerRunningPeak != nil || c.GPUUtilMean != nil || strings.Contains(c.Notes, "telemetry") || strings.Contains(c.Notes, "metrics") || len(r.samples) != 0 {
		t.Errorf("running peak %v, gpu %v, notes %q, %d samples; want nothing measured and nothing said", v(c.ServerRunningPeak), v(c.GPUUtilMean), c.Notes, len(r.samples))
	}
}
