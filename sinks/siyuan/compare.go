package siyuan

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/rundir"
	"github.com/benchrun/benchrun/sinks/internal/runview"
)

// DefaultCompareLast is how many earlier runs a comparison shows when
// the sink is not told: enough to tell a trend from noise, few enough
// that the table stays one screen wide.
const DefaultCompareLast = 5

// Comparison is this run's key metrics beside the same cells of earlier
// runs of the same plan or model (the seed's `--compare 'Qwen3-Coder-Next'`).
// Document.Markdown renders it as one table, split when too wide.
type Comparison struct {
	// Against is the plan or model name compared against; Root the runs
	// folder searched.
	Against string
	Root    string
	// Runs are the earlier runs compared with, oldest first.
	Runs []EarlierRun
	// Rows are one per cell of this run and key metric that this run or
	// an earlier one measured, in the order of the run's cells.
	Rows []ComparisonRow
	// ByShape is set when some cell matched an earlier run's cell on isl,
	// osl and load rather than on stage and cell id.
	ByShape bool
	// Note says why there is nothing to compare ("no earlier runs of X
	// under ROOT"), or what was left out; the document prints it.
	Note string
	// Skipped lists earlier runs that could not be read, with why.
	Skipped []string
}

// EarlierRun is one run a comparison reads.
type EarlierRun struct {
	RunID     string
	Plan      string
	StartedAt time.Time
	Dir       string
}

// ComparisonRow is one cell and metric over the earlier runs and this one.
type ComparisonRow struct {
	Stage  string
	CellID string
	Label  string // "sweep 128:128 c=4"
	Metric string // the cell column: output_tok_s, ttft_p50_ms, ...
	// Earlier holds one value per Comparison.Runs: nil where that run did
	// not measure the cell (or the metric).
	Earlier []*float64
	Current *float64
	// VsLast is the relative change of Current from the most recent
	// earlier value, VsMedian from the median of the earlier values; nil
	// without a current value, an earlier one, or a base above zero.
	VsLast   *float64
	VsMedian *float64
}

// comparedMetrics are the metrics a comparison shows: throughput and the
// latencies a user feels, all among the metrics the regression check
// judges by default, so a verdict can stand beside its row.
var comparedMetrics = []docMetric{mOutput, mTTFTP50, mTTFTP99, mITLP50, mTPOTP50}

