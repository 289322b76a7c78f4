package regress

import (
	"math"
	"slices"
)

// ChangePoint is where a series changed: Index is the first value of the
// new segment (a series' first value is never one). The means and
// standard deviations are of the segments on either side (between the
// neighbouring change points), P the two-sided p-value of Student's t
// comparing them, Magnitude max(|after/before − 1|, |before/after − 1|).
type ChangePoint struct {
	Index      int     `json:"index"`
	MeanBefore float64 `json:"mean_before"`
	MeanAfter  float64 `json:"mean_after"`
	SDBefore   float64 `json:"sd_before"`
	SDAfter    float64 `json:"sd_after"`
	P          float64 `json:"p"`
	Magnitude  float64 `json:"magnitude"`
}

// Change is the relative change across the point, after/before − 1.
func (c ChangePoint) Change() float64 {
	if c.MeanBefore == 0 {
		return math.NaN()
	}
	return c.MeanAfter/c.MeanBefore - 1
}

// ChangePointOptions tune ChangePoints; the zero value is Otava's
// defaults with a 5% magnitude.
type ChangePointOptions struct {
	// Window is the sliding window's length (default 50; step half of it).
	Window int
	// MaxP is the p-value a change point must be under (default 0.001).
	MaxP float64
	// MinMagnitude is the relative change a change point must exceed
	// (default 0.05; Otava's own default is 0, set a negative value for it).
	MinMagnitude float64
}

// ChangePoints finds where a series of values (one per run, oldest first)
// changed, as Apache Otava (formerly Hunter; Fleming et al., "Hunter:
// Using Change Point Detection to Hunt for Performance Regressions",
// ICPE 2023) does:
//
//  1. Split: over sliding windows of Window values (step Window/2), the
//     E-divisive means of Matteson and James finds, recursively, the split
//     τ (and end κ) maximizing the energy divergence Q̂ between
//     Z[s:τ] and Z[τ:κ]; a candidate is kept while Student's two-sample
//     t-test of the two segments it separates gives p ≤ 10·MaxP (a "weak"
//     change point; Otava's first pass).
//  2. Merge: over the whole series, the weakest change point (the largest
//     p, or, when every p is under MaxP, the smallest magnitude) is
//     removed while its p ≥ MaxP or its magnitude ≤ MinMagnitude, and the
//     stats of the rest are recomputed over the segments that remain.
//
// The t-test is Student's with pooled variance, from sample standard
// deviations (Otava passes numpy's population deviation where SciPy
// expects the sample one, which makes it slightly bolder on short
// segments).
func ChangePoints(series []float64, o ChangePointOptions) []ChangePoint {
	if o.Window <= 0 {
		o.Window = 50
	}
	o.Window = max(o.Window, 2)
	if o.MaxP <= 0 {
		o.MaxP = 0.001
	}
	switch {
	case o.MinMagnitude == 0:
		o.MinMagnitude = 0.05
	case o.MinMagnitude < 0:
		o.MinMagnitude = 0
	}
	first := o.MaxP * 10
	switch {
	case o.MaxP >= 0.5:
		first = o.MaxP
	case o.MaxP >= 0.05:
		first = o.MaxP * 2
	}
	weak := split(series, o.Window, first)
	return mergeCPs(weak, series, o.MaxP, o.MinMagnitude)
}

// split is Otava's split step: the union of the change points found in
// each sliding window, with stats over the whole series.
func split(series []float64, window int, maxP float64) []int {
	step := window / 2
	var idx []int
	for start := 0; start < len(series); {
		end := min(start+window, len(series))
		found := detect(series[start:end], maxP)
		last := 0
		for _, i := range found {
			if !slices.Contains(idx, start+i) {
				idx = append(idx, start+i)
			}
			last = start + i
		}
		start = max(last, start+step)
	}
	slices.Sort(idx)
	return idx
}

// detect is E-divisive within one window: the best candidate over every
// segment between the change points found so far, kept while significant.
func detect(w []float64, maxP float64) []int {
	ed := newEnergy(w)
	var cps []int
	for {
		bounds := segments(cps, len(w))
		best, bestQ := -1, math.Inf(-1)
		for i := 0; i+1 < len(bounds); i++ {
			s, e := bounds[i], bounds[i+1]
			if e-s < 2 {
				continue
			}
			if tau, q := ed.candidate(s, e); q > bestQ {
				best, bestQ = tau, q
			}
		}
		if best < 0 {
			return cps
		}
		// The segment the candidate splits.
		i, _ := slices.BinarySearch(bounds, best)
		left, right := w[bounds[i-1]:best], w[best:bounds[i]]
		if p, _, _, _, _ := tTest(left, right); p > maxP {
			return cps
		}
		cps = append(cps, best)
		slices.Sort(cps)
	}
}

