package measure

import (
	"slices"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/stats"
)

// fillBounds sets the 95 % bounds of every percentile of sample that the
// catalogue bounds (results.BoundedColumns), from the sample's values
// sorted in place: two order statistics each, found with O(log n)
// binomial CDF evaluations (stats.SortedQuantileBound). A side the sample
// is too small to bound, and both sides of an empty sample, are NULL.
func fillBounds(row *results.Cell, sample string, xs []float64) {
	slices.Sort(xs)
	for _, c := range results.BoundedColumns() {
		if c.Sample != sample {
			continue
		}
		if len(xs) == 0 {
			results.SetBound(row, c, nil, nil)
			continue
		}
		b := stats.SortedQuantileBound(xs, c.Quantile*100, results.BoundConf)
		results.SetBound(row, c, results.Finite(b.Lo), results.Finite(b.Hi))
	}
}

// boundRanks are the ranks fillRankedBounds reads of sample's n values.
func boundRanks(sample string, n int) []int {
	var out []int
	for _, c := range results.BoundedColumns() {
		if c.Sample == sample {
			out = append(out, stats.BoundRanks(n, c.Quantile*100, results.BoundConf)...)
		}
	}
	return out
}

// fillRankedBounds is fillBounds for a sample Rank ranked (its
// boundRanks asked for): the same bounds, from the same order statistics.
func fillRankedBounds(row *results.Cell, sample string, r stats.Ranked) {
	for _, c := range results.BoundedColumns() {
		if c.Sample != sample {
			continue
		}
		if r.N == 0 {
			results.SetBound(row, c, nil, nil)
			continue
		}
		b := r.Bound(c.Quantile*100, results.BoundConf)
		results.SetBound(row, c, results.Finite(b.Lo), results.Finite(b.Hi))
	}
}
