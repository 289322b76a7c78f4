package sweep

import (
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/pipeline"
)

// applyCost fills the cost columns when the target carries a price: a
// provision stage's cost_per_hour, passed on through the launch stage's
// Outputs.Values. The cell is charged for its own duration only.
func applyCost(row *results.Cell, target *pipeline.Outputs) {
	if target == nil || row.DurationS <= 0 {
		return
	}
	var perHour float64
	switch v := target.Values["cost_per_hour"].(type) {
	case float64:
		perHour = v
	case int:
		perHour = float64(v)
	case int64:
		perHour = float64(v)
	default:
		return
	}
	if perHour <= 0 {
		return
	}
	row.CostUSD = perHour * row.DurationS / 3600
	row.TokensPerDollar = row.OutputTokS * row.DurationS / row.CostUSD
}