// LoadComparison reads the earlier runs under root that are runs of
// `against`: runs whose plan is named so, or whose model is (plan.json's
// model name or a cell's model). Only runs that ended ok count, the
// newest `last` (DefaultCompareLast when last ≤ 0), never runID itself
// nor a run that started after this run's first cell (a run re-posted
// later is compared with what came before it). Each cell of cur is
// matched in each earlier run on stage and cell id, else on isl, osl,
// concurrency, rate and repeat (the same stage first), among that run's
// ok cells. No earlier run is a Comparison whose Note says so; a run
// that cannot be read is skipped and listed, so one damaged run does not
// keep the note from being posted.
func LoadComparison(root, against string, cur []results.Cell, runID string, last int) (*Comparison, error) {
	if last <= 0 {
		last = DefaultCompareLast
	}
	cmpn := &Comparison{Against: against, Root: root}
	entries, err := rundir.Find(root, rundir.Filter{Status: []string{rundir.RunOK}})
	if errors.Is(err, fs.ErrNotExist) {
		cmpn.Note = fmt.Sprintf("No earlier runs of %s under %s: the folder does not exist.", against, root)
		return cmpn, nil
	}
	if err != nil {
		return nil, err
	}
	var start time.Time
	for _, c := range cur {
		if !c.StartedAt.IsZero() && (start.IsZero() || c.StartedAt.Before(start)) {
			start = c.StartedAt
		}
	}
	type earlier struct {
		run   EarlierRun
		cells []results.Cell
	}
	var found []earlier
	for i := len(entries) - 1; i >= 0 && len(found) < last; i-- {
		e := entries[i]
		if e.RunID == runID || !start.IsZero() && e.StartedAt.After(start) {
			continue
		}
		rd, err := rundir.Open(e.Dir)
		if err != nil {
			cmpn.Skipped = append(cmpn.Skipped, fmt.Sprintf("%s: %v", e.RunID, err))
			continue
		}
		byPlan := e.Plan == against || rd.Record().Model == against
		cells, err := rd.LatestCells()
		if err != nil {
			cmpn.Skipped = append(cmpn.Skipped, fmt.Sprintf("%s: %v", e.RunID, err))
			continue
		}
		var keep []results.Cell
		for _, c := range cells {
			// A run found by its cells' model may have measured other
			// models too (a variant sweep): only that model's cells count.
			if c.Status == results.StatusOK && (byPlan || c.Model == against) {
				keep = append(keep, c)
			}
		}
		if len(keep) == 0 {
			continue
		}
		found = append(found, earlier{EarlierRun{RunID: e.RunID, Plan: e.Plan, StartedAt: e.StartedAt, Dir: e.Dir}, keep})
	}
	slices.Reverse(found)
	if len(found) == 0 {
		cmpn.Note = fmt.Sprintf("No earlier runs of %s under %s.", against, root)
		return cmpn, nil
	}
	for _, f := range found {
		cmpn.Runs = append(cmpn.Runs, f.run)
	}
	notOK := 0
	for _, c := range cur {
		if c.Status != results.StatusOK {
			notOK++
			continue
		}
		matches := make([]*results.Cell, len(found))
		for i, f := range found {
			var byShape bool
			matches[i], byShape = matchCell(c, f.cells)
			cmpn.ByShape = cmpn.ByShape || byShape
		}
		for _, m := range comparedMetrics {
			row := ComparisonRow{Stage: c.Stage, CellID: c.CellID, Label: stagePointLabel(c), Metric: m.column, Current: m.get(c)}
			seen := row.Current != nil
			for _, e := range matches {
				var v *float64
				if e != nil {
					v = m.get(*e)
				}
				row.Earlier = append(row.Earlier, v)
				seen = seen || v != nil
			}
			if !seen {
				continue
			}
			row.VsLast, row.VsMedian = relChanges(row.Current, row.Earlier)
			cmpn.Rows = append(cmpn.Rows, row)
		}
	}
	switch {
	case len(cmpn.Rows) == 0:
		cmpn.Note = fmt.Sprintf("None of the %d earlier runs of %s measured a cell this run measured.", len(found), against)
	case notOK > 0:
		cmpn.Note = fmt.Sprintf("%d cells of this run did not end ok and are not compared.", notOK)
	}
	return cmpn, nil
}

// matchCell finds c among an earlier run's ok cells: by stage and cell id,
// else by shape and load (the same stage first); byShape says it took
// the second way.
func matchCell(c results.Cell, cells []results.Cell) (m *results.Cell, byShape bool) {
	for i := range cells {
		if cells[i].Stage == c.Stage && cells[i].CellID == c.CellID {
			return &cells[i], false
		}
	}
	same := func(o results.Cell) bool {
		return o.ISL == c.ISL && o.OSL == c.OSL && o.Concurrency == c.Concurrency && o.Rate == c.Rate && o.Repeat == c.Repeat
	}
	for _, sameStage := range []bool{true, false} {
		for i := range cells {
			if same(cells[i]) && (cells[i].Stage == c.Stage) == sameStage {
				return &cells[i], true
			}
		}
	}
	return nil, false
}

// relChanges is the current value's change from the most recent earlier
// value and from the earlier values' median.
func relChanges(cur *float64, earlier []*float64) (vsLast, vsMedian *float64) {
	var vals []float64
	for _, v := range earlier {
		if v != nil {
			vals = append(vals, *v)
		}
	}
	if cur == nil || len(vals) == 0 {
		return nil, nil
	}
	rel := func(base float64) *float64 {
		if base <= 0 {
			return nil
		}
		return results.Some(*cur/base - 1)
	}
	vsLast = rel(vals[len(vals)-1])
	slices.Sort(vals)
	med := vals[len(vals)/2]
	if len(vals)%2 == 0 {
		med = (vals[len(vals)/2-1] + vals[len(vals)/2]) / 2
	}
	return vsLast, rel(med)
}

