package measure

import "github.com/benchrun/benchrun/internal/results"

// completedCount is how many of a cell's requests completed: the size of
// each one-per-request sample family FillCell holds (the per-token ones,
// chunk gaps and stamp delays, are ranked, not held).
func completedCount(reqs results.Requests) int {
	n := 0
	for r := range reqs.All() {
		if _, ok := SampleOf(r); ok {
			n++
		}
	}
	return n
}
