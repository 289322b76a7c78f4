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
// history's runs (hist, their median), or the local server's threads
// waited longer for a CPU than during them (histWait, their median
// server_cpu_wait_ms: machine.ServerStarvedBeyond), and moving the value
// by what that could account for (machine.Allowance) brings it back
// inside the interval or under the change that counts. A history as late
// or as starved as the cell allows nothing: its own spread already holds
// that noise.
func explainByMachine(v *Verdict, mc verdictMachine) {
	row, now, hist := mc.row, mc.now, mc.hist
	if row == nil || math.IsNaN(v.New) {
		return
	}
	extra := now - hist
	var b machine.Bound
	if extra > 0 {
		b = machine.Allowance(v.Metric, row, extra)
	}
	starved := machine.ServerStarvedBeyond(v.Metric, row, mc.histWait)
	if b.Zero() && starved.Zero() {
		return
	}
	// Toward the history's center: down for a value above it, up below;
	// moved past the center, the change is gone, not reversed.
	moved := max(v.New-max(b.Down, starved.Down), v.Old)
	if v.New < v.Old {
		moved = min(v.New+max(b.Up, starved.Up), v.Old)
	}
	inside := moved >= v.Low && moved <= v.High
	small := v.Old != 0 && math.Abs(moved/v.Old-1) < v.Margin
	if !inside && !small {
		return
	}
	was := v.Outcome
	v.Outcome = Inconclusive
	v.Late = max(extra, 0)
	// Both latenesses in full, the difference apart: "3.1 ms later (p99)
	// … than during the history's runs (5.2 ms)" read as a p99 below the
	// history's level.
	var why []string
	if !b.Zero() {
		why = append(why, fmt.Sprintf("the machine ran an event loop's tasks up to %.2f ms late (p99) during the cell, %.2f ms more than during the history's runs (their median p99 %.2f ms)", now, extra, hist))
	}
	if !starved.Zero() {
		w := machine.ServerWait(row)
		why = append(why, fmt.Sprintf("the server's threads waited %.0f ms for a CPU during the %.1f s cell, %.0f ms more than during the history's runs (their median %.0f ms)", w, row.DurationS, w-mc.histWait, mc.histWait))
	}
	v.Reason = fmt.Sprintf("%s %+.1f%%, but %s: what that could account for brings %s back to %.4g %s, inside what counts",
		was, 100*v.Change, strings.Join(why, ", and "), v.Metric, moved, v.Unit)
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

// sideWait is a side's local-server CPU wait (server_cpu_wait_ms): each
// run's longest over its repeats, the median over the side's runs.
func sideWait(cells []sideCell) float64 {
	perRun := map[*Run]float64{}
	for _, c := range cells {
		perRun[c.run] = max(perRun[c.run], machine.ServerWait(c.cell))
	}
	var ws []float64
	for _, w := range perRun {
		ws = append(ws, w)
	}
	return median(ws)
}

// sideBound is what a side's machine could have done to metric beyond
// the other side's: its probe's extra lateness (machine.Allowance) and
// its local server's extra CPU wait (machine.ServerStarvedBeyond), the
// larger either way; the words say which, in numbers.
func sideBound(metric string, cell *results.Cell, late, otherLate, wait, otherWait float64) (machine.Bound, []string) {
	var b machine.Bound
	var why []string
	if late > otherLate {
		b = machine.Allowance(metric, cell, late-otherLate)
		if !b.Zero() {
			why = append(why, fmt.Sprintf("the machine ran an event loop's tasks %.2f ms later (%s) than during the other's (%.2f vs %.2f ms)", late-otherLate, machine.LateStat(metric), late, otherLate))
		}
	}
	if s := machine.ServerStarvedBeyond(metric, cell, otherWait); !s.Zero() {
		b = machine.Bound{Down: max(b.Down, s.Down), Up: max(b.Up, s.Up)}
		why = append(why, fmt.Sprintf("the server's threads waited %.0f ms for a CPU, %.0f ms more than during the other's", wait, wait-otherWait))
	}
	return b, why
}

// explainPairByMachine turns a two-run comparison's regression or
// improvement into an inconclusive verdict when one side's machine was
// later than the other's, or its local server's threads waited longer for
// a CPU, by enough to explain it: moving that side's value toward the
// other's by what the extra could account for (machine.Allowance,
// machine.ServerStarvedBeyond) leaves a change under the margin, or a
// ratio interval, shifted with it, that holds 1. A change the machine
// could only have hidden (the disturbed side faster) is left as it is.
func explainPairByMachine(v *Verdict, m machinePair) {
	if v.Outcome != Regressed && v.Outcome != Improved || math.IsNaN(v.Old) || math.IsNaN(v.New) || v.Old == 0 {
		return
	}
	lateOld, lateNew := sideLate(m.old, v.Metric), sideLate(m.new, v.Metric)
	waitOld, waitNew := sideWait(m.old), sideWait(m.new)
	ratio := v.New / v.Old
	// Each side's machine may explain the change: the new side's by
	// moving its value toward the old's, the old side's by moving the old
	// value toward the new. Both are tried and the one that leaves the
	// smaller change is told: a new side probed a little later at its p99
	// must not hide an old side whose server waited 463 ms more (an
	// identical pair read "itl_p99_ms improved -31 %").
	moved, later := ratio, ""
	var why []string
	try := func(m float64, side string, w []string) {
		if m <= 0 || (ratio > 1) != (m > 1) {
			m = 1 // moved past the other side's value: the change is gone, not reversed
		}
		if math.Abs(math.Log(m)) < math.Abs(math.Log(moved)) {
			moved, later, why = m, side, w
		}
	}
	if b, w := sideBound(v.Metric, m.new[0].cell, lateNew, lateOld, waitNew, waitOld); !b.Zero() {
		if v.New > v.Old {
			try((v.New-b.Down)/v.Old, "new", w)
		} else {
			try((v.New+b.Up)/v.Old, "new", w)
		}
	}
	if b, w := sideBound(v.Metric, m.old[0].cell, lateOld, lateNew, waitOld, waitNew); !b.Zero() {
		old := v.Old + b.Up
		if v.Old > v.New {
			old = v.Old - b.Down
		}
		if old <= 0 {
			try(0, "old", w) // the old value could have been all the machine's
		} else {
			try(v.New/old, "old", w)
		}
	}
	if later == "" || ratio == 0 {
		return
	}
	shift := moved / ratio
	holds1 := v.Ratio && v.Low*shift <= 1 && 1 <= v.High*shift
	small := math.Abs(moved-1) < v.Margin
	if !holds1 && !small {
		return
	}
	was := v.Outcome
	v.Outcome = Inconclusive
	v.Late = max(lateNew-lateOld, lateOld-lateNew)
	v.Reason = strings.TrimPrefix(v.Reason+"; "+fmt.Sprintf("%s %+.1f%%, but during the %s side's cell %s: what that could account for leaves %+.1f%%, inside what counts",
		was, 100*v.Change, later, strings.Join(why, ", and "), 100*(moved-1)), "; ")
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
// interval until a tenfold slowdown reads as same. So does a value whose
// run's busy threads (the local server's, the client's) waited for a CPU
// longer than the history's usual by enough to bring it back
// (machine.StarvedBeyond; ReasonServerStarved): beside CPU-bound
// neighbours the probe, a sleeper, is woken promptly and sees little,
// while the server's threads wait their turn. At least minRuns values
// stay unmarked.
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
	usualWait := medianWait(rows, marks)
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
		switch {
		case lates[i] > usual && backWithin(x, med, tol, machine.Allowance(m.Name, rows[i], lates[i]-usual)):
			marks[i], why[i] = true, ReasonMachineLate
			left--
		case backWithin(x, med, tol, machine.StarvedBeyond(m.Name, rows[i], usualWait)):
			// The probe, a sleeper, saw little, but the run's busy
			// threads (a local server's, the client's) waited for a
			// CPU long enough to account for it.
			marks[i], why[i] = true, ReasonServerStarved
			left--
		}
	}
}

// backWithin says whether value x, whose true value may lie up to b
// toward the median med (below a value above it, above a value below
// it), could lie within the relative tolerance tol of med.
func backWithin(x, med, tol float64, b machine.Bound) bool {
	if b.Zero() {
		return false
	}
	if x < med {
		return x+b.Up >= med*(1-tol)
	}
	return x-b.Down <= med*(1+tol)
}

// medianWait is the median CPU wait (machine.StarvedWait) of the rows
// not marked: how long a history's runs usually waited.
func medianWait(rows []*results.Cell, marks []bool) float64 {
	var ws []float64
	for i, r := range rows {
		if !marks[i] {
			ws = append(ws, machine.StarvedWait(r))
		}
	}
	return median(ws)
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