// metricHead is a compared metric's table name.
func metricHead(column string) string {
	for _, m := range comparedMetrics {
		if m.column == column {
			return m.head
		}
	}
	return column
}

// regressionOf is this run's regression verdict of a cell's metric.
func regressionOf(vs []results.Verdict, r ComparisonRow) (results.Verdict, bool) {
	for _, v := range vs {
		if v.Level == levelRegression && v.Stage == r.Stage && v.CellID == r.CellID && (v.Name == r.Metric || v.Assertion == "regression of "+r.Metric) {
			return v, true
		}
	}
	return results.Verdict{}, false
}

// writeMarkdown writes the comparison section: the runs compared, one
// row per cell and metric with each earlier run's value, this run's, the
// changes, and this run's regression verdict where the plan checked one.
func (c *Comparison) writeMarkdown(b *strings.Builder, vs []results.Verdict) {
	fmt.Fprintf(b, "## Compared with earlier runs of %s\n\n", mdText(dashIfEmpty(c.Against)))
	if c.Note != "" {
		fmt.Fprintf(b, "%s\n\n", mdText(c.Note))
	}
	if len(c.Skipped) > 0 {
		b.WriteString("Earlier runs that could not be read:\n\n")
		for _, s := range c.Skipped {
			fmt.Fprintf(b, "- %s\n", mdText(firstLineOf(s)))
		}
		b.WriteString("\n")
	}
	if len(c.Runs) == 0 || len(c.Rows) == 0 {
		return
	}
	fmt.Fprintf(b, "Earlier runs under %s, oldest first:\n\n", mdCode(c.Root))
	heads := make([]string, len(c.Runs))
	for i, r := range c.Runs {
		heads[i] = r.StartedAt.UTC().Format("01-02 15:04")
		if slices.Contains(heads[:i], heads[i]) {
			heads[i] += fmt.Sprintf(" #%d", i+1)
		}
		fmt.Fprintf(b, "- %s: run %s of plan %s\n", mdText(heads[i]), mdCode(r.RunID), mdText(dashIfEmpty(r.Plan)))
	}
	b.WriteString("\n")
	withChecks := slices.ContainsFunc(vs, func(v results.Verdict) bool { return v.Level == levelRegression })
	t := mdTable{ids: []mdColumn{{head: "cell"}, {head: "metric"}}}
	for _, h := range heads {
		t.cols = append(t.cols, mdColumn{head: h, num: true})
	}
	t.cols = append(t.cols, mdColumn{head: "this run", num: true}, mdColumn{head: "vs last", num: true}, mdColumn{head: "vs median", num: true})
	if withChecks {
		t.cols = append(t.cols, mdColumn{head: "regression check"})
	}
	val := func(p *float64) string {
		if p == nil {
			return "–"
		}
		return runview.ShortNum(*p)
	}
	chg := func(p *float64) string {
		if p == nil {
			return "–"
		}
		return signedPct(*p)
	}
	for _, r := range c.Rows {
		row := []string{mdText(r.Label), mdText(metricHead(r.Metric))}
		for _, e := range r.Earlier {
			row = append(row, val(e))
		}
		row = append(row, val(r.Current), chg(r.VsLast), chg(r.VsMedian))
		if withChecks {
			check := "–"
			if v, ok := regressionOf(vs, r); ok {
				check = mdText(dashIfEmpty(v.Outcome))
				if w := confirmWord(v.Values["confirm"]); w != "" {
					check += ", " + mdText(w)
				}
			}
			row = append(row, check)
		}
		t.rows = append(t.rows, row)
	}
	t.write(b)
	b.WriteString("vs last: change from the most recent earlier run that measured the cell; vs median: from the median of the earlier runs shown; –: no ok row of the cell, or the metric not measured. A change is not a verdict: run-to-run noise moves these numbers")
	if withChecks {
		b.WriteString(", and the regression check column says what the run's check against its history decided")
	}
	b.WriteString(".")
	if c.ByShape {
		b.WriteString(" Cells whose id differs between the runs were matched on isl, osl and load.")
	}
	b.WriteString("\n\n")
}
