package measure

import "github.com/benchrun/benchrun/internal/results"

// familyCaps is how many values a cell's sample families hold (FillCell):
// its completed requests, their chunk gaps and their stamp delays.
func familyCaps(reqs []results.Request) (completed, gaps, delays int) {
	for i := range reqs {
		if _, ok := SampleOf(&reqs[i]); ok {
			completed++
			gaps += len(reqs[i].ChunkGapsMs)
			delays += len(reqs[i].StampDelaysMs)
		}
	}
	return completed, gaps, delays
}
