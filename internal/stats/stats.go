// Package stats computes exact summary statistics over raw samples.
//
// Percentiles are exact (sort, then linear interpolation between the two
// nearest ranks, as numpy's default "linear" method), never estimated from
// histograms and never averaged across cells, iterations or shards.
package stats

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// Summary describes one sample set.
type Summary struct {
	N                        int
	Mean, Min, Max           float64
	P50, P90, P95, P99, P999 float64
}

// Summarize returns the summary of xs. It does not modify xs.
// An empty set gives a zero Summary (N == 0); callers decide how to show it.
func Summarize(xs []float64) Summary {
	return SummarizeInPlace(slices.Clone(xs))
}

// SummarizeInPlace is Summarize for a caller that owns xs: it sorts xs
// in place instead of a copy, so a cell's largest family (its chunk gaps,
// one per token) is held once at its end, not twice.
func SummarizeInPlace(s []float64) Summary {
	if len(s) == 0 {
		return Summary{}
	}
	slices.Sort(s)
	return Summary{
		N: len(s),
		// The exact sum: the same whatever the values' order, as Rank's is
		// (a long cell's chunk gaps are summed as they are read).
		Mean: ExactSum(s) / float64(len(s)),
		Min:  s[0],
		Max:  s[len(s)-1],
		P50:  SortedPercentile(s, 50),
		P90:  SortedPercentile(s, 90),
		P95:  SortedPercentile(s, 95),
		P99:  SortedPercentile(s, 99),
		P999: SortedPercentile(s, 99.9),
	}
}

// Percentile returns the p-th percentile (0..100) of xs without modifying it.
func Percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return SortedPercentile(s, p)
}

// SortedPercentile is Percentile for an already sorted slice.
func SortedPercentile(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	if p <= 0 {
		return sorted[0]
	}
	if p >= 100 {
		return sorted[n-1]
	}
	rank := p / 100 * float64(n-1)
	lo := int(math.Floor(rank))
	hi := lo + 1
	if hi >= n {
		return sorted[lo]
	}
	frac := rank - float64(lo)
	return sorted[lo] + frac*(sorted[hi]-sorted[lo])
}

// Mean returns the arithmetic mean, or 0 for an empty set.
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

// Interval is a sample's mean with its two-sided confidence interval (95%
// from MeanCI; Student t, n−1 degrees of freedom) and coefficient of variation.
type Interval struct {
	N            int
	Mean, Lo, Hi float64
	CV           float64 // sample standard deviation / mean; NaN when the mean is 0
	StdDev       float64
	HalfWidthPct float64 // (Hi−Lo)/2 as a percentage of the mean
}

// MeanCI is the mean of xs with its 95% interval; with fewer than two
// values the interval is NaN (one measurement has no spread to tell).
func MeanCI(xs []float64) Interval { return MeanCIAt(xs, 0.95) }

// MeanCIAt is MeanCI at the two-sided confidence conf (0..1).
func MeanCIAt(xs []float64, conf float64) Interval {
	iv := Interval{N: len(xs), Mean: Mean(xs), Lo: math.NaN(), Hi: math.NaN(), CV: math.NaN(), StdDev: math.NaN(), HalfWidthPct: math.NaN()}
	if len(xs) < 2 {
		return iv
	}
	ss := 0.0
	for _, x := range xs {
		ss += (x - iv.Mean) * (x - iv.Mean)
	}
	iv.StdDev = math.Sqrt(ss / float64(len(xs)-1))
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(len(xs) - 1)}.Quantile(1 - (1-conf)/2)
	h := t * iv.StdDev / math.Sqrt(float64(len(xs)))
	iv.Lo, iv.Hi = iv.Mean-h, iv.Mean+h
	if iv.Mean != 0 {
		iv.CV = iv.StdDev / math.Abs(iv.Mean)
		iv.HalfWidthPct = 100 * h / math.Abs(iv.Mean)
	}
	return iv
}

// Dist is the summary as a row's nullable mean, p50, p90, p95, p99 and
// max: all nil without samples (not measured, never 0).
func (s Summary) Dist() (mean, p50, p90, p95, p99, worst *float64) {
	if s.N == 0 {
		return
	}
	v := func(x float64) *float64 { return &x }
	return v(s.Mean), v(s.P50), v(s.P90), v(s.P95), v(s.P99), v(s.Max)
}
