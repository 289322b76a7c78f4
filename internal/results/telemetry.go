package results

import "strings"

// TelemetrySource is one source of the telemetry columns as a cell row's
// notes name it when it was not measured: the sweep writes
// "<Unavailable><why>" when its probe could not be opened (no NVML, no
// metrics endpoint) and "<Probe>: <note>" when the probe read nothing;
// the reports read the reason back with TelemetryWhy. One definition, so
// the writer and its readers cannot drift apart.
type TelemetrySource struct {
	Unavailable string
	Probe       string
}

// The telemetry sources.
var (
	GPUTelemetry  = TelemetrySource{Unavailable: "GPU telemetry not measured: ", Probe: "nvml"}
	ServerMetrics = TelemetrySource{Unavailable: "server metrics not measured: ", Probe: "prometheus"}
	ServerProcess = TelemetrySource{Unavailable: "server CPU and memory not measured: ", Probe: "proc"}
)

// TelemetrySources lists them.
var TelemetrySources = []TelemetrySource{GPUTelemetry, ServerMetrics, ServerProcess}

func (s TelemetrySource) prefixes() []string { return []string{s.Unavailable, s.Probe + ": "} }

// TelemetryWhy is the reason the first row that gives one has in its
// notes for src not being measured; "" when none says. Notes are joined
// with "; ", which a reason may itself contain ("...known to benchrun; set
// telemetry.metrics to its URL"): the reason runs to the next note of a
// telemetry source, or to the end.
func TelemetryWhy(cells []Cell, src TelemetrySource) string {
	for _, c := range cells {
		for _, p := range src.prefixes() {
			i := strings.Index(c.Notes, p)
			if i < 0 || i > 0 && !strings.HasSuffix(c.Notes[:i], "; ") {
				continue
			}
			rest := c.Notes[i+len(p):]
			end := len(rest)
			for _, other := range TelemetrySources {
				for _, q := range other.prefixes() {
					if j := strings.Index(rest, "; "+q); j >= 0 && j < end {
						end = j
					}
				}
			}
			if why := strings.TrimSpace(rest[:end]); why != "" {
				return why
			}
		}
	}
	return ""
}
