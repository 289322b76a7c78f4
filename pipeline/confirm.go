package pipeline

import (
	"fmt"
	"slices"
	"strings"

	"github.com/benchrun/benchrun/internal/redact"
	"github.com/benchrun/benchrun/internal/regress"
	"github.com/benchrun/benchrun/internal/results"
)

// Confirm reports whether a measuring stage should measure the cell of
// row, which it has just emitted, once more before the run is judged: row
// is its cell's first measurement in this attempt, and either a latency
// check of it was inconclusive (it failed while the machine's own
// lateness during the cell could explain it), or the plan's baseline
// confirms (`baseline.confirm`, on by default) and it regressed against
// the cell's history. A stage that can re-measure a point (sweep) calls
// it after Emit, while its server is still up, and emits the second
// measurement with Measurement 2 and the same cell id: the second is the
// cell's current row, the one its checks and the regression check judge;
// both rows are kept, and a check that failed on the first without the
// machine to explain it still counts (supersede).
//
// Why judge the second alone rather than both: a disturbance that passes
// (a neighbour's job, a cache that was cold) makes one measurement slow;
// a regression makes both slow, and the second, taken minutes later on
// the same server, is the independent look. The verdict records both.
func (e *Env) Confirm(row results.Cell) bool {
	if e == nil || e.confirm == nil || e.shards > 1 {
		// A shard's rows hold part of the load: the regression check
		// and its confirmation belong to the merged rows (benchrun
		// merge), and a re-measurement on one shard alone would leave
		// its peers waiting at the next cell.
		return false
	}
	return e.confirm(row)
}

// confirmation is the first measurement of a cell that was re-measured:
// its value of each metric that regressed.
type confirmation struct {
	regressed map[string]float64
}

// wantRemeasure marks a cell's first measurement for a second (Confirm).
// The caller holds emitMu.
func (r *runner) wantRemeasure(c results.Cell, why string) {
	if r.remeasure == nil {
		r.remeasure = map[[2]string]string{}
	}
	k := [2]string{c.Stage, c.CellID}
	if _, ok := r.remeasure[k]; !ok {
		r.remeasure[k] = why
	}
}

// needsConfirmation is Env.Confirm.
func (r *runner) needsConfirmation(row results.Cell) bool {
	if row.Status != results.StatusOK || results.MeasurementOf(row.Measurement) > 1 {
		return false
	}
	r.emitMu.Lock()
	cur, ok := r.currentRow(row.Stage, row.CellID) // stamped: its key is the one history matches
	inconclusive := r.remeasure[[2]string{row.Stage, row.CellID}]
	r.emitMu.Unlock()
	if !ok {
		return false
	}
	var why []string
	if inconclusive != "" {
		why = append(why, inconclusive)
	}
	if what := r.regressedAgainstHistory(cur); len(what) > 0 {
		why = append(why, "regressed against its history ("+strings.Join(what, ", ")+")")
	}
	if len(why) == 0 {
		return false
	}
	said := strings.Join(why, "; ")
	r.emitMu.Lock()
	if r.remeasure == nil {
		r.remeasure = map[[2]string]string{}
	}
	r.remeasure[[2]string{row.Stage, row.CellID}] = said // the second row's note (emit)
	r.emitMu.Unlock()
	fmt.Fprintf(r.opts.Progress, "↻ %s: %s; measuring it once more to confirm\n", CellLabel(cur), redact.String(said))
	return true
}

// regressedAgainstHistory is the end-of-run baseline check on this one
// row, uncorrected for multiple comparisons (an uncorrected p-value is
// never above a corrected one, so every cell the run's check could call
// regressed is re-measured first), when the plan's baseline confirms: the
// metrics that regressed, as "ttft_p50_ms +12.3%", recorded for the
// verdict (confirmValues).
func (r *runner) regressedAgainstHistory(cur results.Cell) []string {
	h := r.history
	if h == nil || h.err != nil || !h.baseline.Confirm {
		return nil
	}
	opts, err := r.regressOptions(h)
	if err != nil {
		return nil
	}
	opts.Correction = regress.NoCorrection
	one := &regress.Run{ID: r.ri.ID, StartedAt: RunRecord(r.ri, nil).StartedAt, Status: "ok", Cells: []results.Cell{cur}, SendLagThresholdMs: h.sendLag}
	hist, err := h.runsFor(one.Cells)
	if err != nil {
		return nil // the end-of-run check says why
	}
	rep := regress.CheckHistory(hist, one, opts)
	c := confirmation{regressed: map[string]float64{}}
	var what []string
	for _, v := range rep.Verdicts {
		if v.Outcome == regress.Regressed || v.Outcome == regress.Inconclusive {
			c.regressed[v.Metric] = v.New
			what = append(what, fmt.Sprintf("%s %+.1f%%", v.Metric, 100*v.Change))
		}
	}
	if len(what) > 0 {
		r.emitMu.Lock()
		if r.confirmations == nil {
			r.confirmations = map[string]confirmation{}
		}
		r.confirmations[cur.CellID] = c
		r.emitMu.Unlock()
	}
	return what
}

// currentRow is the stage's current row of a cell. The caller holds emitMu.
func (r *runner) currentRow(stage, cellID string) (results.Cell, bool) {
	rows := r.rows[stage]
	if i := slices.IndexFunc(rows, func(c results.Cell) bool { return c.CellID == cellID }); i >= 0 {
		return rows[i], true
	}
	return results.Cell{}, false
}

// supersede drops from what the run counts the verdicts of a cell's
// earlier measurement in this attempt that its confirmation replaces,
// when the confirmation is judged: the ones that passed or were
// inconclusive. A check that failed on the earlier measurement without
// the machine to explain it still counts, whatever the confirmation
// says: the server did fail it then. The assertions table keeps every
// judging, with its measurement. The caller holds emitMu.
func (r *runner) supersede(c results.Cell) {
	if results.MeasurementOf(c.Measurement) < 2 {
		return
	}
	earlier := func(v Verdict) bool {
		return v.Level == LevelRow && v.Stage == c.Stage && v.CellID == c.CellID && v.Measurement < c.Measurement
	}
	r.verdicts = slices.DeleteFunc(r.verdicts, func(v Verdict) bool { return earlier(v) && !v.Fails() })
	r.inconclusive = slices.DeleteFunc(r.inconclusive, earlier)
}

// confirmValues adds to a regression verdict's values what the cell's
// first measurement read, when the cell was re-measured to confirm.
func (r *runner) confirmValues(v regress.Verdict, values map[string]string) {
	c, ok := r.confirmations[v.CellID]
	if !ok {
		return
	}
	values["measurements"] = "2"
	if first, ok := c.regressed[v.Metric]; ok {
		values["first"] = fmt.Sprintf("%.6g", first)
		switch v.Outcome {
		case regress.Regressed:
			values["confirm"] = "confirmed: both measurements regressed"
		case regress.Inconclusive:
			values["confirm"] = "the second measurement too, while the machine was later than in the history's runs"
		default:
			values["confirm"] = "not confirmed: the first measurement regressed, the second did not"
		}
	}
}
