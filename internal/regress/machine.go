package regress

import (
	"fmt"
	"math"
	"strings"

	"github.com/benchrun/benchrun/internal/machine"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/stats"
)

// pointLate is the machine's lateness during a run's point (its repeats:
// the latest), in ms; 0 when not measured.
func pointLate(r *Run, cells []int) float64 {
	late := 0.0
	for _, i := range cells {
		late = max(late, machine.Late(&r.Cells[i]))
	}
	return late
}

// median of xs (0 for none).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return stats.Percentile(xs, 50)
}

// explainByMachine turns a regression or improvement against history into
// an inconclusive verdict when the machine explains it: it ran an event
// loop's tasks later during the judged cell (now, ms p99) than during the
// history's runs (hist, their median), and moving the value by what that
// extra lateness could account for (machine.Allowance) brings it back
// inside the interval or under the change that counts. A history as late
// as the cell allows nothing: its own spread already holds that noise.
func explainByMachine(v *Verdict, row *results.Cell, now, hist float64) {
	extra := now - hist
	if row == nil || extra <= 0 || math.IsNaN(v.New) {
		return
	}
	b := machine.Allowance(v.Metric, row, extra)
	if b.Zero() {
		return
	}
	// Toward the history's center: down for a value above it, up below.
	moved := v.New - b.Down
	if v.New < v.Old {
		moved = v.New + b.Up
	}
	inside := moved >= v.Low && moved <= v.High
	small := v.Old != 0 && math.Abs(moved/v.Old-1) < v.Margin
	if !inside && !small {
		return
	}
	was := v.Outcome
	v.Outcome = Inconclusive
	v.Late = extra
	// Both latenesses in full, the difference apart: "3.1 ms later (p99)
	// … than during the history's runs (5.2 ms)" read as a p99 below the
	// history's level.
	v.Reason = fmt.Sprintf("%s %+.1f%%, but the machine ran an event loop's tasks up to %.2f ms late (p99) during the cell, %.2f ms more than during the history's runs (their median p99 %.2f ms): what that could account for brings %s back to %.4g %s, inside what counts",
		was, 100*v.Change, now, extra, hist, v.Metric, moved, v.Unit)
}

// machinePair is a two-run comparison's cell on each side: what the
// machine's lateness there could do to a metric.
type machinePair struct{ old, new []sideCell }

// sideLate is a side's lateness for metric (machine.LateFor): each run's
// latest repeat, the median over the side's runs.
func sideLate(cells []sideCell, metric string) float64 {
	perRun := map[*Run]float64{}
	for _, c := range cells {
		perRun[c.run] = max(perRun[c.run], machine.LateFor(metric, c.cell))
	}
	var lates []float64
	for _, l := range perRun {
		lates = append(lates, l)
	}
	return median(lates)
}

