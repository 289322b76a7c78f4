package regress

// minLevelRuns is the fewest runs a new level needs after a change point
// before later runs are judged against it: fewer, and one bad night
// would read as a new normal. It needs half the history's window too
// (levelRuns), so that the history holds as much of the new normal as of
// the old before it is the baseline.
const minLevelRuns = 3

// levelRuns is how many runs a new level needs with a history window of
// lastN runs: half the window (10 by default), at least minLevelRuns.
func levelRuns(lastN int) int { return max(minLevelRuns, lastN/2) }

// ReasonRegressed is why a history value is left out of the interval a
// run is judged against: its own run's check called it regressed, and no
// change of level has begun since. The interval would otherwise absorb
// the regression it flagged.
const ReasonRegressed = "regressed in its run"

// ReasonInconclusive is why a history value is left out when its own
// run's check was inconclusive: it left the interval by what the
// machine's lateness then could account for, so it is no measure of the
// server's usual pace, and taking it in would widen the interval by the
// machine's noise.
const ReasonInconclusive = "inconclusive in its run"

// reference is which of a cell's history values (oldest first) the
// interval is learned from, and the change of level it begins with (nil:
// none):
//
//   - after the history's last change point (ChangePoints), when at least
//     need values follow it (levelRuns): a lasting shift is the new level, and
//     a run is judged against that, regressed values included (they are
//     that level) — reported as a change of level at the run where it
//     began, not as a failure forever;
//   - otherwise every value but those their own run called regressed:
//     the nights a server regressed stay in the history (and in
//     `benchrun history`), but an interval that took them in would widen
//     and silently absorb the very regression it flagged.
//
// A change point with fewer values after it is pending: its index and
// change come back in pending (Index -1: none), so that the verdict can
// say when it will become the baseline. The change point's Run is filled
// in by the caller.
func reference(xs []float64, marks []bool, minRuns, need int) ([]int, *LevelChange, ChangePoint) {
	pending := ChangePoint{Index: -1}
	if len(xs) >= minRuns+minLevelRuns {
		if cps := ChangePoints(xs, ChangePointOptions{}); len(cps) > 0 {
			last := cps[len(cps)-1]
			if len(xs)-last.Index >= need {
				idx := make([]int, 0, len(xs)-last.Index)
				for i := last.Index; i < len(xs); i++ {
					idx = append(idx, i)
				}
				return idx, &LevelChange{Change: last.Change()}, pending
			}
			pending = last
		}
	}
	idx := make([]int, 0, len(xs))
	for i := range xs {
		if !marks[i] {
			idx = append(idx, i)
		}
	}
	return idx, nil, pending
}
