package regress

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/benchrun/benchrun/internal/machine"
	"github.com/benchrun/benchrun/internal/results"
)

// CheckHistory judges the cells of current against the history: for
// each usable cell of current and each metric, the last Options.LastN
// usable values of the same cell (the same Key) in earlier runs.
//
// A value is a regression only when all three hold:
//
//  1. it lies outside the one-sided prediction interval of the history
//     on a log scale, on the bad side: with m and s the mean and sample
//     standard deviation of ln(x) over the n history values, the limit is
//     m ± t(Confidence, n−1)·s·sqrt(1 + 1/n) (a new value drawn like the
//     history passes it with probability 1 − Confidence). The test is
//     the same one as a p-value, adjusted with the report's Correction
//     over every cell × metric: outside means adjusted p ≤ 1 − Confidence;
//  2. its change from the history's center exp(m) (the geometric mean)
//     exceeds the metric's relative Threshold;
//  3. and its absolute change exceeds the metric's Floor.
//
// The mirror case is an improvement; anything else is the same. The log
// scale fits latencies and throughputs, whose noise is multiplicative; a
// series with a value ≤ 0 is judged on the linear scale instead.
//
// Repeats (a sweep's `repeats: N`, rows .../rep1 … .../repN of one
// Key) are samples of their point, and a run's value of a point is the
// mean of its repeats' values (geometric, as the log scale reads them;
// arithmetic when one is ≤ 0), for the history's runs and current alike.
// Why the run's mean rather than every repeat as a sample of its own:
// the prediction interval bounds where the next run falls, and repeats
// of one run share what varies from run to run (the server's launch, the
// machine's state that night), so they are not independent draws of the
// run-to-run noise; pooled as samples they would shrink the history's
// spread to the within-run noise and flag ordinary night-to-night drift.
// The mean keeps one value per run, and is a better one (its within-run
// noise shrinks as 1/√N). A repeat not usable (Exclusion) or NULL is left
// out of its run's mean and counted; a point with no usable repeat in
// current is skipped.
//
// Fewer than MinRuns usable values give `insufficient data`, never a
// silent pass. History runs that did not end ok, and history cells that
// are not ok or whose client could not keep up (Exclusion), are left out
// and counted by reason on each verdict; so are NULL values. Runs of
// history with current's id, or that started after current, are ignored.
// history need not be sorted; verdicts follow current's cells in order,
// then Options.Metrics' order.
func CheckHistory(history []*Run, current *Run, o Options) *Report {
	o = o.withDefaults()
	rep := &Report{Correction: o.Correction, Alpha: 1 - o.Confidence, RunsNew: []string{current.ID}}
	idx := indexHistory(history, current, o)
	rep.RunsOld = idx.runs
	merge(&rep.Excluded, idx.runExcl)
	for _, m := range idx.cellExcl {
		merge(&rep.Excluded, m)
	}

	j := historyJudge{o: o, current: current, idx: idx, rep: rep}
	for _, p := range groupPoints(current, o) {
		if len(p.cells) == 0 {
			rep.Skipped = append(rep.Skipped, Skip{Key: p.key, Reason: p.reason})
			continue
		}
		for _, m := range o.Metrics {
			j.judge(p, m)
		}
	}
	decideHistory(rep, j.ps, j.machines, j.spreads, o)
	rep.Summaries = summaries(o.Metrics, rep.Verdicts)
	return rep
}

// historyIndex is the usable history cells by key, oldest run first, and
// what was left out of them, counted by reason.
type historyIndex struct {
	byKey    map[Key][]historyEntry
	runs     []string               // the ids of the runs used, oldest first
	runExcl  map[string]int         // whole runs left out
	cellExcl map[Key]map[string]int // cells left out, by their key
}

// historyEntry is one history run's rows of a point (its repeats).
type historyEntry struct {
	run   *Run
	cells []int
}

// indexHistory indexes the usable cells of history, sorted by start
// (a run's repeats of a point in one entry). Runs with current's id, or
// that started after current, are ignored; runs and cells not usable are
// counted by reason.
func indexHistory(history []*Run, current *Run, o Options) historyIndex {
	hist := slices.Clone(history)
	slices.SortStableFunc(hist, func(a, b *Run) int { return a.StartedAt.Compare(b.StartedAt) })
	idx := historyIndex{byKey: map[Key][]historyEntry{}, runExcl: map[string]int{}, cellExcl: map[Key]map[string]int{}}
	for _, r := range hist {
		if r == nil || r.ID == current.ID && r.ID != "" ||
			!current.StartedAt.IsZero() && !r.StartedAt.IsZero() && !r.StartedAt.Before(current.StartedAt) {
			continue
		}
		if why := runReason(r); why != "" {
			count(&idx.runExcl, why)
			continue
		}
		idx.runs = append(idx.runs, r.ID)
		for i := range r.Cells {
			idx.add(r, i, o)
		}
	}
	return idx
}

