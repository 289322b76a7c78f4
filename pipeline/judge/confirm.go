package judge

import (
	"fmt"
	"slices"
	"strings"

	"github.com/benchrun/benchrun/internal/redact"
	"github.com/benchrun/benchrun/internal/regress"
	"github.com/benchrun/benchrun/internal/results"
)

// confirmation is the first measurement of a cell that was re-measured:
// its value of each metric that regressed.
type confirmation struct {
	regressed map[string]float64
}

// wantRemeasure marks a cell's first measurement for a second (Confirm).
// The caller holds mu.
func (j *Judge) wantRemeasure(c results.Cell, why string) {
	if j.remeasure == nil {
		j.remeasure = map[[2]string]string{}
	}
	k := [2]string{c.Stage, c.CellID}
	if _, ok := j.remeasure[k]; !ok {
		j.remeasure[k] = why
	}
}

// Confirm decides whether the cell of row, its first measurement in this
// attempt, just fed, should be measured once more before the run is
// judged: a latency check of it was inconclusive, or the plan's baseline
// confirms and it regressed against the cell's history. The judge
// decides; the stage that measured it measures it again (Env.Confirm) and
// feeds the second row, with Measurement 2.
func (j *Judge) Confirm(row results.Cell) bool {
	if row.Status != results.StatusOK || results.MeasurementOf(row.Measurement) > 1 {
		return false
	}
	j.mu.Lock()
	cur, ok := j.currentRow(row.Stage, row.CellID) // stamped: its key is the one history matches
	inconclusive := j.remeasure[[2]string{row.Stage, row.CellID}]
	j.mu.Unlock()
	if !ok {
		return false
	}
	var why []string
	if inconclusive != "" {
		why = append(why, inconclusive)
	}
	if what := j.regressedAgainstHistory(cur); len(what) > 0 {
		why = append(why, "regressed against its history ("+strings.Join(what, ", ")+")")
	}
	if len(why) == 0 {
		return false
	}
	said := strings.Join(why, "; ")
	j.mu.Lock()
	if j.remeasure == nil {
		j.remeasure = map[[2]string]string{}
	}
	j.remeasure[[2]string{row.Stage, row.CellID}] = said // the second row's note (RemeasureNote)
	j.mu.Unlock()
	fmt.Fprintf(j.progress, "↻ %s: %s; measuring it once more to confirm\n", CellLabel(cur), redact.String(said))
	return true
}

// regressedAgainstHistory is the end-of-run baseline check on this one
// row, uncorrected for multiple comparisons (an uncorrected p-value is
// never above a corrected one, so every cell the run's check could call
// regressed is re-measured first), when the plan's baseline confirms: the
// metrics that regressed, as "ttft_p50_ms +12.3%", recorded for the
// verdict (confirmValues).
func (j *Judge) regressedAgainstHistory(cur results.Cell) []string {
	h := j.history
	if h == nil || h.err != nil || !h.baseline.Confirm {
		return nil
	}
	opts, err := h.options()
	if err != nil {
		return nil
	}
	opts.Correction = regress.NoCorrection
	one := &regress.Run{ID: j.run.ID, StartedAt: j.run.StartedAt, Status: "ok", Cells: []results.Cell{cur}, SendLagThresholdMs: h.sendLag}
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
		j.mu.Lock()
		if j.confirmations == nil {
			j.confirmations = map[string]confirmation{}
		}
		j.confirmations[cur.CellID] = c
		j.mu.Unlock()
	}
	return what
}

// currentRow is the stage's current row of a cell. The caller holds mu.
func (j *Judge) currentRow(stage, cellID string) (results.Cell, bool) {
	rows := j.rows[stage]
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
// judging, with its measurement. The caller holds mu.
func (j *Judge) supersede(c results.Cell) {
	if results.MeasurementOf(c.Measurement) < 2 {
		return
	}
	earlier := func(v Verdict) bool {
		return v.Level == LevelRow && v.Stage == c.Stage && v.CellID == c.CellID && v.Measurement < c.Measurement
	}
	j.verdicts = slices.DeleteFunc(j.verdicts, func(v Verdict) bool { return earlier(v) && !v.Fails() })
	j.inconclusive = slices.DeleteFunc(j.inconclusive, earlier)
}

// confirmValues adds to a regression verdict's values what the cell's
// first measurement read, when the cell was re-measured to confirm. The
// caller holds mu.
func (j *Judge) confirmValues(v regress.Verdict, values map[string]string) {
	c, ok := j.confirmations[v.CellID]
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
