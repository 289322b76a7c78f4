package results

// AttemptOf is the attempt a row belongs to: its attempt column, or 1 for
// a row written before the column existed (schema version 1 files read it
// as 0). DuckDB users write coalesce(attempt, 1).
func AttemptOf(attempt int64) int64 {
	if attempt < 1 {
		return 1
	}
	return attempt
}

// MeasurementOf is a row's measurement number; files written before the
// column existed read 0, which is the first.
func MeasurementOf(m int64) int64 { return max(m, 1) }

// LatestCells keeps the current row of each cell id: the one of the
// highest attempt (a resumed run re-measures cells that failed and keeps
// the earlier rows), within it the highest measurement (a confirmation
// supersedes the measurement it confirmed), the later row among rows of
// the same attempt and measurement (runs written before those columns),
// in the order the cells first appeared.
func LatestCells(cells []Cell) []Cell {
	idx := map[string]int{}
	var out []Cell
	for _, c := range cells {
		if i, ok := idx[c.CellID]; ok && c.CellID != "" {
			if o := out[i]; AttemptOf(c.Attempt) > AttemptOf(o.Attempt) ||
				AttemptOf(c.Attempt) == AttemptOf(o.Attempt) && MeasurementOf(c.Measurement) >= MeasurementOf(o.Measurement) {
				out[i] = c
			}
			continue
		}
		idx[c.CellID] = len(out)
		out = append(out, c)
	}
	return out
}

// AttemptMeasurements keeps every measurement of each cell's highest
// attempt (a cell re-measured to confirm has two), in the order they were
// written: what the run's judging saw, as it saw it.
func AttemptMeasurements(cells []Cell) []Cell {
	top := map[string]int64{}
	for _, c := range cells {
		top[c.CellID] = max(top[c.CellID], AttemptOf(c.Attempt))
	}
	var out []Cell
	for _, c := range cells {
		if AttemptOf(c.Attempt) == top[c.CellID] {
			out = append(out, c)
		}
	}
	return out
}

// LatestVerdicts keeps, for each cell id and level, the verdicts of its
// last judging: those of the highest attempt, and among them those with
// the latest judged_at (all verdicts of one cell row share their
// judged_at; a re-measured cell's row is judged again), and a row
// check of that attempt's earlier judging that failed (outcome fail or
// error): a failure the machine could not explain counts whatever the
// re-measurement said. The level keeps a cell's row assertions apart
// from its regression checks, which are judged together at the end of
// the run.
func LatestVerdicts(vs []Verdict) []Verdict {
	type judging struct {
		attempt int64
		at      int64
	}
	type group struct{ cell, level string }
	later := func(a, b judging) bool { return a.attempt > b.attempt || a.attempt == b.attempt && a.at > b.at }
	latest := map[group]judging{}
	for _, v := range vs {
		j := judging{AttemptOf(v.Attempt), v.JudgedAt.UnixNano()}
		if l, ok := latest[group{v.CellID, v.Level}]; !ok || later(j, l) {
			latest[group{v.CellID, v.Level}] = j
		}
	}
	var out []Verdict
	for _, v := range vs {
		j, l := judging{AttemptOf(v.Attempt), v.JudgedAt.UnixNano()}, latest[group{v.CellID, v.Level}]
		sticky := j.attempt == l.attempt && v.Level != "regression" && (v.Outcome == OutcomeFail || v.Outcome == OutcomeError)
		if j == l || sticky {
			out = append(out, v)
		}
	}
	return out
}

// RequestsOf groups request rows by the cell rows they belong to: for
// each cell id of cells (LatestCells' output, say), the requests of that
// cell's attempt and measurement. Requests of superseded attempts and
// measurements are left out, so a re-measured cell has only its own
// requests.
func RequestsOf(cells []Cell, reqs []Request) map[string][]Request {
	type which struct{ attempt, measurement int64 }
	want := map[string]which{}
	for _, c := range cells {
		want[c.CellID] = which{AttemptOf(c.Attempt), MeasurementOf(c.Measurement)}
	}
	out := map[string][]Request{}
	for _, q := range reqs {
		if w, ok := want[q.CellID]; ok && (which{AttemptOf(q.Attempt), MeasurementOf(q.Measurement)}) == w {
			out[q.CellID] = append(out[q.CellID], q)
		}
	}
	return out
}
