package judge

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/benchrun/benchrun/internal/redact"
	"github.com/benchrun/benchrun/internal/regress"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/rundir"
	"github.com/benchrun/benchrun/schema"
)

// LevelRegression is the level of a verdict that compares a cell with the
// same cell's history (the plan's `baseline`).
const LevelRegression = regress.LevelRegression

// History is the plan's baseline history: `baseline.COLUMN` assertions
// read it as cells finish, the confirmation as a cell's first measurement
// ends, and the regression check at the end of the run. Each reads as far
// back as its cells need (regress.HistoryReader), under mu.
type History struct {
	baseline *schema.Baseline
	root     string
	mu       sync.Mutex
	reader   *regress.HistoryReader
	err      error
	// sendLag is the plan's send-lag threshold per stage, for the current
	// run's client-bound cells.
	sendLag map[string]float64
}

// OpenHistory opens the baseline history b of the plan named plan under
// root, leaving out the run runID itself: the plan's runs are listed now,
// their rows read when a cell asks (runsFor). sendLag is the plan's
// send-lag threshold per stage (regress.SendLagThresholds). An error
// reading it is kept and said where it matters.
func OpenHistory(b *schema.Baseline, root, plan, runID string, sendLag map[string]float64) *History {
	h := &History{baseline: b, root: root, sendLag: sendLag}
	h.reader, h.err = regress.OpenHistory(root, rundir.Filter{Plan: plan}, runID)
	return h
}

// runsFor is the history as far back as each of cells needs: its last
// 2×last runs with an ok row of its own (the check then takes its last
// `last` usable ones after its exclusions), however many runs of other
// variants came between. The runs are oldest first.
func (h *History) runsFor(cells []results.Cell) ([]*regress.Run, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err != nil {
		return nil, h.err
	}
	keys := make([]regress.Key, 0, len(cells))
	for _, c := range cells {
		if c.Status == results.StatusOK { // the check judges no other
			keys = append(keys, regress.KeyOf(c))
		}
	}
	if err := h.reader.Need(keys, max(h.baseline.Last, 2)*2); err != nil {
		h.err = err
		return nil, err
	}
	return h.reader.Runs(), nil
}

// options are the plan's baseline settings as the history check takes
// them.
func (h *History) options() (regress.Options, error) {
	opts := regress.Options{LastN: h.baseline.Last, MinRuns: h.baseline.MinRuns}
	if len(h.baseline.Metrics) > 0 {
		var err error
		if opts.Metrics, err = regress.SelectMetrics(h.baseline.Metrics); err != nil {
			return opts, err
		}
	}
	return opts, nil
}

// Judged are verdict rows of one stage, as they go to the sinks.
type Judged struct {
	Stage string
	Rows  []results.Verdict
}

