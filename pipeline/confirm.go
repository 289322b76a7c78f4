package pipeline

import (
	"github.com/benchrun/benchrun/internal/results"
)

// Confirm reports whether a measuring stage should measure the cell of
// row, which it has just emitted, once more before the run is judged: row
// is its cell's first measurement in this attempt, and either a latency
// check of it was inconclusive (it failed while the machine's own
// lateness during the cell could explain it), or the plan's baseline
// confirms (`baseline.confirm`, on by default) and it regressed against
// the cell's history. A stage that can re-measure a point (sweep) calls
// it after Emit, while its server is still up, and emits the second
// measurement with Measurement 2 and the same cell id: the second is the
// cell's current row, the one its checks and the regression check judge;
// both rows are kept, and a check that failed on the first without the
// machine to explain it still counts (supersede).
//
// Why judge the second alone rather than both: a disturbance that passes
// (a neighbour's job, a cache that was cold) makes one measurement slow;
// a regression makes both slow, and the second, taken minutes later on
// the same server, is the independent look. The verdict records both.
func (e *Env) Confirm(row results.Cell) bool {
	if e == nil || e.Runtime == nil {
		return false
	}
	if _, n, _ := e.Runtime.Shard(); n > 1 {
		// A shard's rows hold part of the load: the regression check
		// and its confirmation belong to the merged rows (benchrun
		// merge), and a re-measurement on one shard alone would leave
		// its peers waiting at the next cell.
		return false
	}
	return e.Runtime.Confirm(row)
}