// add indexes row i of history run r, or counts why it is left out.
func (idx *historyIndex) add(r *Run, i int, o Options) {
	c := &r.Cells[i]
	k := o.keyOf(c)
	if why := Exclusion(c, r, o); why != "" {
		m := idx.cellExcl[k]
		count(&m, why)
		idx.cellExcl[k] = m
		return
	}
	es := idx.byKey[k]
	if n := len(es); n > 0 && es[n-1].run == r {
		es[n-1].cells = append(es[n-1].cells, i)
	} else {
		idx.byKey[k] = append(es, historyEntry{r, []int{i}})
	}
}

// currentPoint is a point of the current run: its usable rows (its
// repeats), and the rows left out, counted by reason, the first reason
// kept to say why a point with no usable row is skipped.
type currentPoint struct {
	key    Key
	cells  []int
	excl   map[string]int
	reason string
}

// groupPoints groups current's rows by key, in the order keys first
// appear: a point's repeats are judged together.
func groupPoints(current *Run, o Options) []*currentPoint {
	var points []*currentPoint
	pointOf := map[Key]*currentPoint{}
	for i := range current.Cells {
		c := &current.Cells[i]
		k := o.keyOf(c)
		p := pointOf[k]
		if p == nil {
			p = &currentPoint{key: k}
			pointOf[k] = p
			points = append(points, p)
		}
		if why := Exclusion(c, current, o); why != "" {
			count(&p.excl, why)
			if p.reason == "" {
				p.reason = why
			}
			continue
		}
		p.cells = append(p.cells, i)
	}
	return points
}

// verdictMachine is the machine's lateness behind a verdict: the judged
// point's (its row, for the allowance) and the history's (the median of
// the runs the interval was learned from). Zero for a verdict not judged.
type verdictMachine struct {
	row       *results.Cell
	now, hist float64
	// histWait is the history's median local-server CPU wait (ms).
	histWait float64
}

// historyJudge judges current's points against the indexed history, one
// metric at a time, into rep; ps and machines follow rep.Verdicts.
type historyJudge struct {
	o        Options
	current  *Run
	idx      historyIndex
	rep      *Report
	ps       []float64
	machines []verdictMachine
	spreads  []historySpread
}

// judge adds point p's verdict on metric m (or its skip) to the report:
// insufficient data, or the prediction interval's center, change and
// p-value, decided later over every comparison (decideHistory).
func (j *historyJudge) judge(p *currentPoint, m Metric) {
	o, rep := j.o, j.rep
	var nulls int
	nv, nNew := runValue(m, j.current, p.cells, &nulls)
	if nNew == 0 {
		rep.Skipped = append(rep.Skipped, Skip{Key: p.key, Metric: m.Name, Reason: ReasonNull})
		return
	}
	c := &j.current.Cells[p.cells[0]]
	v := Verdict{
		Key: p.key, CellID: c.CellID, Metric: m.Name, Unit: m.Unit, Better: m.Better,
		Method: MethodHistory, New: nv, NNew: nNew, Level: o.Confidence,
		Old: math.NaN(), Change: math.NaN(), Low: math.NaN(), High: math.NaN(),
		P: math.NaN(), PAdjusted: math.NaN(), MWU: math.NaN(),
	}
	v.Excluded = maps.Clone(j.idx.runExcl)
	merge(&v.Excluded, j.idx.cellExcl[p.key])
	merge(&v.Excluded, p.excl)
	for range nulls {
		count(&v.Excluded, ReasonNull)
	}
	s := recentHistory(j.idx.byKey[p.key], m, o.LastN, &v.Excluded)
	markLateOutliers(m, s.xs, s.lates, s.rows, s.marks, s.why, o.MinRuns)
	xs, refLates, refWaits := s.reference(&v, o)
	v.N = len(xs)
	if len(xs) < o.MinRuns {
		insufficient(&v, xs, o.MinRuns)
		rep.Verdicts = append(rep.Verdicts, v)
		j.ps = append(j.ps, math.NaN())
		j.machines = append(j.machines, verdictMachine{})
		j.spreads = append(j.spreads, historySpread{})
		return
	}
	typical, spread := splitOdd(m, xs, v.Runs, o.MinRuns)
	predict(&v, typical, o.Confidence)
	v.Margin = margin(m, v.Old)
	rep.Verdicts = append(rep.Verdicts, v)
	j.ps = append(j.ps, v.P)
	j.machines = append(j.machines, verdictMachine{row: c, now: pointLate(j.current, p.cells), hist: median(refLates), histWait: median(refWaits)})
	j.spreads = append(j.spreads, spread)
}

