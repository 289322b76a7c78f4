package regress

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/benchrun/benchrun/internal/stats"
)

// ReasonServerStarved is why a history value is left out when its own
// run's threads (the local server's, the client's) waited for a CPU long
// enough to account for how far it lies from the other runs.
const ReasonServerStarved = "starved of CPU in its run"

// A history is not blinded by a few of its own runs. Those whose run's
// machine explains their distance are left out before (markLateOutliers);
// of the rest, a value unlike the others is kept out of the interval
// (not out of the history: it is counted in N and said in the reason):
// one that lies more than oddCutoff (5) robust standard deviations from
// the values' median, on the scale the interval is learned on (ln x, or x
// when a value is ≤ 0), and beyond the metric's margin. The robust
// standard deviation is 1.4826 × the median absolute deviation (MAD),
// which a few wild values cannot inflate as they inflate the sample
// standard deviation: a lucky run at 250 tok/s beside 100 ± 1 made the
// classic interval [30, 450]. This is Hampel's outlier identifier; the
// interval itself stays the t prediction interval of the typical values
// (as efficient as before on a clean history). At least MinRuns values
// stay typical, or none is set apart.
//
// The values set apart still speak: a new value beyond the typical
// interval on the side where the history once read as far is `unknown`
// (the history has shown such nights without the machine to blame), and
// a change larger than any the history has shown (farther from the
// center than its farthest value by more than the margin) is never
// `same`: when the interval holds it because the history is too
// scattered to decide (the interval reaches farther than twice the
// margin on that side), it is `unknown` with the reason.
//
// Why 5 and not Hampel's usual 3: on a clean history of 20 runs the MAD of
// so few values is itself noisy, and at 3 a typical value was set apart
// often enough to cost TestHistoryFalseAlarms 4 to 8 points of its
// detection of a 10 % slowdown (a set-apart value on the change's side
// makes it unknown); at 5 the cost is under 1 point, and the runs this
// is for (a lucky 250 beside 100 ± 1, a busy night at 1.8×) lie dozens
// of robust standard deviations out.
const oddCutoff = 5

// madScale turns a median absolute deviation into a standard
// deviation's estimate for normal data (1/Φ⁻¹(3/4)).
const madScale = 1.4826

// oddValue is a history value kept out of the interval as unlike the
// others, with its run.
type oddValue struct {
	x   float64
	run string
}

// historySpread is what a verdict's history showed beyond its interval:
// the values set apart as unlike the others, and the reference value
// farthest from the center (all of them, those set apart included).
type historySpread struct {
	odd      []oddValue
	all      []float64
	runs     []string
	farthest int // index in all; -1 for none
}

// splitOdd sets apart the values of xs (runs: their runs) unlike the
// others, returning the typical ones and the spread to decide with.
func splitOdd(m Metric, xs []float64, runs []string, minRuns int) ([]float64, historySpread) {
	sp := historySpread{all: xs, runs: runs, farthest: -1}
	f := scaleOf(xs)
	ys := make([]float64, len(xs))
	for i, x := range xs {
		ys[i] = f(x)
	}
	medX := stats.Percentile(xs, 50)
	medY := stats.Percentile(ys, 50)
	dev := make([]float64, len(ys))
	for i, y := range ys {
		dev[i] = math.Abs(y - medY)
	}
	cut := oddCutoff * madScale * stats.Percentile(dev, 50)
	tol := margin(m, medX)
	var typical []float64
	var odd []oddValue
	for i, x := range xs {
		far := dev[i] > cut && medX != 0 && math.Abs(x/medX-1) > tol
		if far {
			odd = append(odd, oddValue{x, runs[i]})
			continue
		}
		typical = append(typical, x)
	}
	if len(typical) < minRuns || len(odd) == 0 {
		return xs, sp
	}
	sp.odd = odd
	return typical, sp
}

