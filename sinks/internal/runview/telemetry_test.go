package runview

import (
	"testing"

	"github.com/benchrun/benchrun/internal/results"
)

// The reason a source was not measured is its own note: not the notes
// that follow it, whatever they are, but with its own advice.
func TestTelemetryWhy(t *testing.T) {
	for _, c := range []struct {
		name, notes string
		src         results.TelemetrySource
		want        string
	}{
		{"GPU then calibration", "GPU telemetry not measured: NVML not found; prompt length calibrated by tokenize (12 single-token and 0 multi-token words, 3 tokens of overhead, 1 requests)",
			results.GPUTelemetry, "NVML not found"},
		{"calibration then GPU", "prompt length calibrated by tokenize (12 words); GPU telemetry not measured: no reading in the window",
			results.GPUTelemetry, "no reading in the window"},
		{"GPU then server metrics", "GPU telemetry not measured: NVML not found; server metrics not measured: Ollama exposes no metrics endpoint",
			results.GPUTelemetry, "NVML not found"},
		{"metrics advice kept, the next note not", "server metrics not measured: the engine (x) has no metrics endpoint known to benchrun; set telemetry.metrics to its URL; effective isl 30.0 differs from the 32 asked (prompt calibration did not hold for this server)",
			results.ServerMetrics, "the engine (x) has no metrics endpoint known to benchrun; set telemetry.metrics to its URL"},
		{"no note", "prompt length calibrated by tokenize", results.GPUTelemetry, ""},
	} {
		if got := TelemetryWhy([]results.Cell{{Notes: c.notes}}, c.src); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
