package regress

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

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
	hist := slices.Clone(history)
	slices.SortStableFunc(hist, func(a, b *Run) int { return a.StartedAt.Compare(b.StartedAt) })

	// Index the usable history cells by key, oldest run first (a run's
	// repeats of a point in one entry); count what is left out.
	type entry struct {
		run   *Run
		cells []int
	}
	byKey := map[Key][]entry{}
	runExcl := map[string]int{}
	cellExcl := map[Key]map[string]int{}
	for _, r := range hist {
		if r == nil || r.ID == current.ID && r.ID != "" ||
			!current.StartedAt.IsZero() && !r.StartedAt.IsZero() && !r.StartedAt.Before(current.StartedAt) {
			continue
		}
		if why := runReason(r); why != "" {
			count(&runExcl, why)
			continue
		}
		rep.RunsOld = append(rep.RunsOld, r.ID)
		for i := range r.Cells {
			c := &r.Cells[i]
			k := o.keyOf(c)
			if why := Exclusion(c, r, o); why != "" {
				m := cellExcl[k]
				count(&m, why)
				cellExcl[k] = m
				continue
			}
			es := byKey[k]
			if n := len(es); n > 0 && es[n-1].run == r {
				es[n-1].cells = append(es[n-1].cells, i)
			} else {
				byKey[k] = append(es, entry{r, []int{i}})
			}
		}
	}
	merge(&rep.Excluded, runExcl)
	for _, m := range cellExcl {
		merge(&rep.Excluded, m)
	}

	// Group current's rows by key, in the order keys first appear: a
	// point's repeats judged together.
	type point struct {
		key    Key
		cells  []int
		excl   map[string]int
		reason string
	}
	var points []*point
	pointOf := map[Key]*point{}
	for i := range current.Cells {
		c := &current.Cells[i]
		k := o.keyOf(c)
		p := pointOf[k]
		if p == nil {
			p = &point{key: k}
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

	var ps []float64
	// The machine's lateness behind each verdict: the judged point's
	// (its row, for the allowance) and the history's (the median of the
	// runs the interval was learned from), in the order of rep.Verdicts.
	type machine struct {
		row       *results.Cell
		now, hist float64
	}
	var machines []machine
	for _, p := range points {
		k := p.key
		if len(p.cells) == 0 {
			rep.Skipped = append(rep.Skipped, Skip{Key: k, Reason: p.reason})
			continue
		}
		c := &current.Cells[p.cells[0]]
		for _, m := range o.Metrics {
			var nulls int
			nv, nNew := runValue(m, current, p.cells, &nulls)
			if nNew == 0 {
				rep.Skipped = append(rep.Skipped, Skip{Key: k, Metric: m.Name, Reason: ReasonNull})
				continue
			}
			v := Verdict{
				Key: k, CellID: c.CellID, Metric: m.Name, Unit: m.Unit, Better: m.Better,
				Method: MethodHistory, New: nv, NNew: nNew, Level: o.Confidence,
				Old: math.NaN(), Change: math.NaN(), Low: math.NaN(), High: math.NaN(),
				P: math.NaN(), PAdjusted: math.NaN(), MWU: math.NaN(),
			}
			v.Excluded = maps.Clone(runExcl)
			merge(&v.Excluded, cellExcl[k])
			merge(&v.Excluded, p.excl)
			for range nulls {
				count(&v.Excluded, ReasonNull)
			}
			// The last LastN measured values, oldest first, with whether
			// their own run called them regressed and how late the
			// machine was then.
			var xs, lates []float64
			var marks []bool
			var why []string // why a marked value is left out
			var runs []string
			var rows []*results.Cell
			entries := byKey[k]
			for j := len(entries) - 1; j >= 0 && len(xs) < o.LastN; j-- {
				e := entries[j]
				nulls = 0
				x, n := runValue(m, e.run, e.cells, &nulls)
				for range nulls {
					count(&v.Excluded, ReasonNull)
				}
				if n == 0 {
					continue
				}
				xs = append(xs, x)
				runs = append(runs, e.run.ID)
				key := marked(e.run.Cells[e.cells[0]].CellID, m.Name)
				switch {
				case e.run.Regressed[key]:
					marks, why = append(marks, true), append(why, ReasonRegressed)
				case e.run.Inconclusive[key]:
					marks, why = append(marks, true), append(why, ReasonInconclusive)
				default:
					marks, why = append(marks, false), append(why, "")
				}
				lates = append(lates, pointLate(e.run, e.cells))
				rows = append(rows, &e.run.Cells[e.cells[0]])
			}
			slices.Reverse(xs)
			slices.Reverse(runs)
			slices.Reverse(marks)
			slices.Reverse(why)
			slices.Reverse(lates)
			slices.Reverse(rows)
			markLateOutliers(m, xs, lates, rows, marks, why, o.MinRuns)
			need := levelRuns(o.LastN)
			ref, level, pending := reference(xs, marks, o.MinRuns, need)
			v.LevelChange = level
			if level != nil {
				level.Run = runs[ref[0]]
			}
			if pending.Index >= 0 {
				v.PendingLevel = &LevelChange{Run: runs[pending.Index], Change: pending.Change(), Runs: len(xs) - pending.Index, Needs: need}
			}
			var refXs, refLates []float64
			for _, i := range ref {
				refXs = append(refXs, xs[i])
				refLates = append(refLates, lates[i])
				v.Runs = append(v.Runs, runs[i])
			}
			if len(ref) < len(xs) && level == nil {
				v.Excluded = maps.Clone(v.Excluded)
				for i, w := range why {
					if marks[i] {
						count(&v.Excluded, w)
					}
				}
			}
			xs = refXs
			v.N = len(xs)
			if len(xs) < o.MinRuns {
				v.Outcome = Insufficient
				v.Reason = fmt.Sprintf("%d usable earlier runs of this cell, %d needed", len(xs), o.MinRuns)
				if len(xs) > 0 {
					v.Old = GeoMean(xs)
					if math.IsNaN(v.Old) {
						v.Old, _ = meanSD(xs)
					}
					v.Change = v.New/v.Old - 1
				}
				rep.Verdicts = append(rep.Verdicts, v)
				ps = append(ps, math.NaN())
				machines = append(machines, machine{})
				continue
			}
			predict(&v, xs, o.Confidence)
			v.Margin = margin(m, v.Old)
			rep.Verdicts = append(rep.Verdicts, v)
			ps = append(ps, v.P)
			machines = append(machines, machine{row: c, now: pointLate(current, p.cells), hist: median(refLates)})
		}
	}

	adj := Adjust(o.Correction, ps)
	alpha := 1 - o.Confidence
	for i := range rep.Verdicts {
		v := &rep.Verdicts[i]
		if v.Outcome == Insufficient {
			continue
		}
		rep.Comparisons++
		v.PAdjusted = adj[i]
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
				v.Reason = fmt.Sprintf("outside the interval alone (p=%.3g), not after %s over %d comparisons", v.P, o.Correction, countFinite(ps))
			}
		}
		if v.Outcome == Regressed || v.Outcome == Improved {
			mc := machines[i]
			explainByMachine(v, mc.row, mc.now, mc.hist)
		}
		if p := v.PendingLevel; p != nil {
			lc := fmt.Sprintf("its history changed level at run %s (%+.1f%%), %d runs ago: that level becomes the baseline once %d runs show it", p.Run, 100*p.Change, p.Runs, p.Needs)
			v.Reason = strings.TrimPrefix(v.Reason+"; "+lc, "; ")
		}
		if v.LevelChange != nil {
			lc := fmt.Sprintf("judged against the %d runs since its history changed level at run %s (%+.1f%%)", v.N, v.LevelChange.Run, 100*v.LevelChange.Change)
			v.Reason = strings.TrimPrefix(v.Reason+"; "+lc, "; ")
		}
	}
	rep.Summaries = summaries(o.Metrics, rep.Verdicts)
	return rep
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
	half := TQuantile(confidence, n-1) * s * math.Sqrt(1+1/n)
	v.Old = inv(m)
	v.Low, v.High = inv(m-half), inv(m+half)
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
