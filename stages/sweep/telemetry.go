package sweep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/benchrun/benchrun/internal/engines"
	"github.com/benchrun/benchrun/internal/httpsafe"
	"github.com/benchrun/benchrun/internal/machine"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/telemetry"
	"github.com/benchrun/benchrun/pipeline"
)

// probeSet is what the sweep measures beside the load: one telemetry
// probe per source that could be opened (the GPUs, the server's metrics,
// its process tree), read over each cell's timed window. A source that
// cannot be read is said once on the progress stream and in every row's
// notes; its columns stay NULL.
type probeSet struct {
	probes []telemetry.Probe
	// unavailable says, per source, why it is not measured (the rows'
	// notes); said tracks what was said once already.
	unavailable []string
	said        map[string]bool
	progress    io.Writer
	stage       string
	// machine measures the machine's own lateness (machine.go); window is
	// the open cell's.
	machine *machineProbe
	window  *machine.Window
}

// newGPUProbe, newPromProbe and newProcProbe open the probes; tests
// replace them (a mocked NVML).
var (
	newGPUProbe  = telemetry.NewNVMLProbe
	newPromProbe = telemetry.NewPromProbe
	newProcProbe = telemetry.NewProcProbe
)

// openProbes opens the probes the stage's telemetry settings ask for, on
// the target server.
func (s *Stage) openProbes(env *pipeline.Env, target *pipeline.Outputs, engine string, headers map[string]string, apiKey string) *probeSet {
	cfg := s.cfg.Telemetry
	ps := &probeSet{said: map[string]bool{}, progress: env.Progress, stage: env.Stage.Name, machine: s.machine}
	if ps.progress == nil {
		ps.progress = io.Discard
	}
	interval, err := time.ParseDuration(cfg.Interval)
	if err != nil || interval <= 0 {
		interval = 100 * time.Millisecond
	}
	if cfg.GPU != "off" {
		p, err := newGPUProbe(target.GPUs, interval)
		switch {
		case errors.Is(err, telemetry.ErrNoNVML):
			ps.unavailable = append(ps.unavailable, results.GPUTelemetry.Unavailable+err.Error())
		case err != nil:
			ps.unavailable = append(ps.unavailable, results.GPUTelemetry.Unavailable+err.Error())
		default:
			ps.probes = append(ps.probes, p)
		}
	}
	if cfg.Metrics != "off" {
		url := target.MetricsURL
		if strings.HasPrefix(cfg.Metrics, "http") {
			url = cfg.Metrics
		}
		eng := engines.For(engine)
		if url == "" && target.URL != "" {
			if path := eng.MetricsPath; path != "" {
				url = strings.TrimRight(target.URL, "/") + path
			}
		}
		switch {
		case url == "" && eng.NoMetrics != "":
			ps.unavailable = append(ps.unavailable, results.ServerMetrics.Unavailable+eng.NoMetrics)
		case url == "":
			ps.unavailable = append(ps.unavailable, results.ServerMetrics.Unavailable+"the engine ("+orUnknown(engine)+") has no metrics endpoint known to benchrun; set telemetry.metrics to its URL")
		default:
			// The scrapes carry the requests' headers and key: a gateway or
			// a server with --api-key guards /metrics like the API.
			client := &http.Client{Timeout: 2 * time.Second, CheckRedirect: httpsafe.NoRedirects, Transport: headerTransport{headers: headers, apiKey: apiKey}}
			ps.probes = append(ps.probes, newPromProbe(url, engine, interval, client))
		}
	}
	if cfg.Host != "off" && target.PID > 0 {
		p, err := newProcProbe(target.PID, interval)
		if err != nil {
			ps.unavailable = append(ps.unavailable, results.ServerProcess.Unavailable+err.Error())
		} else {
			ps.probes = append(ps.probes, p)
		}
	}
	for _, u := range ps.unavailable {
		ps.once(u)
	}
	return ps
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// once says a line on the progress stream the first time it comes up.
func (ps *probeSet) once(line string) {
	if ps == nil || ps.said[line] {
		return
	}
	ps.said[line] = true
	fmt.Fprintf(ps.progress, "%s: %s\n", ps.stage, line)
}

// begin opens every probe's window for the cell.
func (ps *probeSet) begin(ctx context.Context, cellID string) {
	if ps == nil {
		return
	}
	for _, p := range ps.probes {
		p.Begin(ctx, cellID)
	}
	if ps.window != nil {
		ps.window.End() // an unended window would hold the probe's samples
	}
	ps.window = ps.machine.begin()
}

// end closes every probe's window: the columns go into row, what could
// not be measured into its notes (and once to the progress stream), and
// the samples come back for the samples table.
func (ps *probeSet) end(ctx context.Context, row *results.Cell) []results.Sample {
	if ps == nil {
		return nil
	}
	ps.machine.end(ps.window, row)
	ps.window = nil
	var samples []results.Sample
	notes := append([]string(nil), ps.unavailable...)
	for _, p := range ps.probes {
		ss, note := p.End(ctx, row)
		samples = append(samples, ss...)
		if note != "" {
			line := p.Name() + ": " + note
			notes = append(notes, line)
			ps.once(line)
		}
	}
	for _, n := range notes {
		row.Notes = joinNotes(row.Notes, n)
	}
	for i := range samples {
		if samples[i].CellID == "" {
			samples[i].CellID = row.CellID
		}
		samples[i].Stage = row.Stage
	}
	return samples
}

// close stops every probe.
func (ps *probeSet) close() {
	if ps == nil {
		return
	}
	for _, p := range ps.probes {
		_ = p.Close()
	}
}

// headerTransport adds the stage's request headers and API key to every
// scrape.
type headerTransport struct {
	headers map[string]string
	apiKey  string
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.headers {
		r.Header.Set(k, v)
	}
	if h.apiKey != "" && r.Header.Get("Authorization") == "" {
		r.Header.Set("Authorization", "Bearer "+h.apiKey)
	}
	return http.DefaultTransport.RoundTrip(r)
}
