package sweep

import (
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/pipeline"
)

// applyCost fills the cost columns when the target carries a price
// (Outputs.CostPerHour: a provision stage's cost_per_hour, passed on by
// the launch stage on it). The cell is charged for its own duration only.
// Without a price (or a window) both stay nil: not measured, never a free
// run.
func applyCost(row *results.Cell, target *pipeline.Outputs) {
	if target == nil || target.CostPerHour == nil || row.DurationS <= 0 {
		return
	}
	perHour := *target.CostPerHour
	if perHour <= 0 {
		return
	}
	cost := perHour * row.DurationS / 3600
	row.CostUSD = results.Some(cost)
	if row.OutputTokS != nil {
		row.TokensPerDollar = results.Some(*row.OutputTokS * row.DurationS / cost)
	}
}