// historySeries is a point's last measured values of one metric in its
// history, oldest first, and beside each value: whether its own run
// called it regressed or inconclusive (mark, and why it is left out),
// how late the machine was then, its run's id and its row.
type historySeries struct {
	xs, lates []float64
	waits     []float64 // the local server's CPU wait, ms
	marks     []bool
	why       []string
	runs      []string
	rows      []*results.Cell
}

// recentHistory is the last lastN measured values of metric m over a
// point's history entries (oldest first); NULLs met on the way are
// counted in *excluded.
func recentHistory(entries []historyEntry, m Metric, lastN int, excluded *map[string]int) historySeries {
	var s historySeries
	for j := len(entries) - 1; j >= 0 && len(s.xs) < lastN; j-- {
		e := entries[j]
		nulls := 0
		x, n := runValue(m, e.run, e.cells, &nulls)
		for range nulls {
			count(excluded, ReasonNull)
		}
		if n == 0 {
			continue
		}
		s.xs = append(s.xs, x)
		s.runs = append(s.runs, e.run.ID)
		key := marked(e.run.Cells[e.cells[0]].CellID, m.Name)
		switch {
		case e.run.Regressed[key]:
			s.marks, s.why = append(s.marks, true), append(s.why, ReasonRegressed)
		case e.run.Inconclusive[key]:
			s.marks, s.why = append(s.marks, true), append(s.why, ReasonInconclusive)
		default:
			s.marks, s.why = append(s.marks, false), append(s.why, "")
		}
		s.lates = append(s.lates, pointLate(e.run, e.cells))
		s.waits = append(s.waits, machine.ServerWait(&e.run.Cells[e.cells[0]]))
		s.rows = append(s.rows, &e.run.Cells[e.cells[0]])
	}
	slices.Reverse(s.xs)
	slices.Reverse(s.runs)
	slices.Reverse(s.marks)
	slices.Reverse(s.why)
	slices.Reverse(s.lates)
	slices.Reverse(s.waits)
	slices.Reverse(s.rows)
	return s
}

// reference picks the values v is judged against (the runs since a
// change of level once enough runs show it, else the unmarked ones),
// with their machine's lateness and their local server's CPU wait, and
// records on v the level change, a pending one, the runs used and,
// without a level change, the marked values left out.
func (s historySeries) reference(v *Verdict, o Options) (xs, lates, waits []float64) {
	need := levelRuns(o.LastN)
	ref, level, pending := reference(s.xs, s.marks, o.MinRuns, need)
	v.LevelChange = level
	if level != nil {
		level.Run = s.runs[ref[0]]
	}
	if pending.Index >= 0 {
		v.PendingLevel = &LevelChange{Run: s.runs[pending.Index], Change: pending.Change(), Runs: len(s.xs) - pending.Index, Needs: need}
	}
	for _, i := range ref {
		xs = append(xs, s.xs[i])
		lates = append(lates, s.lates[i])
		waits = append(waits, s.waits[i])
		v.Runs = append(v.Runs, s.runs[i])
	}
	if len(ref) < len(s.xs) && level == nil {
		v.Excluded = maps.Clone(v.Excluded)
		for i, w := range s.why {
			if s.marks[i] {
				count(&v.Excluded, w)
			}
		}
	}
	return xs, lates, waits
}

// insufficient marks v as not judged for want of minRuns history values
// xs, still showing the center of those it has and the change from it.
func insufficient(v *Verdict, xs []float64, minRuns int) {
	v.Outcome = Insufficient
	v.Reason = fmt.Sprintf("%d usable earlier runs of this cell, %d needed", len(xs), minRuns)
	if len(xs) > 0 {
		v.Old = GeoMean(xs)
		if math.IsNaN(v.Old) {
			v.Old, _ = meanSD(xs)
		}
		v.Change = v.New/v.Old - 1
	}
}

// decideHistory decides every judged verdict of rep once the p-values
// ps of the whole family are known: adjusted by the correction, outside
// the interval and large enough is a regression or an improvement (unless
// the machine's lateness explains it, or the history read as far once:
// decideSpread), anything else the same (unless larger than any change
// the history has shown); a change of level in the history is said in
// the reason.
func decideHistory(rep *Report, ps []float64, machines []verdictMachine, spreads []historySpread, o Options) {
	adj := Adjust(o.Correction, ps)
	alpha := 1 - o.Confidence
	for i := range rep.Verdicts {
		v := &rep.Verdicts[i]
		if v.Outcome == Insufficient {
			continue
		}
		rep.Comparisons++
		v.PAdjusted = adj[i]
		decideOutcome(v, alpha, o.Correction, ps)
		if v.Outcome == Regressed || v.Outcome == Improved {
			mc := machines[i]
			explainByMachine(v, mc)
		}
		decideSpread(v, spreads[i])
		appendLevelReasons(v)
	}
}

