package regress

import "slices"

// Metrics returns every metric a check can read (a copy: change
// thresholds and floors freely): the doc test holds each to
// docs/RESULTS.md.
func Metrics() []Metric { return slices.Clone(table()) }

// PredictionLimit is the one-sided upper limit of a prediction interval
// for one new value drawn like n values of mean and sample standard
// deviation sd: mean + t(p, n−1)·sd·sqrt(1 + 1/n), the form in which
// Bencher documents its t_test threshold, with the half-width history's
// interval uses.
func PredictionLimit(mean, sd float64, n int, p float64) float64 {
	return mean + predictionHalfWidth(sd, float64(n), p)
}
