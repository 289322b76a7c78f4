package telemetry

import (
	"context"

	"github.com/benchrun/benchrun/internal/results"
)

// A Probe measures one source beside the load generator — the GPUs
// (NVML), the server's metrics endpoint (Prometheus text), the server's
// process tree (/proc) — over each cell's timed window. A measuring stage
// calls Begin when a cell's timed window opens and End when it closes;
// between the two the probe samples on its own goroutine at its interval.
// A probe never fails or slows a cell: what it cannot read it leaves NULL
// and says why in End's note.
type Probe interface {
	// Name is the samples' Source ("nvml", "prometheus", "proc").
	Name() string
	// Begin opens the window of the cell (a first reading: counters,
	// energy), and starts sampling.
	Begin(ctx context.Context, cellID string)
	// End closes the window: a last reading, then the columns the probe
	// owns are filled into row (nil where not measured: never 0 for
	// "unknown"), and the raw samples of the window are returned (Source
	// Name(), CellID set, At the reading's time). note says what could
	// not be measured and why ("" when everything was); it is the same
	// note every cell, so the caller can say it once.
	End(ctx context.Context, row *results.Cell) (samples []results.Sample, note string)
	// Close stops the probe for good (its goroutines, its library).
	Close() error
}
