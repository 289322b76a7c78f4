package measure

import "github.com/benchrun/benchrun/internal/results"

// familyCaps is how many values a cell's sample families hold (FillCell):
// its completed requests, their chunk gaps and their stamp delays.
func familyCaps(reqs results.Requests) (completed, gaps, delays int) {
	for r := range reqs.All() {
		if _, ok := SampleOf(r); ok {
			completed++
			gaps += len(r.ChunkGapsMs)
			delays += len(r.StampDelaysMs)
		}
	}
	return completed, gaps, delays
}
