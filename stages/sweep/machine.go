package sweep

import (
	"fmt"
	"io"

	"github.com/benchrun/benchrun/internal/machine"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/pipeline"
)

// machineProbe measures the machine's own lateness beside the load for
// the whole stage (one probe process; machine.Probe), read over each
// cell's timed window into the row's machine_* columns: what lets a
// latency verdict tell a slower server from a busy machine. It outlives
// the server's restarts, unlike the telemetry probes.
type machineProbe struct {
	probe *machine.Probe
	// unavailable says why the lateness is not measured ("" when it is,
	// or when telemetry.machine is off).
	unavailable string
}

// startMachineProbe starts the probe unless the plan turned it off; a
// probe that cannot start is said once and in every row's notes.
func (s *Stage) startMachineProbe(env *pipeline.Env) *machineProbe {
	if s.cfg.Telemetry.Machine == "off" {
		return nil
	}
	p, err := machine.StartProbe()
	if err != nil {
		m := &machineProbe{unavailable: "machine lateness not measured: " + err.Error()}
		w := env.Progress
		if w == nil {
			w = io.Discard
		}
		fmt.Fprintf(w, "%s: %s\n", env.Stage.Name, m.unavailable)
		return m
	}
	if env.Live != nil {
		p.Observe(env.Live.MachineLate)
	}
	return &machineProbe{probe: p}
}

// begin opens a cell's window (nil: nothing measured).
func (m *machineProbe) begin() *machine.Window {
	if m == nil {
		return nil
	}
	w := m.probe.Begin()
	return &w
}

// end fills the row's machine columns from the window.
func (m *machineProbe) end(w *machine.Window, row *results.Cell) {
	if m == nil {
		return
	}
	if m.unavailable != "" {
		row.Notes = joinNotes(row.Notes, m.unavailable)
	}
	if w != nil {
		w.End().Fill(row)
	}
}

func (m *machineProbe) stop() {
	if m != nil && m.probe != nil {
		m.probe.Stop()
	}
}
