package engine

import (
	"maps"

	"github.com/benchrun/benchrun/internal/redact"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/pipeline"
)

// emit judges a finished cell and hands it to every output: identity
// stamps first (so every row of a run carries the same run id, plan, model
// digest, metadata and hardware), then the assertions, then the outputs:
// Cell, and Verdicts for outputs that take them. Every string of every row
// has the run's secrets masked before an assertion or an output sees it (a
// gateway that echoes the key in its error puts it in reason and error).
func (r *runner) emit(cell results.Cell, reqs results.Requests) error {
	r.emitMu.Lock()
	defer r.emitMu.Unlock()
	r.stamp(&cell)
	r.noteEngine(cell)
	cell.Measurement = results.MeasurementOf(cell.Measurement)
	if cell.Measurement > 1 {
		// Told apart wherever the row goes: the CSV's measurement column
		// (when the run may re-measure), and its notes everywhere.
		cell.Notes = joinNotes(results.MeasuredAgainNote(cell.Measurement, r.judge.RemeasureNote(cell.Stage, cell.CellID)), cell.Notes)
	}
	cell = redact.Value(cell)
	// The rows are stamped, masked and given their stored times as each
	// is read (in place when they are in memory): a long cell's rows are
	// read from its spool, never held here. What several sinks derive
	// from them alike (the time slices) is made once (results.Memoize).
	reqs = results.Memoize(results.MapRequests(reqs, func(q *results.Request) {
		q.Measurement = cell.Measurement
		q.RunID = cell.RunID
		q.Plan = cell.Plan
		if q.Stage == "" {
			q.Stage = cell.Stage
		}
		if q.CellID == "" {
			q.CellID = cell.CellID
		}
		if q.Attempt == 0 {
			q.Attempt = cell.Attempt
		}
		*q = results.Stored(redact.Value(*q))
	}))
	verdictRows := r.judge.Row(cell, reqs)
	// Durable sinks first: a row printed or summarised elsewhere is one
	// already on disk, or it says it is not.
	err := r.sinks.cell(cell, reqs, verdictRows)
	if err != nil && r.emitErr == nil {
		r.emitErr = err
	}
	return err
}

// stamp fills a cell row's identity columns that the stage left empty.
func (r *runner) stamp(cell *results.Cell) {
	if cell.RunID == "" {
		cell.RunID = r.ri.ID
	}
	if cell.Plan == "" {
		cell.Plan = r.g.Plan.Name
	}
	var stageMeta map[string]string
	if n := r.g.Node(cell.Stage); n != nil {
		stageMeta = n.Spec.Metadata
	}
	if len(r.g.Plan.Metadata) > 0 || len(stageMeta) > 0 {
		// Plan metadata (with --metadata stamps), then the stage's (a
		// variant's quant), under whatever the stage set on the row: a
		// copy, so no two rows share a map.
		m := maps.Clone(r.g.Plan.Metadata)
		if m == nil {
			m = map[string]string{}
		}
		maps.Copy(m, stageMeta)
		maps.Copy(m, cell.Metadata)
		cell.Metadata = m
	}
	id := pipeline.RunIdentity(r.ri)
	if cell.ModelDigest == "" {
		cell.ModelDigest = r.md.forRows() // hashed before the stage ran
	}
	if cell.Hostname == "" {
		cell.Hostname = id.Hostname
	}
	if cell.Hardware == "" {
		cell.Hardware = id.Hardware
	}
	if cell.BenchrunVersion == "" {
		cell.BenchrunVersion = id.BenchrunVersion
	}
}

// emitSamples hands telemetry sample rows to the outputs that take them,
// stamped with the run's identity. The telemetry stage reaches it through
// Env once that issue wires it.
func (r *runner) emitSamples(rows []results.Sample) error {
	r.emitMu.Lock()
	defer r.emitMu.Unlock()
	for i := range rows {
		if rows[i].RunID == "" {
			rows[i].RunID = r.ri.ID
		}
		if rows[i].Plan == "" {
			rows[i].Plan = r.g.Plan.Name
		}
	}
	rows = redact.Value(rows)
	err := r.sinks.samples(rows)
	if err != nil && r.emitErr == nil {
		r.emitErr = err
	}
	return err
}

// noteEngine records in the manifest each stage's engine and version, as
// its rows carry them.
func (r *runner) noteEngine(cell results.Cell) {
	if r.manifest == nil || (cell.Engine == "" && cell.EngineVersion == "") {
		return
	}
	e := pipeline.EngineRecord{Stage: cell.Stage, Engine: cell.Engine, Version: cell.EngineVersion}
	for _, have := range r.manifest.Engines {
		if have == e {
			return
		}
	}
	r.manifest.Engines = append(r.manifest.Engines, e)
}

// joinNotes joins two notes with "; ", either of them possibly empty.
func joinNotes(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}
