package results

import (
	"math"
	"testing"
)

// TestCharge: one definition of the cost columns for every kind: the
// row's window at the price, and the output tokens it got over that
// cost; NULL without a price, a window or output tokens.
func TestCharge(t *testing.T) {
	price := Some(3.6) // 0.001 USD a second
	for _, tc := range []struct {
		name      string
		row       Cell
		price     *float64
		tokens    float64
		cost, tpd *float64
	}{
		{"priced", Cell{DurationS: 10}, price, 1000, Some(0.01), Some(100000.0)},
		{"no output tokens", Cell{DurationS: 10}, price, 0, Some(0.01), nil},
		{"no price", Cell{DurationS: 10}, nil, 1000, nil, nil},
		{"free", Cell{DurationS: 10}, Some(0.0), 1000, nil, nil},
		{"no window", Cell{}, price, 1000, nil, nil},
	} {
		row := tc.row
		Charge(&row, tc.price, tc.tokens)
		same := func(a, b *float64) bool {
			return a == nil && b == nil || a != nil && b != nil && math.Abs(*a-*b) < 1e-9*math.Max(1, math.Abs(*b))
		}
		if !same(row.CostUSD, tc.cost) || !same(row.TokensPerDollar, tc.tpd) {
			t.Errorf("%s: cost %v tokens/$ %v, want %v and %v", tc.name, ValueOr(row.CostUSD, -1), ValueOr(row.TokensPerDollar, -1), ValueOr(tc.cost, -1), ValueOr(tc.tpd, -1))
		}
	}
	// The sweep's tokens: its output throughput over its window.
	if got := WindowTokens(&Cell{DurationS: 2, OutputTokS: Some(50.0)}); got != 100 {
		t.Errorf("window tokens %v, want 100", got)
	}
}
