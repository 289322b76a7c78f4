package sweep

import (
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/pipeline"
)

// applyCost fills the cost columns when the target carries a price
// (Outputs.CostPerHour: a provision stage's cost_per_hour, passed on by
// the launch stage on it), as results.Charge defines them.
func applyCost(row *results.Cell, target *pipeline.Outputs) {
	if target == nil {
		return
	}
	results.Charge(row, target.CostPerHour, results.WindowTokens(row))
}
