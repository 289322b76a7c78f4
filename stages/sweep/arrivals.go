package sweep

import (
	"slices"

	"github.com/benchrun/benchrun/internal/loadgen"
	"github.com/benchrun/benchrun/internal/results"
)

// arrivals are a pass's results as they finish: each request's index in
// the pass, its result (Lean) and, in a timed pass, its row, in parallel
// slices that inSendOrder puts into send order in place. A sorted copy
// held every result and row twice at the pass's end, the peak of a cell's
// memory (docs/METRICS.md, "Memory per finished request").
type arrivals struct {
	idx  []int
	rs   []loadgen.Result
	rows []results.Request // nil unless the pass is timed
}

// newArrivals makes room for n results (the pass's expected count,
// bounded by the caller), with rows when the pass is timed.
func newArrivals(n int, timed bool) *arrivals {
	a := &arrivals{idx: make([]int, 0, n), rs: make([]loadgen.Result, 0, n)}
	if timed {
		a.rows = make([]results.Request, 0, n)
	}
	return a
}

// add keeps request i's result and row (the row is dropped in a pass
// without rows).
func (a *arrivals) add(i int, r loadgen.Result, row results.Request) {
	a.idx, a.rs = append(a.idx, i), append(a.rs, r)
	if a.rows != nil {
		a.rows = append(a.rows, row)
	}
}

// inSendOrder is the results and rows in send order (request rows are in
// send order: their seq is the request's index, docs/RESULTS.md), moved
// in place: each cycle of the permutation once, every result and row
// moved at most once.
func (a *arrivals) inSendOrder() ([]loadgen.Result, []results.Request) {
	order := make([]int32, len(a.idx)) // order[k]: where the k-th sent one is now
	for k := range order {
		order[k] = int32(k)
	}
	slices.SortFunc(order, func(x, y int32) int { return a.idx[x] - a.idx[y] })
	for k := range order {
		if order[k] < 0 || int(order[k]) == k {
			continue
		}
		r := a.rs[k]
		var row results.Request
		if a.rows != nil {
			row = a.rows[k]
		}
		for j := k; ; {
			src := int(order[j])
			order[j] = -1
			if src == k {
				a.rs[j] = r
				if a.rows != nil {
					a.rows[j] = row
				}
				break
			}
			a.rs[j] = a.rs[src]
			if a.rows != nil {
				a.rows[j] = a.rows[src]
			}
			j = src
		}
	}
	return a.rs, a.rows
}
