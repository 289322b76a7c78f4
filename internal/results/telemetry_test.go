package results_test

import (
	"testing"

	"github.com/benchrun/benchrun/internal/results"
)

// The reason a row's notes give for a telemetry source not being
// measured: from the sweep's "not measured" note or the probe's own, to
// the next telemetry note (a reason may itself hold "; ").
func TestTelemetryWhy(t *testing.T) {
	notes := "prompts=cold; GPU telemetry not measured: NVML is not available; server metrics not measured: the engine (x) has no metrics endpoint known to benchrun; set telemetry.metrics to its URL; proc: server pid 7 exited during the window"
	for _, tc := range []struct {
		src  results.TelemetrySource
		want string
	}{
		{results.GPUTelemetry, "NVML is not available"},
		{results.ServerMetrics, "the engine (x) has no metrics endpoint known to benchrun; set telemetry.metrics to its URL"},
		{results.ServerProcess, "server pid 7 exited during the window"},
	} {
		if got := results.TelemetryWhy([]results.Cell{{Notes: "ok"}, {Notes: notes}}, tc.src); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.src.Probe, got, tc.want)
		}
	}
	if got := results.TelemetryWhy([]results.Cell{{Notes: "xGPU telemetry not measured: no"}}, results.GPUTelemetry); got != "" {
		t.Errorf("a prefix inside another note: %q, want none", got)
	}
}