// decideOutcome sets v's outcome from its adjusted p-value and change:
// the three conditions of CheckHistory, saying why when a value outside
// the interval is still the same.
func decideOutcome(v *Verdict, alpha float64, correction Correction, ps []float64) {
	outside := v.PAdjusted <= alpha
	large := math.Abs(v.Change) >= v.Margin
	switch {
	case outside && large && v.Better.Worse(v.Change):
		v.Outcome = Regressed
	case outside && large:
		v.Outcome = Improved
	default:
		v.Outcome = Same
		switch {
		case outside:
			v.Reason = fmt.Sprintf("outside the history's interval, but %+.1f%% is under the %.1f%% that counts", 100*v.Change, 100*v.Margin)
		case v.P <= alpha:
			v.Reason = fmt.Sprintf("outside the interval alone (p=%.3g), not after %s over %d comparisons", v.P, correction, countFinite(ps))
		}
	}
}

// appendLevelReasons says in v's reason a change of level its history
// shows: pending (not yet the baseline) or the one it was judged since.
func appendLevelReasons(v *Verdict) {
	if p := v.PendingLevel; p != nil {
		lc := fmt.Sprintf("its history changed level at run %s (%+.1f%%), %d runs ago: that level becomes the baseline once %d runs show it", p.Run, 100*p.Change, p.Runs, p.Needs)
		v.Reason = strings.TrimPrefix(v.Reason+"; "+lc, "; ")
	}
	if v.LevelChange != nil {
		lc := fmt.Sprintf("judged against the %d runs since its history changed level at run %s (%+.1f%%)", v.N, v.LevelChange.Run, 100*v.LevelChange.Change)
		v.Reason = strings.TrimPrefix(v.Reason+"; "+lc, "; ")
	}
}

// runValue is a run's value of metric m over its rows cells (a point's
// repeats; one row without repeats): the mean of the measured values,
// geometric when all are > 0, else arithmetic. n is how many were
// measured (0: none, the value is meaningless); *nulls counts the NULLs.
func runValue(m Metric, r *Run, cells []int, nulls *int) (x float64, n int) {
	var xs []float64
	for _, i := range cells {
		if p := m.Value(&r.Cells[i]); p != nil && !math.IsNaN(*p) {
			xs = append(xs, *p)
		} else {
			*nulls++
		}
	}
	return repeatMean(xs), len(xs)
}

// repeatMean is the mean of a run's repeats of a point: geometric when
// every value is > 0, else arithmetic; NaN for none.
func repeatMean(xs []float64) float64 {
	switch len(xs) {
	case 0:
		return math.NaN()
	case 1:
		return xs[0]
	}
	pos := true
	for _, x := range xs {
		pos = pos && x > 0
	}
	if pos {
		return GeoMean(xs)
	}
	mean, _ := meanSD(xs)
	return mean
}

// predict fills v's center, change, interval and one-sided p-value from
// the history xs: on ln(x) when every value (and v.New) is positive,
// else on x.
func predict(v *Verdict, xs []float64, confidence float64) {
	logs := v.New > 0
	for _, x := range xs {
		logs = logs && x > 0
	}
	f, inv := math.Log, math.Exp
	if !logs {
		f, inv = func(x float64) float64 { return x }, func(x float64) float64 { return x }
		v.Method = MethodLinear
	}
	ys := make([]float64, len(xs))
	for i, x := range xs {
		ys[i] = f(x)
	}
	m, s := meanSD(ys)
	n := float64(len(ys))
	half := predictionHalfWidth(s, n, confidence)
	v.Old = inv(m)
	v.Low, v.High = inv(m-half), inv(m+half)
	if !logs && v.Low < 0 && v.New >= 0 && slices.Min(xs) >= 0 {
		// A metric none of whose values is negative (a count, a rate,
		// a latency) cannot be: the linear interval stops at 0.
		v.Low = 0
	}
	if v.Old != 0 {
		v.Change = v.New/v.Old - 1
	}
	y := f(v.New)
	switch scale := s * math.Sqrt(1+1/n); {
	case scale > 0:
		v.P = tSurvival(math.Abs(y-m)/scale, n-1)
	case y == m:
		v.P = 1
	default:
		v.P = 0 // a history without spread: any other value is outside
	}
}

func countFinite(ps []float64) int {
	n := 0
	for _, p := range ps {
		if !math.IsNaN(p) {
			n++
		}
	}
	return n
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.SortedFunc(maps.Keys(m), cmp.Compare[string])
}