// explainPairByMachine turns a two-run comparison's regression or
// improvement into an inconclusive verdict when one side's machine was
// later than the other's by enough to explain it: moving the later side's
// value toward the other's by what the extra lateness could account for
// (machine.Allowance) leaves a change under the margin, or a ratio
// interval, shifted with it, that holds 1. A change the lateness could
// only have hidden (the earlier side slower) is left as it is.
func explainPairByMachine(v *Verdict, m machinePair) {
	if v.Outcome != Regressed && v.Outcome != Improved || math.IsNaN(v.Old) || math.IsNaN(v.New) || v.Old == 0 {
		return
	}
	lateOld, lateNew := sideLate(m.old, v.Metric), sideLate(m.new, v.Metric)
	ratio := v.New / v.Old
	moved, extra, later := ratio, 0.0, ""
	switch {
	case lateNew > lateOld:
		extra, later = lateNew-lateOld, "new"
		b := machine.Allowance(v.Metric, m.new[0].cell, extra)
		if v.New > v.Old {
			moved = (v.New - b.Down) / v.Old
		} else {
			moved = (v.New + b.Up) / v.Old
		}
	case lateOld > lateNew:
		extra, later = lateOld-lateNew, "old"
		b := machine.Allowance(v.Metric, m.old[0].cell, extra)
		var old float64
		if v.Old > v.New {
			old = v.Old - b.Down
		} else {
			old = v.Old + b.Up
		}
		if old > 0 {
			moved = v.New / old
		}
	}
	if moved == ratio || ratio == 0 {
		return
	}
	// Moved past the other side's value, the change is gone, not reversed.
	if (ratio > 1) != (moved > 1) {
		moved = 1
	}
	shift := moved / ratio
	holds1 := v.Ratio && v.Low*shift <= 1 && 1 <= v.High*shift
	small := math.Abs(moved-1) < v.Margin
	if !holds1 && !small {
		return
	}
	was := v.Outcome
	v.Outcome = Inconclusive
	v.Late = extra
	v.Reason = strings.TrimPrefix(v.Reason+"; "+fmt.Sprintf("%s %+.1f%%, but the machine ran an event loop's tasks %.2f ms later (%s) during the %s side's cell than during the other's (%.2f vs %.2f ms): what that could account for leaves %+.1f%%, inside what counts",
		was, 100*v.Change, extra, machine.LateStat(v.Metric), later, max(lateOld, lateNew), min(lateOld, lateNew), 100*(moved-1)), "; ")
}

// ReasonMachineLate is why a history value is left out when its own run's
// machine was late enough to account for how far it lies from the other
// runs (markLateOutliers).
const ReasonMachineLate = "machine late in its run"

// markLateOutliers marks (ReasonMachineLate) each history value that lies
// beyond the metric's margin from the unmarked values' median, when its
// run's machine was later than the history's usual (the median lateness)
// by enough to bring it back within the margin, in the direction the
// machine can move that metric (machine.Allowance: a latency only up, a
// throughput only down, a gap between events either way: a late read
// joins token events, and their gaps read near 0). Such a value measured
// the machine as much as the server: taken in, one busy night widens the
// interval until a tenfold slowdown reads as same. At least minRuns
// values stay unmarked.
func markLateOutliers(m Metric, xs, lates []float64, rows []*results.Cell, marks []bool, why []string, minRuns int) {
	var kept, keptLates []float64
	for i := range xs {
		if !marks[i] {
			kept, keptLates = append(kept, xs[i]), append(keptLates, lates[i])
		}
	}
	if len(kept) <= minRuns {
		return
	}
	med, usual := median(kept), median(keptLates)
	if med == 0 || math.IsNaN(med) {
		return
	}
	tol := margin(m, med)
	left := len(kept)
	for i, x := range xs {
		if marks[i] || left <= minRuns {
			continue
		}
		if math.Abs(x/med-1) <= tol {
			continue
		}
		if col, _ := results.Lookup(m.Name); col.Late == results.LateGap && joinedMostly(rows[i]) {
			// Most of its gaps were a late read's (token events joined
			// in one read read 0), not the server's.
			marks[i], why[i] = true, ReasonEventsJoined
			left--
			continue
		}
		extra := lates[i] - usual
		if extra <= 0 {
			continue
		}
		// Its true value may lie up to the allowance toward the median:
		// below a value above it, above a value below it.
		b := machine.Allowance(m.Name, rows[i], extra)
		explained := x-b.Down <= med*(1+tol)
		if x < med {
			explained = x+b.Up >= med*(1-tol)
		}
		if explained {
			marks[i], why[i] = true, ReasonMachineLate
			left--
		}
	}
}

// ReasonEventsJoined is why a history value of an itl metric is left out
// when most of its run's token events came joined in one socket read
// (events_joined_pct over 50): its gaps were the reads', not the server's.
const ReasonEventsJoined = "token events joined in its run"

// joinedMostly says whether over half of a row's token events came in one
// socket read with the next.
func joinedMostly(c *results.Cell) bool {
	return c != nil && c.EventsJoinedPct != nil && *c.EventsJoinedPct > 50
}