// Baseline checks every measured cell of the run against its history
// once every stage has ended (the whole run is one family for the
// multiple-comparison correction), and records a verdict per cell and
// metric: regressed fails the run (exit 1); insufficient data is said,
// never a pass in disguise. It returns the verdict rows by stage, in
// stage-name order; nil without a baseline.
func (j *Judge) Baseline() []Judged {
	h := j.history
	if h == nil {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	cur := &regress.Run{ID: j.run.ID, Dir: j.run.Dir, StartedAt: j.run.StartedAt, Status: rundir.RunOK, SendLagThresholdMs: h.sendLag}
	for _, st := range j.measuring {
		cur.Cells = append(cur.Cells, j.rows[st]...)
	}
	hist, err := h.runsFor(cur.Cells)
	if err != nil {
		fmt.Fprintf(j.progress, "✗ baseline: reading the history under %s: %v\n", h.root, err)
		j.failed = append(j.failed, Verdict{Assertion: "baseline", Level: LevelRegression, Severity: SeverityFail, Error: err.Error(), Cell: "run"})
		return nil
	}
	opts, err := h.options()
	if err != nil {
		return nil // vet refused it
	}
	rep := regress.CheckHistory(hist, cur, opts)
	now := time.Now().UTC()
	byStage := map[string][]results.Verdict{}
	var stages []string
	insufficient := 0
	for _, v := range rep.Verdicts {
		cell, row := j.regression(v, h.baseline, now)
		if v.Outcome == regress.Insufficient {
			insufficient++
		}
		if _, ok := byStage[cell.Stage]; !ok {
			stages = append(stages, cell.Stage)
		}
		byStage[cell.Stage] = append(byStage[cell.Stage], row)
	}
	j.sayBaseline(rep, insufficient)
	sort.Strings(stages)
	out := make([]Judged, 0, len(stages))
	for _, st := range stages {
		out = append(out, Judged{Stage: st, Rows: redact.Value(byStage[st])})
	}
	return out
}

// regression records one cell's regression verdict and returns the cell
// and its row for the assertions table. The caller holds mu.
func (j *Judge) regression(v regress.Verdict, b *schema.Baseline, now time.Time) (results.Cell, results.Verdict) {
	cell, _ := j.rowOf(v.CellID)
	pv := Verdict{
		Assertion: "regression of " + v.Metric, Name: v.Metric, Severity: SeverityFail, Level: LevelRegression,
		Pos: b.Pos.String(), Stage: cell.Stage, CellID: v.CellID, Cell: CellLabel(cell),
		Passed: v.Outcome != regress.Regressed && v.Outcome != regress.Inconclusive,
		Values: regressionValues(v), Measurement: results.MeasurementOf(cell.Measurement),
	}
	j.confirmValues(v, pv.Values)
	j.verdicts = append(j.verdicts, pv)
	switch v.Outcome {
	case regress.Inconclusive:
		pv.Inconclusive, pv.Explained = true, v.Reason
		j.verdicts[len(j.verdicts)-1] = pv
		j.inconclusive = append(j.inconclusive, pv)
		fmt.Fprintf(j.progress, "? regression inconclusive: %s\n", redact.String(v.String()))
	case regress.Unknown:
		// The history could not decide (a history too noisy for a
		// change larger than any it has shown): said, never a pass in
		// silence, and no failure.
		fmt.Fprintf(j.progress, "? regression unknown: %s\n", redact.String(v.String()))
	case regress.Regressed:
		j.failed = append(j.failed, pv)
		confirmed := ""
		if c := pv.Values["confirm"]; c != "" {
			confirmed = " (" + c + ", first " + pv.Values["first"] + ")"
		}
		fmt.Fprintf(j.progress, "✗ regression: %s%s\n", redact.String(v.String()), confirmed)
	}
	row := verdictRow(cell, &Assertion{Stage: cell.Stage}, pv, now)
	row.Scope, row.Outcome, row.Attempt = "plan", string(v.Outcome), cell.Attempt
	if v.Outcome == regress.Inconclusive {
		row.Outcome = results.OutcomeInconclusive
	}
	return cell, row
}

// sayBaseline writes the baseline check's one line. The caller holds mu.
func (j *Judge) sayBaseline(rep *regress.Report, insufficient int) {
	b := j.history.baseline
	short := ""
	if insufficient > 0 {
		short = fmt.Sprintf(" (fewer than %d usable runs: not judged)", max(b.MinRuns, 2))
	}
	if n := len(j.confirmations); n > 0 {
		short += fmt.Sprintf("; %d cells re-measured to confirm", n)
	}
	if n := rep.Count(regress.Inconclusive); n > 0 {
		short = fmt.Sprintf("; %d inconclusive (the machine was later than in the history's runs)", n) + short
	}
	if n := rep.Count(regress.Unknown); n > 0 {
		short = fmt.Sprintf("; %d unknown (the history too noisy to decide)", n) + short
	}
	fmt.Fprintf(j.progress, "benchrun: baseline (%s, %d runs of history): %d checks, %d regressed, %d improved, %d same, %d insufficient data%s%s%s\n",
		j.history.root, len(rep.RunsOld), len(rep.Verdicts), rep.Count(regress.Regressed), rep.Count(regress.Improved), rep.Count(regress.Same), insufficient, short, levelNote(rep), excludedNote(rep.Excluded))
}

func excludedNote(m map[string]int) string {
	if len(m) == 0 {
		return ""
	}
	return "; left out: " + regress.DescribeExcluded(m)
}

// rowOf is the current row of a cell id. The caller holds mu.
func (j *Judge) rowOf(id string) (results.Cell, bool) {
	for _, rows := range j.rows {
		for _, c := range rows {
			if c.CellID == id {
				return c, true
			}
		}
	}
	return results.Cell{CellID: id}, false
}

// regressionValues are what a regression verdict read, as text.
func regressionValues(v regress.Verdict) map[string]string {
	f := func(x float64) string {
		if math.IsNaN(x) {
			return "null"
		}
		return fmt.Sprintf("%.6g", x)
	}
	out := map[string]string{
		"old": f(v.Old), "new": f(v.New), "change_pct": f(100 * v.Change), "low": f(v.Low), "high": f(v.High),
		"n": fmt.Sprint(v.N), "method": v.Method, "runs": strings.Join(v.Runs, ","), "outcome": string(v.Outcome),
	}
	if v.Reason != "" {
		out["reason"] = v.Reason
	}
	return out
}

// loadBaselineCells says, before anything is measured, when the history
// the row-level assertions that read `baseline.COLUMN` need cannot be
// read: those assertions then say no cell matched. Each cell's row is
// read when the cell finishes (baselineCell).
func (j *Judge) loadBaselineCells() {
	h := j.history
	if h == nil || !j.readsBaseline() {
		return
	}
	if h.err != nil {
		fmt.Fprintf(j.progress, "benchrun: baseline: reading the history under %s: %v (assertions reading baseline. have nothing to compare with)\n", h.root, h.err)
		return
	}
	j.baseCells = true
}

func (j *Judge) readsBaseline() bool {
	for _, as := range j.asserts {
		for _, a := range as {
			if a.ReadsBaseline {
				return true
			}
		}
	}
	return false
}

// baselineCell is the baseline's row of the same cell: the newest ok
// history run's ok row of it, or nil.
func (j *Judge) baselineCell(c results.Cell) *results.Cell {
	if !j.baseCells {
		return nil
	}
	hist, err := j.history.runsFor([]results.Cell{c})
	if err != nil {
		return nil
	}
	key := regress.KeyOf(c)
	for i := len(hist) - 1; i >= 0; i-- { // newest first
		h := hist[i]
		if h.Status != rundir.RunOK || h.ID == j.run.ID {
			continue
		}
		for _, hc := range h.Cells {
			if hc.Status == results.StatusOK && regress.KeyOf(hc) == key {
				return &hc
			}
		}
	}
	return nil
}

// levelNote says where the history changed level: the verdicts judged
// against the runs since a change point, by run and change.
func levelNote(rep *regress.Report) string {
	seen := map[string]bool{}
	var parts []string
	for _, v := range rep.Verdicts {
		if lc := v.LevelChange; lc != nil {
			s := fmt.Sprintf("%s of %s changed level at run %s (%+.1f%%)", v.Metric, v.CellID, lc.Run, 100*lc.Change)
			if !seen[s] {
				seen[s] = true
				parts = append(parts, s)
			}
		}
	}
	if len(parts) == 0 {
		return ""
	}
	const shown = 3
	more := ""
	if len(parts) > shown {
		more = fmt.Sprintf(" and %d more", len(parts)-shown)
		parts = parts[:shown]
	}
	return "; " + strings.Join(parts, ", ") + more + " (judged against the level since)"
}
