package sweep

import (
	"slices"

	"github.com/benchrun/benchrun/internal/results"
)

// arrivals are a timed pass's request rows as they finish, each with its
// request's index in the pass, which inSendOrder puts into send order in
// place. A sorted copy held every row twice at the pass's end, the peak
// of a cell's memory (docs/METRICS.md, "Memory per finished request");
// the results themselves are folded in as they finish (tally.go) and not
// kept.
type arrivals struct {
	idx  []int
	rows []results.Request
}

// newArrivals makes room for n rows (the pass's expected count, bounded
// by the caller).
func newArrivals(n int) *arrivals {
	return &arrivals{idx: make([]int, 0, n), rows: make([]results.Request, 0, n)}
}

// add keeps request i's row.
func (a *arrivals) add(i int, row results.Request) {
	a.idx, a.rows = append(a.idx, i), append(a.rows, row)
}

// inSendOrder is the rows in send order (request rows are in send order:
// their seq is the request's index, docs/RESULTS.md), moved in place:
// each cycle of the permutation once, every row moved at most once.
func (a *arrivals) inSendOrder() []results.Request {
	order := make([]int32, len(a.idx)) // order[k]: where the k-th sent one is now
	for k := range order {
		order[k] = int32(k)
	}
	slices.SortFunc(order, func(x, y int32) int { return a.idx[x] - a.idx[y] })
	for k := range order {
		if order[k] < 0 || int(order[k]) == k {
			continue
		}
		row := a.rows[k]
		for j := k; ; {
			src := int(order[j])
			order[j] = -1
			if src == k {
				a.rows[j] = row
				break
			}
			a.rows[j] = a.rows[src]
			j = src
		}
	}
	a.idx = nil
	return a.rows
}
