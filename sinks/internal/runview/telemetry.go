package runview

import (
	"strings"

	"github.com/benchrun/benchrun/internal/results"
)

// TelemetryWhy is why src was not measured, as the rows' notes say
// (results.TelemetryWhy), cut to its own note. results.TelemetryWhy runs
// a reason on to the next note of a telemetry source, so a note of
// anything else after it (the sweep's "prompt length calibrated by ...")
// read as part of "GPU not measured (...)". A reason's own "; " clause is
// advice on what to set ("... known to benchrun; set telemetry.metrics to
// its URL"), which is kept; any other clause is the next note.
func TelemetryWhy(cells []results.Cell, src results.TelemetrySource) string {
	parts := strings.Split(results.TelemetryWhy(cells, src), "; ")
	why := parts[0]
	for _, p := range parts[1:] {
		if !strings.HasPrefix(p, "set ") {
			break
		}
		why += "; " + p
	}
	return why
}