// scaleOf is the scale the interval of xs is learned on: ln x when every
// value is positive, else x.
func scaleOf(xs []float64) func(float64) float64 {
	for _, x := range xs {
		if !(x > 0) {
			return func(x float64) float64 { return x }
		}
	}
	return math.Log
}

// decideSpread revisits v's outcome with what its history showed beyond
// the interval: a change outside the typical runs' interval toward a
// side where a value set apart lies is unknown (the history read that
// far once on a quiet machine), and a `same` whose change exceeds the
// margin and every change the history has shown is unknown (the
// history is too noisy to decide). It also says which values the
// interval left out.
func decideSpread(v *Verdict, sp historySpread) {
	if math.IsNaN(v.Old) || math.IsNaN(v.New) || len(sp.all) == 0 {
		return
	}
	up := v.New > v.Old
	var sameSide []string
	for _, o := range sp.odd {
		if (o.x > v.Old) == up {
			sameSide = append(sameSide, fmt.Sprintf("%.4g (run %s)", o.x, o.run))
		}
	}
	switch {
	case (v.Outcome == Regressed || v.Outcome == Improved) && len(sameSide) > 0:
		was := v.Outcome
		v.Outcome = Unknown
		addReason(v, fmt.Sprintf("%s %+.1f%% against its %d typical runs, but its history read %s on a machine that explains nothing: too noisy to decide",
			was, 100*v.Change, v.N-len(sp.odd), strings.Join(sameSide, ", ")))
	case v.Outcome == Same && math.Abs(v.Change) >= v.Margin && tooNoisy(v, up):
		// Larger by more than the margin, the smallest change that
		// counts: of n history runs the newest alike is the farthest
		// one time in n + 1, and a tie-break is no news.
		if i := farthestOf(v, sp); i >= 0 && deviation(v, v.New, sp.all) > deviation(v, sp.all[i], sp.all)+math.Log1p(v.Margin) {
			v.Outcome = Unknown
			addReason(v, fmt.Sprintf("%+.1f%% is a change larger than any its history has shown (the farthest, %.4g at run %s, %+.1f%%), but the history is too noisy to decide: its interval [%.4g, %.4g]",
				100*v.Change, sp.all[i], sp.runs[i], 100*(sp.all[i]/v.Old-1), v.Low, v.High))
		}
	}
	if len(sp.odd) > 0 {
		var parts []string
		for _, o := range sp.odd {
			parts = append(parts, fmt.Sprintf("%.4g (run %s)", o.x, o.run))
		}
		addReason(v, fmt.Sprintf("the interval is its %d typical runs'; set apart as unlike them: %s", v.N-len(sp.odd), strings.Join(parts, ", ")))
	}
}

// tooNoisy says whether v's interval reaches, on the side of its change
// (up: above the center), farther than twice the margin from the center:
// the history's own spread, not the margin, is what holds the new value
// in. A narrower interval decides by itself: a value inside it, or
// outside it but not after the family's correction, is the same.
func tooNoisy(v *Verdict, up bool) bool {
	if v.Old == 0 {
		return false
	}
	if up {
		return v.High/v.Old-1 > 2*v.Margin
	}
	return 1-v.Low/v.Old > 2*v.Margin
}

// farthestOf is the index of the history value farthest from v's
// center; -1 for none.
func farthestOf(v *Verdict, sp historySpread) int {
	best, at := -1.0, -1
	for i, x := range sp.all {
		if d := deviation(v, x, sp.all); d > best {
			best, at = d, i
		}
	}
	return at
}

// deviation is how far x lies from v's center on the scale the interval
// was learned on (the history xs and the new value: ln when all are
// positive).
func deviation(v *Verdict, x float64, xs []float64) float64 {
	f := scaleOf(append(slices.Clone(xs), v.New))
	return math.Abs(f(x) - f(v.Old))
}

// addReason appends part to v's reason.
func addReason(v *Verdict, part string) {
	v.Reason = strings.TrimPrefix(v.Reason+"; "+part, "; ")
}
