package regress

import (
	"fmt"
	"math"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/stats"
)

// A percentile of a few requests is no measure of a tail: the p99 of 8 is
// their largest, and a bootstrap of it resamples those 8. One run against
// one decides a percentile only when each side's sample can bound it
// (stats.SamplesToBound: 368 for a p99 at 95 %), and a tail (p90 and up)
// only when the two sides' distribution-free 95 % bounds do not overlap
// (docs/METRICS.md, Confidence bounds of a percentile).

// tailFrom is where a tail's bounds must not overlap for a change in it to
// count.
const tailFrom = 0.9

// boundTail makes a percentile verdict unknown when a side's sample is
// too small to bound it, with the requests a side that would, and keeps
// each side's bounds of a tail for decideRatio.
func boundTail(v *Verdict, m Metric, old, new *side) {
	if m.Quantile <= 0 || m.Quantile >= 1 {
		return
	}
	p := m.Quantile * 100
	need := stats.SamplesToBound(p, results.BoundConf)
	if min(old.nVals, new.nVals) < need {
		perReq := 1.0
		if old.nReq > 0 && new.nReq > 0 {
			perReq = math.Min(float64(old.nVals)/float64(old.nReq), float64(new.nVals)/float64(new.nReq))
		}
		reqs := int(math.Ceil(float64(need) / math.Max(perReq, 1e-9)))
		v.Outcome = Unknown
		v.MoreRequests = max(reqs-min(old.nReq, new.nReq), 1)
		v.Reason = fmt.Sprintf("too few samples: a p%g needs %d a side to be bounded at 95 %% (%d old, %d new, from %d and %d requests): about %d requests a side would bound it, %d more",
			p, need, old.nVals, new.nVals, old.nReq, new.nReq, reqs, v.MoreRequests)
		return
	}
	if m.Quantile >= tailFrom {
		v.tail = &[2]stats.QuantileBound{old.tails[m.Quantile], new.tails[m.Quantile]}
	}
}

// tailOverlap says why a tail's change does not count: the two sides'
// 95 % bounds overlap, so each side's sampling alone could make it; ""
// when they do not, or the verdict is not a tail's.
func (v *Verdict) tailOverlap() string {
	if v.tail == nil {
		return ""
	}
	o, n := v.tail[0], v.tail[1]
	if n.Lo > o.Hi || n.Hi < o.Lo {
		return ""
	}
	return fmt.Sprintf("the p%g's 95 %% bounds overlap ([%.4g, %.4g] old from %d samples, [%.4g, %.4g] new from %d): each side's own sampling could make the change",
		o.P, o.Lo, o.Hi, o.N, n.Lo, n.Hi, n.N)
}

// moreHint says how much more would likely decide an undecided ratio,
// from its interval: an interval's half-width h (on the log scale) goes
// as 1/√n, so about n·(h/target)² a side decide it, where the target is
// the change itself (for the interval to exclude 1, at the family's
// corrected level) or its distance to the margin (for the interval to
// fit within ± the margin). It sets MoreRequests (request-level) or
// MoreRuns. "" when the interval already is that narrow.
func moreHint(v *Verdict, alpha float64, family int) string {
	n := min(v.N, v.NNew)
	if v.MoreRequests > 0 || n <= 0 || !(v.Low > 0) || !(v.High > 0) || math.IsNaN(v.Change) {
		return ""
	}
	unit := "requests"
	if v.Method != MethodBootstrap {
		unit = "runs"
	}
	lo, hi := math.Log(v.Low), math.Log(v.High)
	h, c := (hi-lo)/2, math.Log1p(v.Change)
	lm := math.Log1p(v.Margin)
	if v.Change < 0 && v.Margin < 1 {
		lm = -math.Log1p(-v.Margin)
	}
	// The family's correction asks a narrower interval: Bonferroni's
	// level, a bound on Holm's and Benjamini–Hochberg's.
	h *= normQuantile(1-alpha/(2*float64(max(family, 1)))) / normQuantile(1-alpha/2)
	var target float64
	switch {
	case math.Abs(math.Abs(c)-lm) < 0.1*lm:
		return fmt.Sprintf("the change (%+.2f%%) sits at the ±%.1f%% that counts: no reasonable number of %s decides it", 100*v.Change, 100*v.Margin, unit)
	case math.Abs(c) > lm:
		target = math.Abs(c)
	default:
		target = lm - math.Abs(c)
	}
	factor := (h / target) * (h / target)
	if factor <= 1 {
		return ""
	}
	more := int(math.Ceil((factor - 1) * float64(n)))
	if factor > 100 {
		return fmt.Sprintf("deciding it would take over 100× the %s a side (%d now): the spread is large against the change", unit, n)
	}
	if unit == "requests" {
		v.MoreRequests = more
	} else {
		v.MoreRuns = more
	}
	return fmt.Sprintf("about %d more %s a side would likely decide it (%d a side in all)", more, unit, n+more)
}