// segments returns the boundaries 0, cps..., n.
func segments(cps []int, n int) []int {
	b := append([]int{0}, cps...)
	return append(b, n)
}

// energy evaluates the E-divisive divergence on a window, with a prefix
// sum of the distance matrix so that each Q̂(τ, κ) costs O(1).
type energy struct {
	n int
	p []float64 // (n+1)×(n+1) prefix sums of |x_i − x_j|
}

func newEnergy(x []float64) *energy {
	n := len(x)
	e := &energy{n: n, p: make([]float64, (n+1)*(n+1))}
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			e.p[(i+1)*(n+1)+j+1] = math.Abs(x[i]-x[j]) + e.p[i*(n+1)+j+1] + e.p[(i+1)*(n+1)+j] - e.p[i*(n+1)+j]
		}
	}
	return e
}

// rect is Σ |x_i − x_j| over i in [i0, i1), j in [j0, j1).
func (e *energy) rect(i0, i1, j0, j1 int) float64 {
	w := e.n + 1
	return e.p[i1*w+j1] - e.p[i0*w+j1] - e.p[i1*w+j0] + e.p[i0*w+j0]
}

// candidate maximizes Q̂ over s < τ < κ ≤ e, for X = x[s:τ], Y = x[τ:κ]:
//
//	Q̂ = 2/(n+m)·ΣΣ|X−Y| − 2m/((n+m)(n−1))·Σ_{i<k}|X_i−X_k| − 2n/((n+m)(m−1))·Σ_{j<k}|Y_j−Y_k|
//
// with n = |X|, m = |Y| (a within-term of a single value is 0).
func (e *energy) candidate(s, end int) (tau int, best float64) {
	best = math.Inf(-1)
	for t := s + 1; t < end; t++ {
		n := float64(t - s)
		within := e.rect(s, t, s, t) / 2
		for k := t + 1; k <= end; k++ {
			m := float64(k - t)
			q := 2 / (n + m) * e.rect(s, t, t, k)
			if n > 1 {
				q -= 2 * m / ((n + m) * (n - 1)) * within
			}
			if m > 1 {
				q -= 2 * n / ((n + m) * (m - 1)) * e.rect(t, k, t, k) / 2
			}
			if q > best {
				tau, best = t, q
			}
		}
	}
	return tau, best
}

// tTest is Student's two-sample t-test with pooled variance, two-sided.
func tTest(a, b []float64) (p, ma, mb, sa, sb float64) {
	ma, sa = meanSD(a)
	mb, sb = meanSD(b)
	df := float64(len(a) + len(b) - 2)
	if len(a) == 0 || len(b) == 0 || df <= 0 {
		return 1, ma, mb, sa, sb
	}
	pooled := ((float64(len(a))-1)*sa*sa + (float64(len(b))-1)*sb*sb) / df
	se := math.Sqrt(pooled * (1/float64(len(a)) + 1/float64(len(b))))
	switch {
	case se > 0:
		return 2 * tSurvival(math.Abs(mb-ma)/se, df), ma, mb, sa, sb
	case ma == mb:
		return 1, ma, mb, sa, sb
	}
	return 0, ma, mb, sa, sb
}

// mergeCPs is Otava's merge step over the weak change points idx.
func mergeCPs(idx []int, series []float64, maxP, minMag float64) []ChangePoint {
	stats := func(idx []int) []ChangePoint {
		bounds := segments(idx, len(series))
		out := make([]ChangePoint, len(idx))
		for i, at := range idx {
			left, right := series[bounds[i]:at], series[at:bounds[i+2]]
			p, ma, mb, sa, sb := tTest(left, right)
			out[i] = ChangePoint{Index: at, MeanBefore: ma, MeanAfter: mb, SDBefore: sa, SDAfter: sb, P: p, Magnitude: magnitude(ma, mb)}
		}
		return out
	}
	cps := stats(idx)
	for len(cps) > 0 {
		weakest := 0
		for i, c := range cps {
			if c.P > cps[weakest].P {
				weakest = i
			}
		}
		if cps[weakest].P < maxP {
			for i, c := range cps {
				if c.Magnitude < cps[weakest].Magnitude {
					weakest = i
				}
			}
			if cps[weakest].Magnitude > minMag {
				return cps
			}
		}
		idx = slices.Delete(idx, weakest, weakest+1)
		cps = stats(idx)
	}
	return nil
}

func magnitude(a, b float64) float64 {
	var f, r float64
	if a != 0 {
		f = math.Abs(b/a - 1)
	}
	if b != 0 {
		r = math.Abs(a/b - 1)
	}
	return math.Max(f, r)
}
