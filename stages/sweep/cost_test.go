package sweep

import (
	"math"
	"testing"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/pipeline"
)

func TestApplyCost(t *testing.T) {
	tests := []struct {
		name      string
		values    map[string]any
		duration  float64
		outTokS   float64
		cost, tpd float64
	}{
		{"priced", map[string]any{"cost_per_hour": 3.6}, 10, 100, 0.01, 100000},
		{"integer price", map[string]any{"cost_per_hour": int64(36)}, 1, 50, 0.01, 5000},
		{"no price", map[string]any{}, 10, 100, 0, 0},
		{"free machine", map[string]any{"cost_per_hour": 0.0}, 10, 100, 0, 0},
		{"no duration", map[string]any{"cost_per_hour": 3.6}, 0, 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			row := results.Cell{DurationS: tt.duration, OutputTokS: tt.outTokS}
			applyCost(&row, &pipeline.Outputs{Values: tt.values})
			if math.Abs(row.CostUSD-tt.cost) > 1e-12 || math.Abs(row.TokensPerDollar-tt.tpd) > 1e-6 {
				t.Fatalf("cost_usd %g tokens_per_dollar %g, want %g and %g", row.CostUSD, row.TokensPerDollar, tt.cost, tt.tpd)
			}
		})
	}
}
