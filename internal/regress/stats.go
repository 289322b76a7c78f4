package regress

import (
	"cmp"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// TQuantile is the p quantile of Student's t with df degrees of freedom
// (TQuantile(0.975, 10) = 2.228); NaN for df <= 0.
func TQuantile(p, df float64) float64 {
	if !(df > 0) {
		return math.NaN()
	}
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(p)
}

// tSurvival is P(T > t) for Student's t with df degrees of freedom.
func tSurvival(t, df float64) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Survival(t)
}

// normSurvival is P(Z > z) for a standard normal Z.
func normSurvival(z float64) float64 { return 0.5 * math.Erfc(z/math.Sqrt2) }

// normQuantile is the p quantile of the standard normal.
func normQuantile(p float64) float64 { return distuv.UnitNormal.Quantile(p) }

// meanSD is the mean and the sample standard deviation (n−1) of xs; the
// deviation is 0 for fewer than two values.
func meanSD(xs []float64) (mean, sd float64) {
	if len(xs) == 0 {
		return math.NaN(), math.NaN()
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if len(xs) < 2 {
		return mean, 0
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / float64(len(xs)-1))
}

// predictionHalfWidth is how far a prediction interval's limit lies from
// the mean, for one new value drawn like n values of sample standard
// deviation sd, at one-sided probability p: t(p, n−1)·sd·sqrt(1 + 1/n).
// Bencher's t_test threshold is the mean plus this (25 values of mean
// 100, sd 10 at p = 0.977 give 121.46); the lower limit is the mirror.
func predictionHalfWidth(sd, n, p float64) float64 {
	return TQuantile(p, n-1) * sd * math.Sqrt(1+1/n)
}

// MannWhitney is the two-sided p-value of the Mann–Whitney U test
// (Wilcoxon rank-sum) of a against b, by the normal approximation with a
// tie correction and a continuity correction (SciPy's
// mannwhitneyu(method="asymptotic")); u is U of a. With fewer than one
// value a side, or every value tied, p is 1.
func MannWhitney(a, b []float64) (u, p float64) {
	n1, n2 := len(a), len(b)
	if n1 == 0 || n2 == 0 {
		return math.NaN(), 1
	}
	type obs struct {
		x     float64
		fromA bool
	}
	all := make([]obs, 0, n1+n2)
	for _, x := range a {
		all = append(all, obs{x, true})
	}
	for _, x := range b {
		all = append(all, obs{x, false})
	}
	slices.SortFunc(all, func(p, q obs) int { return cmp.Compare(p.x, q.x) })
	var rankA, ties float64
	for i := 0; i < len(all); {
		j := i + 1
		for j < len(all) && all[j].x == all[i].x {
			j++
		}
		rank := float64(i+j+1) / 2 // ranks i+1..j, averaged
		for k := i; k < j; k++ {
			if all[k].fromA {
				rankA += rank
			}
		}
		if t := float64(j - i); t > 1 {
			ties += t*t*t - t
		}
		i = j
	}
	f1, f2, n := float64(n1), float64(n2), float64(n1+n2)
	u = rankA - f1*(f1+1)/2
	mu := f1 * f2 / 2
	variance := f1 * f2 / 12 * ((n + 1) - ties/(n*(n-1)))
	if !(variance > 0) {
		return u, 1
	}
	d := math.Abs(u-mu) - 0.5
	if d < 0 {
		d = 0
	}
	return u, math.Min(1, 2*normSurvival(d/math.Sqrt(variance)))
}

// welch is Welch's two-sample t of b against a: the difference of
// means, its standard error and the Welch–Satterthwaite degrees of
// freedom. Both sides need two values.
func welch(a, b []float64) (diff, se, df float64) {
	ma, sa := meanSD(a)
	mb, sb := meanSD(b)
	va, vb := sa*sa/float64(len(a)), sb*sb/float64(len(b))
	se = math.Sqrt(va + vb)
	diff = mb - ma
	if se == 0 {
		return diff, 0, float64(len(a) + len(b) - 2)
	}
	df = (va + vb) * (va + vb) / (va*va/float64(len(a)-1) + vb*vb/float64(len(b)-1))
	return diff, se, df
}

// Correction is how the p-values of a family of comparisons (every cell
// × metric of a report) are adjusted before any is called significant.
type Correction string

const (
	// BenjaminiHochberg controls the false discovery rate: of the changes
	// flagged, at most α are expected false. It is the default. When
	// nothing changed (the usual nightly), every flag is false, and its
	// false discovery rate is then the chance of any false flag at all:
	// at α, the same guarantee as Holm's. When something did change (a
	// slower engine moves TTFT in every cell at once), it keeps the power
	// to flag all of them, where Holm, guarding against even one false
	// flag among hundreds of cells × metrics, demands p < α/m of the
	// first and loses the small regressions a release hides among large
	// ones. The metrics of one cell move together (positive dependence),
	// under which Benjamini–Hochberg's guarantee holds.
	BenjaminiHochberg Correction = "benjamini-hochberg"
	// Holm controls the family-wise error rate (Holm–Bonferroni): the
	// chance of even one false flag is at most α, whatever the dependence.
	Holm Correction = "holm"
	// NoCorrection judges each comparison on its own.
	NoCorrection Correction = "none"
)

// ParseCorrection reads "bh", "benjamini-hochberg", "holm" or "none".
func ParseCorrection(s string) (Correction, bool) {
	switch s {
	case "", "bh", "BH", "fdr", string(BenjaminiHochberg):
		return BenjaminiHochberg, true
	case "holm", "Holm", "holm-bonferroni":
		return Holm, true
	case "none", "off":
		return NoCorrection, true
	}
	return "", false
}

// Adjust returns the adjusted p-values of ps under c, in ps's order: a
// comparison is significant at level α when its adjusted p is ≤ α. NaN
// entries (no test) stay NaN and do not count in the family.
func Adjust(c Correction, ps []float64) []float64 {
	switch c {
	case Holm:
		return HolmAdjust(ps)
	case NoCorrection:
		return slices.Clone(ps)
	}
	return BHAdjust(ps)
}

// order returns the indices of the non-NaN entries of ps, smallest p first.
func order(ps []float64) []int {
	var idx []int
	for i, p := range ps {
		if !math.IsNaN(p) {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(ps[a], ps[b]) })
	return idx
}

// HolmAdjust is Holm's step-down adjustment: the i-th smallest of m
// p-values becomes max over j ≤ i of (m − j + 1)·p(j), capped at 1.
func HolmAdjust(ps []float64) []float64 {
	out := nanLike(ps)
	idx := order(ps)
	m := float64(len(idx))
	run := 0.0
	for i, k := range idx {
		run = math.Max(run, math.Min(1, (m-float64(i))*ps[k]))
		out[k] = run
	}
	return out
}

// BHAdjust is the Benjamini–Hochberg step-up adjustment: the i-th
// smallest of m p-values becomes min over j ≥ i of m·p(j)/j, capped at 1.
func BHAdjust(ps []float64) []float64 {
	out := nanLike(ps)
	idx := order(ps)
	m := float64(len(idx))
	run := 1.0
	for i := len(idx) - 1; i >= 0; i-- {
		k := idx[i]
		run = math.Min(run, m*ps[k]/float64(i+1))
		out[k] = run
	}
	return out
}

func nanLike(ps []float64) []float64 {
	out := make([]float64, len(ps))
	for i := range out {
		out[i] = math.NaN()
	}
	return out
}

// GeoMean is the geometric mean of the positive values of xs (benchstat's
// summary line: the geometric mean of ratios is the typical change); NaN
// when there are none.
func GeoMean(xs []float64) float64 {
	var sum float64
	n := 0
	for _, x := range xs {
		if x > 0 && !math.IsInf(x, 0) {
			sum += math.Log(x)
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return math.Exp(sum / float64(n))
}
