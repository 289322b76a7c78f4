package sweep

import (
	"fmt"
	"math"
	"testing"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/pipeline"
)

func TestApplyCost(t *testing.T) {
	tests := []struct {
		name      string
		price     *float64 // Outputs.CostPerHour
		values    map[string]any
		duration  float64
		outTokS   float64
		cost, tpd *float64 // nil: not measured (no price, no window)
	}{
		{"priced", results.Some(3.6), nil, 10, 100, results.Some(0.01), results.Some(100000.0)},
		{"another price", results.Some(36.0), nil, 1, 50, results.Some(0.01), results.Some(5000.0)},
		{"no price", nil, nil, 10, 100, nil, nil},
		{"free machine", results.Some(0.0), nil, 10, 100, nil, nil},
		{"no duration", results.Some(3.6), nil, 0, 0, nil, nil},
		// The price is a typed fact of the target's Outputs: a key of the
		// free Values (for `when` expressions) is not read as one.
		{"a price in Values only", nil, map[string]any{"cost_per_hour": 3.6}, 10, 100, nil, nil},
	}
	same := func(got, want *float64, tol float64) bool {
		if got == nil || want == nil {
			return got == want
		}
		return math.Abs(*got-*want) <= tol
	}
	show := func(p *float64) string {
		if p == nil {
			return "null"
		}
		return fmt.Sprint(*p)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			row := results.Cell{DurationS: tt.duration, OutputTokS: results.Some(tt.outTokS)}
			applyCost(&row, &pipeline.Outputs{CostPerHour: tt.price, Values: tt.values})
			if !same(row.CostUSD, tt.cost, 1e-12) || !same(row.TokensPerDollar, tt.tpd, 1e-6) {
				t.Fatalf("cost_usd %s tokens_per_dollar %s, want %s and %s", show(row.CostUSD), show(row.TokensPerDollar), show(tt.cost), show(tt.tpd))
			}
		})
	}
}
